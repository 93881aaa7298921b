package operator

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

const readToken = "read-only-token-for-tests"

// serve starts a server on the fixture's data with options changed by mod.
func (f *fixture) serve(mod func(*Options)) *httptest.Server {
	o := Options{Kinds: []Kind{f.kind}, Store: f.store, Redis: f.rdb, Tokens: map[string]string{"ops": testToken},
		ReadTokens: map[string]string{"grafana": readToken}, Now: func() time.Time { return now },
		Logger: slog.New(slog.DiscardHandler), AuthFailureBurst: 3, AuthFailureEvery: time.Minute}
	if mod != nil {
		mod(&o)
	}
	srv, err := New(o)
	if err != nil {
		f.t.Fatal(err)
	}
	h := httptest.NewServer(srv.Handler())
	f.t.Cleanup(h.Close)
	return h
}

// get sends method path to h with the given Authorization header and Host
// (none when empty) and returns the status, the body and the headers.
func get(t *testing.T, h *httptest.Server, method, path, auth, host string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(method, h.URL+path, strings.NewReader("{}"))
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := (&http.Client{Timeout: 8 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// TestReadsNeedToken: with ReadNeedsToken (run's default off loopback),
// every read needs a token of either role, as a bearer token or as HTTP
// Basic's password (a browser's prompt); the probes and assets do not; a
// read token cannot act, and Basic never acts.
func TestReadsNeedToken(t *testing.T) {
	f := newFixture(t, nil)
	h := f.serve(func(o *Options) { o.ReadNeedsToken = true; o.Gatherer = prometheus.NewRegistry() })
	for _, path := range []string{"/metrics", "/", "/kinds/items", "/kinds/items/models/ok-1", "/kinds/items/dead", "/api/v1/kinds",
		"/api/v1/kinds/items/models", "/api/v1/kinds/items/models/off-3", "/api/v1/kinds/items/dead", "/api/v1/kinds/items/activity"} {
		st, body, hdr := get(t, h, "GET", path, "", "")
		if st != 401 || !strings.Contains(body, "reading needs a token") || !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Basic ") {
			t.Errorf("GET %s without a token: %d %q %v", path, st, body, hdr)
		}
		if strings.Contains(body, "off-3") || strings.Contains(body, "Provided URL") {
			t.Errorf("GET %s without a token shows data: %s", path, body)
		}
		for _, auth := range []string{"Bearer " + readToken, "Bearer " + testToken, basic("any", readToken), basic("", testToken)} {
			if st, body, _ := get(t, h, "GET", path, auth, ""); st != 200 {
				t.Errorf("GET %s with %q: %d %s", path, auth, st, body)
			}
		}
	}
	for _, path := range []string{"/healthz", "/readyz", "/static/app.js"} {
		if st, body, _ := get(t, h, "GET", path, "", ""); st != 200 {
			t.Errorf("GET %s without a token: %d %s", path, st, body)
		}
	}
	if st, body, _ := get(t, h, "GET", "/api/v1/kinds", "Bearer wrong-token-xxxxxxxx", ""); st != 401 || !strings.Contains(body, "not valid") {
		t.Errorf("a wrong token: %d %s", st, body)
	}
	trigger := "/api/v1/kinds/items/models/ok-1/trigger"
	if st, body, _ := get(t, h, "POST", trigger, "Bearer "+readToken, ""); st != 403 || !strings.Contains(body, "may only read") {
		t.Errorf("a read token acts: %d %s", st, body)
	}
	if st, body, _ := get(t, h, "POST", trigger, basic("", testToken), ""); st != 401 {
		t.Errorf("Basic acts: %d %s", st, body)
	}
	if st, body, _ := get(t, h, "POST", trigger, "Bearer "+testToken, ""); st != 200 {
		t.Errorf("an act token: %d %s", st, body)
	}

	// Without ReadNeedsToken (loopback, or http_public_read), reads are
	// open as before.
	open := f.serve(nil)
	if st, body, _ := get(t, open, "GET", "/api/v1/kinds", "", ""); st != 200 {
		t.Errorf("public read: %d %s", st, body)
	}
}

func basic(user, pass string) string {
	r, _ := http.NewRequest("GET", "/", nil)
	r.SetBasicAuth(user, pass)
	return r.Header.Get("Authorization")
}

// TestFailuresLimitedNotTokens: a client address that failed too often gets
// 429 for its failures only: a valid token from the same address is served,
// reads and actions, and the limit lifts as soon as the failures stop.
func TestFailuresLimitedNotTokens(t *testing.T) {
	f := newFixture(t, nil)
	h := f.serve(func(o *Options) {
		o.ReadNeedsToken = true
		o.AuthFailureBurst = 2
		o.AuthFailureEvery = time.Second
	})
	for range 2 {
		if st, _, _ := get(t, h, "GET", "/api/v1/kinds", "Bearer wrong-token-xxxxxxxx", ""); st != 401 {
			t.Fatalf("failure within the burst: %d", st)
		}
	}
	st, body, hdr := get(t, h, "POST", "/api/v1/kinds/items/models/ok-1/trigger", "Bearer wrong-token-xxxxxxxx", "")
	if st != 429 || hdr.Get("Retry-After") != "1" || !strings.Contains(body, "retry in 1 s") {
		t.Fatalf("after the burst: %d %v %s, want 429 saying to retry in Retry-After's 1 s", st, hdr, body)
	}
	for range 5 {
		if st, body, _ := get(t, h, "GET", "/api/v1/kinds", "Bearer "+readToken, ""); st != 200 {
			t.Fatalf("a valid read token while limited: %d %s", st, body)
		}
		if st, body, _ := get(t, h, "POST", "/api/v1/kinds/items/models/ok-1/trigger", "Bearer "+testToken, ""); st != 200 {
			t.Fatalf("a valid act token while limited: %d %s", st, body)
		}
	}
	time.Sleep(1100 * time.Millisecond) // one failure's worth: no longer than the failures
	if st, _, _ := get(t, h, "GET", "/api/v1/kinds", "Bearer wrong-token-xxxxxxxx", ""); st != 401 {
		t.Fatalf("after the failures stopped: %d, want 401 (not limited)", st)
	}
}

// TestLoopbackHost: on a loopback listener only loopback names are served
// in Host (DNS rebinding); others get 421 saying why.
func TestLoopbackHost(t *testing.T) {
	f := newFixture(t, nil)
	h := f.serve(func(o *Options) { o.Loopback = true })
	for _, host := range []string{"localhost", "localhost:9090", "LOCALHOST.:1", "127.0.0.1", "127.0.0.1:9090", "127.1.2.3:80", "[::1]", "[::1]:9090"} {
		if st, body, _ := get(t, h, "GET", "/api/v1/kinds", "", host); st != 200 {
			t.Errorf("Host %s: %d %s", host, st, body)
		}
	}
	for _, host := range []string{"evil.example.com", "evil.example.com:9090", "127.0.0.1.nip.io", "localhost.evil.com", "10.0.0.1:9090", "[::2]:9090", "0.0.0.0"} {
		for _, path := range []string{"/api/v1/kinds", "/", "/healthz"} {
			st, body, _ := get(t, h, "GET", path, "", host)
			if st != http.StatusMisdirectedRequest || !strings.Contains(body, "loopback") || strings.Contains(body, "off-3") {
				t.Errorf("Host %s %s: %d %s", host, path, st, body)
			}
		}
		if st, _, _ := get(t, h, "POST", "/api/v1/kinds/items/models/ok-1/trigger", "Bearer "+testToken, host); st != http.StatusMisdirectedRequest {
			t.Errorf("Host %s acts: %d", host, st)
		}
	}
	// Off loopback any Host is served (reads need a token there).
	if st, _, _ := get(t, f.serve(nil), "GET", "/api/v1/kinds", "", "refresher.internal:9090"); st != 200 {
		t.Errorf("not loopback: %d", st)
	}
}

// TestPagesOfferOnlyWhatTheViewerMayDo: a read-only server (no token of
// role act), and a viewer who reads with a token of role read, see no
// action form on the overview, the kind page, the dead letters and the
// bulk re-enable, and the top bar says why; a viewer with a token of role
// act, or anyone on a server with such a token that reads without one,
// sees them.
func TestPagesOfferOnlyWhatTheViewerMayDo(t *testing.T) {
	f := newFixture(t, nil)
	actions := []string{`id="pause-kind"`, `href="/kinds/items/bulk"`, `data-url="/api/v1/kinds/items/dead/discard"`, `id="bulk-form"`, `id="token"`,
		`id="enable-model"`, `id="trigger-model"`, `id="pause-model"`}
	pages := []string{"/", "/kinds/items?state=disabled", "/kinds/items/dead", "/kinds/items/bulk",
		"/kinds/items/models/off-1", "/kinds/items/models/ok-1"}
	for _, tc := range []struct {
		name       string
		mod        func(*Options)
		auth, says string
		act        bool
	}{
		{"read-only server", func(o *Options) { o.Tokens = nil }, "", "no API token of role act is configured", false},
		{"read-only server, public read", func(o *Options) { o.Tokens = nil; o.ReadNeedsToken = false }, "", "no API token of role act is configured", false},
		{"token of role read", func(o *Options) { o.ReadNeedsToken = true }, basic("", readToken), "you read with the token grafana, of role read", false},
		{"token of role act", func(o *Options) { o.ReadNeedsToken = true }, basic("", testToken), "", true},
		{"public read, no token sent", nil, "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := f.serve(tc.mod)
			seen := map[string]bool{}
			for _, p := range pages {
				st, body, _ := get(t, h, "GET", p, tc.auth, "")
				if st != 200 {
					t.Fatalf("%s: %d %s", p, st, body)
				}
				for _, a := range actions {
					seen[a] = seen[a] || strings.Contains(body, a)
				}
				if tc.says != "" && !strings.Contains(body, tc.says) {
					t.Errorf("%s does not say %q", p, tc.says)
				}
			}
			for _, a := range actions {
				if seen[a] != tc.act {
					t.Errorf("%s on a page: %v, want %v", a, seen[a], tc.act)
				}
			}
		})
	}
}
