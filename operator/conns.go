package operator

import (
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"
)

// Connections of the operator's listener: every request has time limits,
// idle connections are closed, and the number of open connections is capped
// below the process's open-file limit, so that idle or slow clients can
// neither hold connections forever nor use up the file descriptors that
// /healthz, /readyz, the database and Redis need.

// Limits are the time limits and the connection cap of the listener. The
// zero value of each field means its default.
type Limits struct {
	// MaxConns caps the open connections (default DefaultMaxConns, 256),
	// and is lowered to the open-file limit minus FDReserve. At the cap, a
	// new connection closes the longest idle one (one that sent no request
	// yet, or waits between requests), so that a health probe is served
	// whatever idle clients hold; when none is idle, the new one is closed.
	MaxConns int
	// ReadHeaderTimeout bounds reading a request's header (default 5s),
	// ReadTimeout the whole request, body included (default 30s; a slow
	// POST body is cut then), WriteTimeout the answer (default 60s) and
	// IdleTimeout a keep-alive connection between requests (default 30s).
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
}

// DefaultMaxConns is Limits.MaxConns' default: the open connections of the
// operator listener (http_max_connections).
const DefaultMaxConns = 256

// FDReserve is the file descriptors that MaxConns leaves to the database
// and Redis pools and the process's own files.
const FDReserve = 64

// WithDefaults fills in the defaults and fits MaxConns to the process's
// open-file limit.
func (l Limits) WithDefaults() Limits {
	or := func(d *time.Duration, def time.Duration) {
		if *d <= 0 {
			*d = def
		}
	}
	or(&l.ReadHeaderTimeout, 5*time.Second)
	or(&l.ReadTimeout, 30*time.Second)
	or(&l.WriteTimeout, 60*time.Second)
	or(&l.IdleTimeout, 30*time.Second)
	if l.MaxConns <= 0 {
		l.MaxConns = DefaultMaxConns
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Cur < uint64(l.MaxConns+FDReserve) {
		l.MaxConns = max(8, int(lim.Cur)-FDReserve)
	}
	return l
}

// NewHTTPServer returns the server of h with the time limits of l, and ln
// wrapped to hold the connection cap; serve with srv.Serve(capped).
func NewHTTPServer(h http.Handler, ln net.Listener, l Limits) (srv *http.Server, capped net.Listener) {
	l = l.WithDefaults()
	c := &capListener{Listener: ln, max: l.MaxConns, conns: map[net.Conn]*connState{}}
	srv = &http.Server{Handler: h, ReadHeaderTimeout: l.ReadHeaderTimeout, ReadTimeout: l.ReadTimeout,
		WriteTimeout: l.WriteTimeout, IdleTimeout: l.IdleTimeout, ConnState: c.track}
	return srv, c
}

// capListener holds at most max open connections; see Limits.MaxConns.
type capListener struct {
	net.Listener
	max int

	mu    sync.Mutex
	conns map[net.Conn]*connState
}

type connState struct {
	busy  bool      // a request is being read or answered
	since time.Time // when it became idle
}

// Accept accepts a connection, first closing the longest idle one when the
// cap is reached (or the new one, when none is idle).
func (l *capListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		var victim net.Conn
		if len(l.conns) >= l.max {
			victim = l.longestIdle()
			if victim != nil {
				delete(l.conns, victim)
			}
		}
		full := len(l.conns) >= l.max
		if !full {
			l.conns[c] = &connState{since: time.Now()}
		}
		l.mu.Unlock()
		if victim != nil {
			_ = victim.Close()
		}
		if full {
			_ = c.Close()
			continue
		}
		return c, nil
	}
}

// longestIdle returns the connection idle for the longest time, or nil.
// l.mu is held.
func (l *capListener) longestIdle() net.Conn {
	var out net.Conn
	var since time.Time
	for c, st := range l.conns {
		if !st.busy && (out == nil || st.since.Before(since)) {
			out, since = c, st.since
		}
	}
	return out
}

// track follows the server's view of each connection (http.Server's
// ConnState hook).
func (l *capListener) track(c net.Conn, s http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	st, ok := l.conns[c]
	switch {
	case s == http.StateClosed || s == http.StateHijacked:
		delete(l.conns, c)
	case !ok:
		// closed by Accept as the longest idle: no longer counted
	case s == http.StateActive:
		st.busy = true
	case s == http.StateIdle:
		st.busy, st.since = false, time.Now()
	}
}
