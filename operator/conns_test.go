package operator

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/refresher/refresher/internal/testenv"
)

// helperEnv makes the test binary run TestHelperServeCapped as a server.
const helperEnv = "REFRESHER_TEST_SERVE_CAPPED"

// TestHelperServeCapped is not a test: run by TestHealthUnderIdleConnections
// in a child process, it lowers its open-file limit to 128, serves the
// operator surface as run does (NewHTTPServer) and prints its address.
func TestHelperServeCapped(t *testing.T) {
	if os.Getenv(helperEnv) == "" {
		t.Skip("helper process of TestHealthUnderIdleConnections")
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	lim.Cur = 128
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, capped := NewHTTPServer(f.srv.Handler(), ln, Limits{})
	fmt.Printf("ADDR %s\n", ln.Addr())
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); srv.Close() }() // the parent closes stdin to stop
	if err := srv.Serve(capped); err != nil && !errors.Is(err, http.ErrServerClosed) {
		t.Fatal(err)
	}
}

// TestHealthUnderIdleConnections: with 128 open files, 150 idle
// connections (that never send a request) do not keep /healthz and /readyz
// from answering promptly: the cap closes the longest idle ones.
func TestHealthUnderIdleConnections(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperServeCapped$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	lines := bufio.NewScanner(stdout)
	var addr string
	for lines.Scan() {
		if a, ok := strings.CutPrefix(lines.Text(), "ADDR "); ok {
			addr = a
			break
		}
	}
	if addr == "" {
		t.Fatal("the helper printed no address")
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()

	var idle []net.Conn
	t.Cleanup(func() {
		for _, c := range idle {
			c.Close()
		}
	})
	for i := range 150 {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			t.Fatalf("idle connection %d: %v", i, err)
		}
		idle = append(idle, c)
	}
	// The health checks below come after the server accepted them all.
	testenv.EventuallyNil(t, 10*time.Second, "the server accepting the idle connections", func() error {
		if n := acceptQueue(t, addr); n != 0 {
			return fmt.Errorf("%d connections wait to be accepted", n)
		}
		return nil
	})
	client := &http.Client{Timeout: 5 * time.Second}
	for _, path := range []string{"/healthz", "/readyz", "/healthz"} {
		start := time.Now()
		resp, err := client.Get("http://" + addr + path)
		took := time.Since(start)
		if err != nil {
			t.Fatalf("GET %s with 150 idle connections and 128 open files: %v after %v", path, err, took)
		}
		resp.Body.Close()
		t.Logf("GET %s with 150 idle connections and 128 open files: %d in %v", path, resp.StatusCode, took.Round(time.Microsecond))
		if resp.StatusCode != 200 || took > time.Second {
			t.Errorf("GET %s: %d in %v, want 200 within 1s", path, resp.StatusCode, took)
		}
	}
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", cmd.Process.Pid))
	t.Logf("the server holds %d open files (limit 128)", len(fds))
}

// acceptQueue returns the number of connections waiting to be accepted on
// the listening IPv4 socket at addr: rx_queue of its LISTEN line in
// /proc/net/tcp.
func acceptQueue(t *testing.T, addr string) int {
	t.Helper()
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !ap.Addr().Is4() {
		t.Fatalf("listen address %q: want an IPv4 address and port (%v)", addr, err)
	}
	ip := ap.Addr().As4()
	local := fmt.Sprintf("%02X%02X%02X%02X:%04X", ip[3], ip[2], ip[1], ip[0], ap.Port())
	data, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		if len(f) > 4 && f[1] == local && f[3] == "0A" { // 0A: LISTEN
			_, rx, _ := strings.Cut(f[4], ":")
			n, err := strconv.ParseInt(rx, 16, 64)
			if err != nil {
				t.Fatalf("/proc/net/tcp: %q: %v", line, err)
			}
			return int(n)
		}
	}
	t.Fatalf("/proc/net/tcp has no listening socket %s (%s)", addr, local)
	return 0
}

// TestConnectionsCut: an idle keep-alive connection, a connection that
// sends nothing and a slow POST body are cut after their limits.
func TestConnectionsCut(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Write([]byte("ok\n"))
	})
	srv, capped := NewHTTPServer(h, ln, Limits{ReadHeaderTimeout: 300 * time.Millisecond, ReadTimeout: 600 * time.Millisecond,
		WriteTimeout: time.Second, IdleTimeout: 300 * time.Millisecond})
	go srv.Serve(capped)
	t.Cleanup(func() { srv.Close() })
	addr := ln.Addr().String()

	// closedWithin reports whether the server closes c within d, reading
	// (and dropping) what it sends until then.
	closedWithin := func(c net.Conn, d time.Duration) bool {
		_ = c.SetReadDeadline(time.Now().Add(d))
		_, err := io.Copy(io.Discard, c)
		var ne net.Error
		return !(errors.As(err, &ne) && ne.Timeout())
	}
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}

	keepAlive := dial()
	fmt.Fprintf(keepAlive, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
	if !closedWithin(keepAlive, 3*time.Second) {
		t.Error("an idle keep-alive connection stayed open")
	}
	if !closedWithin(dial(), 3*time.Second) {
		t.Error("a connection that sends nothing stayed open")
	}
	slow := dial()
	fmt.Fprintf(slow, "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1000\r\n\r\n")
	start := time.Now()
	cut := false
	for time.Since(start) < 3*time.Second {
		if _, err := slow.Write([]byte("x")); err != nil {
			cut = true
			break
		}
		_ = slow.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if _, err := slow.Read(make([]byte, 512)); err != nil {
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				cut = true
				break
			}
		}
	}
	if !cut {
		t.Error("a slow POST body was not cut within 3s")
	}
}
