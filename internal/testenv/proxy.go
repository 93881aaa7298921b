package testenv

import (
	"bytes"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Proxy is a TCP proxy on 127.0.0.1 in front of a real server. Cut makes the
// server look down (open connections are closed, new ones are refused at
// once) and Freeze makes it hang (connections stay open, nothing passes)
// without touching the server that other tests share; Restore brings it
// back. In front of Redis, LoseReply loses the reply of one command that
// Redis ran.
type Proxy struct {
	Addr   string
	target string
	ln     net.Listener

	mu     sync.Mutex
	thawed *sync.Cond // signalled by Restore
	down   bool
	frozen bool
	conns  map[net.Conn]struct{}
	resp   bool    // the clients speak RESP (RedisProxy): their commands are parsed for LoseReply
	losses []*loss // armed by LoseReply, each taken by the first command it matches
}

// loss is one reply LoseReply is to lose.
type loss struct {
	match func(args []string) bool
	done  chan struct{}
}

// NewProxy starts a proxy to target ("host:port") and closes it when the
// test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	return newProxy(t, target, false)
}

// newProxy is NewProxy; resp says the clients speak RESP.
func newProxy(t testing.TB, target string, resp bool) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen for proxy: %v", err)
	}
	p := &Proxy{Addr: ln.Addr().String(), target: target, ln: ln, conns: map[net.Conn]struct{}{}, resp: resp}
	p.thawed = sync.NewCond(&p.mu)
	go p.serve()
	t.Cleanup(func() { _ = ln.Close(); p.Cut() })
	return p
}

// RedisProxy starts a proxy in front of the test Redis (see RedisURL) and
// returns it with the Redis URL through it.
func RedisProxy(t testing.TB) (*Proxy, string) {
	t.Helper()
	u, err := url.Parse(RedisURL())
	if err != nil {
		t.Fatalf("parse REFRESHER_TEST_REDIS: %v", err)
	}
	p := newProxy(t, u.Host, true)
	u.Host = p.Addr
	return p, u.String()
}

// LoseReply arms the proxy to lose the reply of the next command match
// accepts (its arguments, the command's name in lower case): the command
// reaches Redis, which runs it, but its reply, and every byte after it on
// that connection, is dropped, and the connection is closed once the reply
// came. The client sees the connection break after Redis ran the command,
// as after a network failure, and go-redis sends the command again on a
// new connection (MaxRetries). A pipeline that holds the command loses all
// its replies. Each call arms one loss, beside those armed before. The
// channel is closed once a command matched. Only a proxy from RedisProxy
// reads its clients' commands.
func (p *Proxy) LoseReply(match func(args []string) bool) <-chan struct{} {
	if !p.resp {
		panic("testenv: LoseReply needs a proxy in front of Redis (RedisProxy)")
	}
	l := &loss{match: match, done: make(chan struct{})}
	p.mu.Lock()
	p.losses = append(p.losses, l)
	p.mu.Unlock()
	return l.done
}

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.down {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		p.conns[c], p.conns[up] = struct{}{}, struct{}{}
		p.mu.Unlock()
		var lost atomic.Bool // the replies on this connection are lost
		var cmds commands
		go p.pipe(up, c, func(b []byte) bool {
			if !p.resp {
				return true
			}
			for _, args := range cmds.feed(b) {
				p.mu.Lock()
				for i, l := range p.losses {
					if l.match(args) {
						p.losses = append(p.losses[:i], p.losses[i+1:]...)
						lost.Store(true)
						close(l.done)
						break
					}
				}
				p.mu.Unlock()
			}
			return true
		})
		go p.pipe(c, up, func([]byte) bool { return !lost.Load() })
	}
}

// pipe copies src to dst while pass lets each read through; the first read
// it refuses closes both.
func (p *Proxy) pipe(dst, src net.Conn, pass func([]byte) bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			for p.frozen {
				p.thawed.Wait()
			}
			p.mu.Unlock()
			if !pass(buf[:n]) {
				break
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	_ = dst.Close()
	_ = src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// commands splits a client's stream of RESP commands (arrays of bulk
// strings, as clients send them) into their arguments.
type commands struct{ buf []byte }

// feed adds b and returns the commands it completes, the first argument
// in lower case.
func (c *commands) feed(b []byte) [][]string {
	c.buf = append(c.buf, b...)
	var out [][]string
	for {
		args, n := parseCommand(c.buf)
		if n == 0 {
			return out
		}
		c.buf = c.buf[n:]
		if len(args) > 0 {
			args[0] = strings.ToLower(args[0])
			out = append(out, args)
		}
	}
}

// maxArgs bounds the arguments of a command parseCommand reads.
const maxArgs = 1 << 20

// parseCommand reads one command from the start of b and returns it with
// the bytes it took, 0 when b does not hold a whole one. Anything but an
// array of bulk strings takes a line and yields no arguments.
func parseCommand(b []byte) ([]string, int) {
	line := func(at int) (string, int) {
		i := bytes.Index(b[at:], []byte("\r\n"))
		if i < 0 {
			return "", -1
		}
		return string(b[at : at+i]), at + i + 2
	}
	head, at := line(0)
	if at < 0 {
		return nil, 0
	}
	if !strings.HasPrefix(head, "*") {
		return nil, at
	}
	n, err := strconv.Atoi(head[1:])
	if err != nil || n < 0 || n > maxArgs {
		return nil, at // not a command a client sends
	}
	args := make([]string, 0, n)
	for range n {
		var h string
		if h, at = line(at); at < 0 {
			return nil, 0
		}
		size, err := strconv.Atoi(strings.TrimPrefix(h, "$"))
		if err != nil || size < 0 {
			return nil, at // not a bulk string: skip what was read
		}
		if len(b) < at+size+2 {
			return nil, 0
		}
		args = append(args, string(b[at:at+size]))
		at += size + 2
	}
	return args, at
}

// Freeze holds every byte in either direction, on open and new
// connections, until Restore: the server looks hung.
func (p *Proxy) Freeze() {
	p.mu.Lock()
	p.frozen = true
	p.mu.Unlock()
}

// Cut closes every open connection and refuses new ones until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	p.frozen = false
	p.thawed.Broadcast()
	for c := range p.conns {
		_ = c.Close()
	}
}

// Restore accepts connections again and lets bytes through.
func (p *Proxy) Restore() {
	p.mu.Lock()
	p.down, p.frozen = false, false
	p.thawed.Broadcast()
	p.mu.Unlock()
}
