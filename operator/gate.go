package operator

import (
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// What every request passes before its route: the Host check on a loopback
// listener, the token of a read when reads need one, and each route's time
// bound.

// publicPaths need no token: probes carry none, and the static assets are
// the same for everyone.
func publicPath(path string) bool {
	return path == "/healthz" || path == "/readyz" || strings.HasPrefix(path, "/static/")
}

// readGate asks a token of every read (any method but POST, which the act
// routes check) when Options.ReadNeedsToken. A missing or wrong token gets
// 401 with a Basic challenge, so that a browser asks for it (the token is
// the password; the user name is not used).
func (s *Server) readGate(next http.Handler) http.Handler {
	if !s.o.ReadNeedsToken {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost || publicPath(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		if _, status, msg := s.auth.check(r, RoleRead); status != 0 {
			s.refuse(w, r, status, msg)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// refuse answers a failed authentication: JSON under /api/, plain text
// elsewhere; a Basic challenge with a 401 of a read; Retry-After with a 429.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, status int, msg string) {
	switch status {
	case http.StatusUnauthorized:
		if r.Method != http.MethodPost {
			w.Header().Set("WWW-Authenticate", `Basic realm="refresher (enter an API token as the password)", charset="UTF-8"`)
		}
	case http.StatusTooManyRequests:
		w.Header().Set("Retry-After", strconv.Itoa(s.auth.retryAfter()))
	}
	if strings.HasPrefix(r.URL.Path, "/api/") {
		writeError(w, status, msg)
		return
	}
	http.Error(w, msg, status)
}

// hostCheck refuses, on a loopback listener (Options.Loopback), a request
// whose Host is not a loopback name or address: a browser sends the page's
// own name there, so a page whose name was rebound to 127.0.0.1 is refused.
func (s *Server) hostCheck(next http.Handler) http.Handler {
	if !s.o.Loopback {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackHost(r.Host) {
			http.Error(w, "misdirected request: this server listens on loopback only and answers only to a loopback Host "+
				"(localhost, 127.0.0.1 or [::1], with any port); Host "+strconv.Quote(r.Host)+" is not one. "+
				"To reach it under another name, listen on that address (http:) with api_tokens", http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// loopbackHost reports whether host (a Host header, with or without a
// port) names this machine's loopback: localhost, 127.0.0.0/8 or ::1. An
// empty Host (HTTP/1.0) is allowed: a browser always sends one.
func loopbackHost(host string) bool {
	if host == "" {
		return true
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// bounded answers 503 with body (of type contentType) when h takes longer
// than d, and cancels h's context then, so that its queries stop: a page
// whose database freezes answers within d.
func bounded(h http.Handler, d time.Duration, contentType, body string) http.Handler {
	th := http.TimeoutHandler(h, d, body)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType) // the handler's own replaces it
		th.ServeHTTP(w, r)
	})
}

// boundReads bounds every read but the probes, /metrics and the assets to
// Options.PageTimeout (see bounded). Actions are not cut short: an action
// stopped half-way would leave the operator guessing.
func (s *Server) boundReads(mux http.Handler) http.Handler {
	secs := strconv.Itoa(int(s.o.PageTimeout.Seconds() + 0.5))
	api := bounded(mux, s.o.PageTimeout, "application/json; charset=utf-8",
		`{"error": "no answer within `+secs+`s: the database or Redis is slow or does not answer; /readyz says which, the service log has the detail"}`+"\n")
	page := bounded(mux, s.o.PageTimeout, "text/html; charset=utf-8", `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>No answer in time · refresher</title></head>
<body><h1>No answer in time</h1>
<p>This page could not be read within `+secs+` s: the database or Redis is slow or does not answer.
<a href="/readyz">/readyz</a> says which; the service log has the detail. Try again in a moment.</p>
<p><a href="/">Overview</a></p></body></html>
`)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost || publicPath(r.URL.Path) || r.URL.Path == "/metrics":
			mux.ServeHTTP(w, r)
		case strings.HasPrefix(r.URL.Path, "/api/"):
			api.ServeHTTP(w, r)
		default:
			page.ServeHTTP(w, r)
		}
	})
}
