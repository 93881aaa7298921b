package demo

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Target is the demo's built-in HTTP server that the example models point
// at. Its paths behave like the sources a real app refreshes from:
//
//	/ok/{name}        200 with a small CSV
//	/missing/{name}   404: the worker reports a permanent failure
//	/down/{name}      500 every time: retries until the policy gives up
//	/flaky/{name}     500 and 200 in turn
//	/throttled/{name} 429 with Retry-After (demo seconds) on every other call
//	/slow/{name}      answers only after the attempt has timed out
type Target struct {
	// RetryAfter is the demo time the throttled path asks to wait.
	RetryAfter time.Duration
	// Hang is how long (real time) the slow path holds a request.
	Hang time.Duration
	// Clock stamps the calls (see Calls); nil: the wall clock.
	Clock *Clock

	mu    sync.Mutex
	calls map[string][]time.Time
}

// Calls returns when (in demo time) path was requested, in order.
func (t *Target) Calls(path string) []time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]time.Time(nil), t.calls[path]...)
}

// Handler returns the target's routes.
func (t *Target) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ok/{name}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "id,value\n1,%s\n", r.PathValue("name"))
	})
	mux.HandleFunc("GET /missing/{name}", func(w http.ResponseWriter, r *http.Request) {
		http.NotFound(w, r)
	})
	mux.HandleFunc("GET /down/{name}", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "upstream is down", http.StatusInternalServerError)
	})
	mux.HandleFunc("GET /flaky/{name}", func(w http.ResponseWriter, r *http.Request) {
		if t.count(r.URL.Path)%2 == 1 {
			http.Error(w, "temporary failure", http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "id,value\n1,flaky")
	})
	mux.HandleFunc("GET /throttled/{name}", func(w http.ResponseWriter, r *http.Request) {
		if t.count(r.URL.Path)%2 == 1 {
			w.Header().Set("Retry-After", strconv.Itoa(int(t.RetryAfter/time.Second)))
			http.Error(w, "slow down", http.StatusTooManyRequests)
			return
		}
		fmt.Fprintln(w, "id,value\n1,throttled")
	})
	mux.HandleFunc("GET /slow/{name}", func(w http.ResponseWriter, r *http.Request) {
		t.count(r.URL.Path)
		select {
		case <-time.After(t.Hang):
			fmt.Fprintln(w, "id,value\n1,slow")
		case <-r.Context().Done():
		}
	})
	return mux
}

// count records a call of path and returns how often it was requested,
// this call included.
func (t *Target) count(path string) int {
	now := time.Now()
	if t.Clock != nil {
		now = t.Clock.Now()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.calls == nil {
		t.calls = map[string][]time.Time{}
	}
	t.calls[path] = append(t.calls[path], now)
	return len(t.calls[path])
}
