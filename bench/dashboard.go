package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// dashboardPaths are what an open dashboard tab asks for on every refresh:
// the overview page (the page's script fetches its own URL every
// data-refresh seconds and swaps in its <main>; docs/operating.md, "The
// dashboard") and the API's overview, as a tool polling it would.
var dashboardPaths = []string{"/", "/api/v1/kinds"}

// dashStats are the dashboard's requests during one run.
type dashStats struct {
	requests, failures int
	slowest            time.Duration
	firstErr           string
}

// err says that requests failed: a dashboard that fails costs the service
// less than one that works, so a run with failures measures nothing.
func (st dashStats) err() error {
	if st.failures == 0 {
		return nil
	}
	return fmt.Errorf("%d of %d dashboard requests failed, the first: %s", st.failures, st.requests, st.firstErr)
}

// openDashboard polls base as an open dashboard does: every path of
// dashboardPaths at once, then again every every, until the returned
// function is called; that function (safe to call more than once) stops the
// polling and returns what it saw.
func openDashboard(ctx context.Context, base string, every time.Duration) func() dashStats {
	ctx, cancel := context.WithCancel(ctx)
	client := &http.Client{Timeout: 30 * time.Second}
	var (
		mu   sync.Mutex
		st   dashStats
		wg   sync.WaitGroup
		once sync.Once
	)
	get := func(path string) {
		start := time.Now()
		err := fetch(ctx, client, base+path)
		took := time.Since(start)
		if ctx.Err() != nil {
			return // cut short by the end of the run: not the dashboard's fault
		}
		mu.Lock()
		defer mu.Unlock()
		st.requests++
		st.slowest = max(st.slowest, took)
		if err != nil {
			st.failures++
			if st.firstErr == "" {
				st.firstErr = err.Error()
			}
		}
	}
	wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			for _, p := range dashboardPaths {
				get(p)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	})
	return func() dashStats {
		once.Do(func() { cancel(); wg.Wait() })
		mu.Lock()
		defer mu.Unlock()
		return st
	}
}

// fetch GETs url and reads the whole body; anything but 200 is an error.
func fetch(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return fmt.Errorf("read %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}
