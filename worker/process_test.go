package worker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/redisio"
)

// testServer answers the paths the worker tests GET and counts requests.
func testServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var requests atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello, world") })
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok", http.StatusMovedPermanently) })
	mux.HandleFunc("/status/{code}", func(w http.ResponseWriter, r *http.Request) {
		if ra := r.URL.Query().Get("retry_after"); ra != "" {
			w.Header().Set("Retry-After", ra)
		}
		var code int
		fmt.Sscan(r.PathValue("code"), &code)
		w.WriteHeader(code)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
	mux.HandleFunc("/slow-body", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "first part")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &requests
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func TestWorkerProcess(t *testing.T) {
	t.Parallel()
	srv, _ := testServer(t)
	// The test server is on loopback: allowed here, and so the status does
	// not tell the size of what it answered.
	w, err := New(Config{Kind: "big_tables", HTTPTimeout: 300 * time.Millisecond, AllowPrivateNetworks: true,
		Now: func() time.Time { return now }, Logger: quietLogger()})
	require.NoError(t, err)

	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL + "/x"
	closed.Close()

	invalid := func(url, reason string) redisio.Result {
		return redisio.Result{UID: "7", AttemptUID: "a1", Type: redisio.ResultFailure, Permanent: true,
			Reason: reason, UserFriendlyReason: "Provided URL is invalid: " + url}
	}
	fail := func(reason string, retryAfter int) redisio.Result {
		return redisio.Result{UID: "7", AttemptUID: "a1", Type: redisio.ResultFailure, Reason: reason, RetryAfterSeconds: retryAfter}
	}
	u := func(path string) string { return srv.URL + path }
	date := now.Add(150 * time.Second).Format(http.TimeFormat)
	dateURL := u("/status/429?retry_after=" + strings.ReplaceAll(date, " ", "%20"))

	tests := []struct {
		name  string
		input any // payload's input_url
		want  redisio.Result
	}{
		{"200", u("/ok"), redisio.Result{UID: "7", AttemptUID: "a1", Type: redisio.ResultSuccess, Status: "fetched"}},
		{"redirect followed", u("/moved"), redisio.Result{UID: "7", AttemptUID: "a1", Type: redisio.ResultSuccess, Status: "fetched"}},
		{"404", u("/status/404"), invalid(u("/status/404"), "GET "+u("/status/404")+": HTTP 404 Not Found")},
		{"410", u("/status/410"), invalid(u("/status/410"), "GET "+u("/status/410")+": HTTP 410 Gone")},
		{"malformed URL", "htp:/broken", invalid("htp:/broken", `malformed URL "htp:/broken": scheme must be http or https`)},
		{"input_url missing", nil, invalid("", `malformed URL "": scheme must be http or https`)},
		{"input_url not a string", 42, invalid("", `malformed URL "": scheme must be http or https`)},
		{"429 Retry-After seconds", u("/status/429?retry_after=120"),
			fail("GET "+u("/status/429?retry_after=120")+": HTTP 429 Too Many Requests (retry after 120s)", 120)},
		{"429 Retry-After date", dateURL, fail("GET "+dateURL+": HTTP 429 Too Many Requests (retry after 150s)", 150)},
		{"503 Retry-After", u("/status/503?retry_after=60"),
			fail("GET "+u("/status/503?retry_after=60")+": HTTP 503 Service Unavailable (retry after 60s)", 60)},
		{"503 without Retry-After", u("/status/503"), fail("GET "+u("/status/503")+": HTTP 503 Service Unavailable", 0)},
		{"500", u("/status/500"), fail("GET "+u("/status/500")+": HTTP 500 Internal Server Error", 0)},
		{"slower than the timeout", u("/slow"), fail("GET "+u("/slow")+": timeout after 300ms", 0)},
		{"body slower than the timeout", u("/slow-body"), fail("GET "+u("/slow-body")+": timeout after 300ms", 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			job := redisio.Job{Kind: "big_tables", UID: "7", AttemptUID: "a1", AttemptNo: 1,
				TimeoutAt: now.Add(time.Minute), Payload: map[string]any{"input_url": tt.input}}
			start := time.Now()
			got, ok := w.Process(context.Background(), job)
			require.True(t, ok)
			require.Equal(t, tt.want, got)
			require.Less(t, time.Since(start), 5*time.Second, "the HTTP timeout bounds every job")
		})
	}

	t.Run("connection refused", func(t *testing.T) {
		t.Parallel()
		job := redisio.Job{UID: "7", AttemptUID: "a1", TimeoutAt: now.Add(time.Minute), Payload: map[string]any{"input_url": closedURL}}
		got, ok := w.Process(context.Background(), job)
		require.True(t, ok)
		require.Equal(t, redisio.ResultFailure, got.Type)
		require.False(t, got.Permanent)
		require.Contains(t, got.Reason, "GET "+closedURL+": dial tcp ")
		require.Contains(t, got.Reason, "connection refused")
	})
}

func TestWorkerProcessExpired(t *testing.T) {
	t.Parallel()
	srv, requests := testServer(t)
	w, err := New(Config{Kind: "big_tables", AllowPrivateNetworks: true, Now: func() time.Time { return now }, Logger: quietLogger()})
	require.NoError(t, err)
	payload := map[string]any{"input_url": srv.URL + "/ok"}

	for _, timeoutAt := range []time.Time{now, now.Add(-time.Second)} {
		_, ok := w.Process(context.Background(), redisio.Job{UID: "7", AttemptUID: "a1", TimeoutAt: timeoutAt, Payload: payload})
		require.False(t, ok, "a job whose timeout_at (%s) has passed is dropped", timeoutAt)
	}
	require.Zero(t, requests.Load(), "an expired job sends no request")

	res, ok := w.Process(context.Background(), redisio.Job{UID: "7", AttemptUID: "a1", Payload: payload})
	require.True(t, ok, "a job without timeout_at does not expire")
	require.Equal(t, redisio.ResultSuccess, res.Type)
	require.EqualValues(t, 1, requests.Load())
}

func TestWorkerConfig(t *testing.T) {
	t.Parallel()
	t.Run("Defaults", func(t *testing.T) {
		t.Parallel()
		c := Config{Kind: "big_tables"}.WithDefaults()
		require.Equal(t, "big_tables-input", c.Input)
		require.Equal(t, "big_tables-output", c.Output)
		require.Equal(t, ConcurrencyDefault, c.Concurrency)
		require.Equal(t, HTTPTimeoutDefault, c.HTTPTimeout)
		require.NotNil(t, c.HTTPClient)
		require.NotNil(t, c.Now)
		require.NotNil(t, c.Logger)
	})
	t.Run("Invalid", func(t *testing.T) {
		t.Parallel()
		for cfg, msg := range map[*Config]string{
			{}:                                     "worker: Kind is required",
			{Kind: "k", Concurrency: -1}:           "worker: Concurrency must be at least 1, not -1",
			{Kind: "k", HTTPTimeout: -time.Second}: "worker: HTTPTimeout must be positive, not -1s",
		} {
			_, err := New(*cfg)
			require.EqualError(t, err, msg)
		}
	})
	t.Run("Run needs Redis", func(t *testing.T) {
		t.Parallel()
		w, err := New(Config{Kind: "k"})
		require.NoError(t, err)
		require.ErrorContains(t, w.Run(context.Background()), "Redis is required")
	})
}
