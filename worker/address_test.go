package worker

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/redisio"
)

func TestAddressClass(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]string{
		// public
		"8.8.8.8":                "",
		"93.184.215.14":          "",
		"2606:4700::1111":        "",
		"::ffff:8.8.8.8":         "",
		"64:ff9b::808:808":       "", // NAT64 of 8.8.8.8
		"2002:808:808::1":        "", // 6to4 of 8.8.8.8
		"100.63.255.255":         "",
		"100.128.0.0":            "",
		"172.32.0.1":             "",
		"fe80::1%eth0":           "link-local",
		"127.0.0.1":              "loopback",
		"127.255.0.9":            "loopback",
		"::1":                    "loopback",
		"10.0.0.1":               "private",
		"172.16.0.1":             "private",
		"172.31.255.255":         "private",
		"192.168.1.1":            "private",
		"169.254.169.254":        "link-local",
		"fd00::1":                "unique-local",
		"fc00::1":                "unique-local",
		"0.0.0.0":                "unspecified",
		"0.1.2.3":                "this network",
		"::":                     "unspecified",
		"224.0.0.1":              "multicast",
		"ff02::1":                "multicast",
		"255.255.255.255":        "broadcast",
		"240.0.0.1":              "reserved",
		"100.64.0.1":             "shared address space (CGNAT)",
		"192.0.0.8":              "IETF protocol assignments",
		"192.0.2.1":              "documentation",
		"198.51.100.1":           "documentation",
		"203.0.113.1":            "documentation",
		"2001:db8::1":            "documentation",
		"3fff::1":                "documentation",
		"198.18.0.1":             "benchmarking",
		"192.88.99.1":            "6to4 relay anycast",
		"::ffff:127.0.0.1":       "loopback",
		"::ffff:10.0.0.1":        "private",
		"::ffff:169.254.169.254": "link-local",
		"64:ff9b::7f00:1":        "NAT64 of loopback",
		"64:ff9b::a9fe:a9fe":     "NAT64 of link-local",
		"64:ff9b:1::a00:1":       "local-use NAT64",
		"2002:a00:1::1":          "6to4 of private",
		"2002:7f00:1::":          "6to4 of loopback",
		"2001:0:4136:e378::1":    "Teredo",
		"2001:2::1":              "IETF protocol assignments",
		"100::1":                 "discard-only",
		"fec0::1":                "site-local",
		"::7f00:1":               "reserved", // IPv4-compatible (deprecated)
		"4000::1":                "reserved",
	} {
		require.Equal(t, want, AddressClass(netip.MustParseAddr(addr)), addr)
	}
	require.Equal(t, "invalid", AddressClass(netip.Addr{}))
}

func TestAddressPolicyCheck(t *testing.T) {
	t.Parallel()
	a := netip.MustParseAddr
	refused := func(p AddressPolicy, addr string) bool { return p.Check(a(addr)) != nil }

	var strict AddressPolicy
	require.True(t, refused(strict, "10.1.2.3"))
	require.False(t, refused(strict, "8.8.8.8"))
	err := strict.Check(a("::ffff:169.254.169.254"))
	require.EqualError(t, err, "address ::ffff:169.254.169.254 is not allowed (link-local)")

	private := AddressPolicy{AllowPrivateNetworks: true}
	for _, addr := range []string{"127.0.0.1", "::1", "10.1.2.3", "169.254.169.254", "fd00::1", "100.64.0.1", "::ffff:192.168.0.1"} {
		require.False(t, refused(private, addr), "allow_private_networks allows %s", addr)
	}
	for _, addr := range []string{"0.0.0.0", "::", "224.0.0.1", "ff02::1", "255.255.255.255"} {
		require.True(t, refused(private, addr), "allow_private_networks still refuses %s", addr)
	}

	listed := AddressPolicy{AllowNetworks: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("fd00:1::/48")}}
	for addr, want := range map[string]bool{
		"10.1.2.3": false, "::ffff:10.1.2.3": false, "fd00:1::5": false,
		"10.2.0.1": true, "127.0.0.1": true, "fd00:2::1": true, "169.254.169.254": true,
		"8.8.8.8": false,
	} {
		require.Equal(t, want, refused(listed, addr), "allow_networks [10.1.0.0/16, fd00:1::/48], %s refused", addr)
	}
}

// dialGuard is the last check of the test transports: it lets connections
// to loopback through and refuses every other one, so that the tests send
// no packet off this machine even when the address policy is broken. A test
// whose policy works sees no such connection.
type dialGuard struct {
	mu      sync.Mutex
	escaped []string
}

func (g *dialGuard) after(address string) error {
	if ap, err := netip.ParseAddrPort(address); err == nil && ap.Addr().IsLoopback() {
		return nil
	}
	g.mu.Lock()
	g.escaped = append(g.escaped, address)
	g.mu.Unlock()
	return fmt.Errorf("test transport: not connecting to %s (the address policy should have refused it)", address)
}

func (g *dialGuard) Escaped() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.escaped...)
}

// guardedWorker is a worker whose transport applies policy, resolves names
// with resolver (nil: the system's) and then the dialGuard.
func guardedWorker(t *testing.T, p AddressPolicy, resolver *net.Resolver) (*Worker, *dialGuard) {
	t.Helper()
	g := &dialGuard{}
	w, err := New(Config{Kind: "k", HTTPTimeout: 5 * time.Second, AllowPrivateNetworks: p.AllowPrivateNetworks, AllowNetworks: p.AllowNetworks,
		HTTPClient: &http.Client{Transport: newTransport(p, resolver, g.after)}, Now: func() time.Time { return now }, Logger: quietLogger()})
	require.NoError(t, err)
	return w, g
}

func process(t *testing.T, w *Worker, url string) redisio.Result {
	t.Helper()
	res, ok := w.Process(context.Background(), redisio.Job{UID: "7", AttemptUID: "a1", TimeoutAt: now.Add(time.Hour),
		Payload: map[string]any{"input_url": url}})
	require.True(t, ok)
	return res
}

// requireNotAllowed checks the result of a refused URL: permanent, and the
// texts users see name neither the address nor the port.
func requireNotAllowed(t *testing.T, res redisio.Result, url, class string) {
	t.Helper()
	require.Equal(t, redisio.Result{UID: "7", AttemptUID: "a1", Type: redisio.ResultFailure, Permanent: true,
		Reason:             "GET " + url + ": refused: the address is not public (" + class + "); allow it with the worker's allow_private_networks or allow_networks",
		UserFriendlyReason: "Provided URL is not allowed: " + url}, res)
}

func TestFetchRefusesNonPublicAddresses(t *testing.T) {
	t.Parallel()
	w, guard := guardedWorker(t, AddressPolicy{}, nil)
	for url, class := range map[string]string{
		"http://10.0.0.1/data.csv":                 "private",
		"http://172.16.5.4:8080/":                  "private",
		"http://192.168.1.1/":                      "private",
		"http://169.254.169.254/latest/meta-data/": "link-local",
		"http://[fd00::1]/":                        "unique-local",
		"http://[fe80::1]/":                        "link-local",
		"http://[::ffff:10.0.0.1]/":                "private",
		"http://[::ffff:a9fe:a9fe]/":               "link-local",
		"http://[64:ff9b::a00:1]/":                 "NAT64 of private",
		"http://[2002:c0a8:101::1]/":               "6to4 of private",
		"http://[2001:0:4136:e378::1]/":            "Teredo",
		"http://100.64.0.1/":                       "shared address space (CGNAT)",
		"http://0.0.0.0:6379/":                     "unspecified",
		"http://0.1.2.3/":                          "this network",
		"http://192.0.2.10/":                       "documentation",
		"http://198.18.0.1/":                       "benchmarking",
		"http://224.0.0.1/":                        "multicast",
		"http://255.255.255.255/":                  "broadcast",
	} {
		requireNotAllowed(t, process(t, w, url), url, class)
	}
	require.Empty(t, guard.Escaped(), "every address was refused before a connection was tried")
}

// The default client (no HTTPClient in Config) refuses loopback: the
// server never sees a request.
func TestDefaultClientRefusesLoopback(t *testing.T) {
	t.Parallel()
	srv, requests := testServer(t)
	w, err := New(Config{Kind: "k", HTTPTimeout: 5 * time.Second, Now: func() time.Time { return now }, Logger: quietLogger()})
	require.NoError(t, err)
	requireNotAllowed(t, process(t, w, srv.URL+"/ok"), srv.URL+"/ok", "loopback")
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	localhost := "http://localhost:" + port + "/ok" // a name that resolves to loopback
	requireNotAllowed(t, process(t, w, localhost), localhost, "loopback")
	require.Zero(t, requests.Load(), "no request reached the loopback server")

	transport := w.cfg.HTTPClient.Transport.(*http.Transport)
	require.Nil(t, transport.Proxy, "proxy environment variables are ignored: a proxy would dial the target out of reach of the check")
}

// A public-looking URL that redirects to a private address is refused at
// the dial of the second hop.
func TestFetchRefusesRedirectToPrivate(t *testing.T) {
	t.Parallel()
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.Redirect(w, r, "http://10.0.0.1/admin", http.StatusFound)
	}))
	t.Cleanup(srv.Close)
	// The loopback server stands for a public one: allowed by a list.
	w, guard := guardedWorker(t, AddressPolicy{AllowNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}}, nil)
	requireNotAllowed(t, process(t, w, srv.URL+"/export"), srv.URL+"/export", "private")
	require.EqualValues(t, 1, requests.Load(), "the first hop was fetched")
	require.Empty(t, guard.Escaped(), "the second hop was refused before connecting")
}

// A host name is judged by the address it resolves to (DNS rebinding is no
// way around the check), and DNS failures are classified: NXDOMAIN is
// permanent, a server failure is retried.
func TestFetchDNS(t *testing.T) {
	t.Parallel()
	rebind, guard := guardedWorker(t, AddressPolicy{}, fakeDNS(t, 0, netip.MustParseAddr("10.0.0.1")))
	requireNotAllowed(t, process(t, rebind, "http://files.refresher.test/a.csv"), "http://files.refresher.test/a.csv", "private")
	require.Empty(t, guard.Escaped())

	nx, _ := guardedWorker(t, AddressPolicy{}, fakeDNS(t, 3, netip.Addr{}))
	require.Equal(t, redisio.Result{UID: "7", AttemptUID: "a1", Type: redisio.ResultFailure, Permanent: true,
		Reason:             "GET http://nope.refresher.test/a.csv: no such host nope.refresher.test",
		UserFriendlyReason: "Provided URL is invalid: http://nope.refresher.test/a.csv"},
		process(t, nx, "http://nope.refresher.test/a.csv"))

	servfail, _ := guardedWorker(t, AddressPolicy{}, fakeDNS(t, 2, netip.Addr{}))
	res := process(t, servfail, "http://files.refresher.test/a.csv")
	require.Equal(t, redisio.ResultFailure, res.Type)
	require.False(t, res.Permanent, "a DNS server failure says nothing about the URL: retry")
	require.Contains(t, res.Reason, "GET http://files.refresher.test/a.csv: cannot resolve files.refresher.test")
}

// fakeDNS answers every query on a loopback UDP port: A queries with addr
// when rcode is 0 (other queries get no answer), else every query with
// rcode (2 SERVFAIL, 3 NXDOMAIN). It returns a resolver that asks it.
func fakeDNS(t *testing.T, rcode byte, addr netip.Addr) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			q := buf[:n]
			i := 12 // header, then the question: name labels, type, class
			for i < n && q[i] != 0 {
				i += int(q[i]) + 1
			}
			i += 5
			if n < 12 || i > n {
				continue
			}
			qtype := binary.BigEndian.Uint16(q[i-4:])
			resp := append([]byte(nil), q[:i]...)
			resp[2] = 0x80 | q[2]&0x01 // response, recursion desired as asked
			resp[3] = 0x80 | rcode     // recursion available
			answers := 0
			if rcode == 0 && qtype == 1 {
				answers = 1
			}
			binary.BigEndian.PutUint16(resp[4:], 1)
			binary.BigEndian.PutUint16(resp[6:], uint16(answers))
			binary.BigEndian.PutUint32(resp[8:], 0)
			if answers == 1 {
				resp = append(resp, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4)
				resp = append(resp, addr.AsSlice()...)
			}
			_, _ = pc.WriteTo(resp, from)
		}
	}()
	server := pc.LocalAddr().String()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", server)
	}}
}

func TestFetchBodyLimit(t *testing.T) {
	t.Parallel()
	body := strings.Repeat("x", 2000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/chunked" {
			w.(http.Flusher).Flush() // no Content-Length: the limit applies while reading
		}
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	for limit, over := range map[int64]bool{1000: true, 1999: true, 2000: false} {
		w, err := New(Config{Kind: "k", AllowPrivateNetworks: true, MaxBodyBytes: limit, Now: func() time.Time { return now }, Logger: quietLogger()})
		require.NoError(t, err)
		for _, path := range []string{"/sized", "/chunked"} {
			res := process(t, w, srv.URL+path)
			if !over {
				require.Equal(t, redisio.ResultSuccess, res.Type, "%d bytes within a limit of %d", len(body), limit)
				continue
			}
			require.Equal(t, redisio.Result{UID: "7", AttemptUID: "a1", Type: redisio.ResultFailure,
				Reason: fmt.Sprintf("GET %s%s: response body is larger than the limit of %d bytes (raise the worker's max_body_bytes to allow it)", srv.URL, path, limit)},
				res, "%s: %d bytes over a limit of %d", path, len(body), limit)
		}
	}
}

// A declared Content-Length over the limit fails at once, without reading
// the body (this server never sends it).
func TestFetchBodyLimitDeclared(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "10000000")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	w, err := New(Config{Kind: "k", AllowPrivateNetworks: true, MaxBodyBytes: 1000, HTTPTimeout: 3 * time.Second,
		Now: func() time.Time { return now }, Logger: quietLogger()})
	require.NoError(t, err)
	start := time.Now()
	res := process(t, w, srv.URL+"/big")
	require.Equal(t, "GET "+srv.URL+"/big: response body is larger than the limit of 1000 bytes (raise the worker's max_body_bytes to allow it)", res.Reason)
	require.Less(t, time.Since(start), 2*time.Second, "failed before reading the body")
}

// A redirect to a scheme the worker does not fetch (file:, gopher:, ftp:) is
// permanent: asking again gets the same redirect.
func TestFetchRedirectToOtherSchemeIsPermanent(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, strings.TrimPrefix(r.URL.Path, "/to/"), http.StatusFound)
	}))
	t.Cleanup(srv.Close)
	w, guard := guardedWorker(t, AddressPolicy{AllowNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}}, nil)
	for scheme, target := range map[string]string{"file": "file:///etc/passwd", "gopher": "gopher://example.com:70/1", "ftp": "ftp://example.com/a.csv"} {
		url := srv.URL + "/to/" + target
		require.Equal(t, redisio.Result{UID: "7", AttemptUID: "a1", Type: redisio.ResultFailure, Permanent: true,
			Reason:             "GET " + url + ": redirected to a " + scheme + ": URL; the worker follows only http and https",
			UserFriendlyReason: "Provided URL is not allowed: " + url}, process(t, w, url), scheme)
	}
	require.Empty(t, guard.Escaped())
}
