package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/internal/teststore"
	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
	"github.com/refresher/refresher/refresher"
	"github.com/refresher/refresher/schedule"
	"github.com/refresher/refresher/worker"
)

// clock is the one clock of the service and the worker, moved by the test.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// passes counts the dispatcher's passes (Observer.AfterDispatch), so a test
// waits for passes instead of sleeping; each pass wakes the test's waits.
type passes struct {
	n atomic.Int64
}

func (p *passes) pass(string, int) {
	p.n.Add(1)
	testenv.Wake()
}

// wait returns once n more passes have ended (the last n-1 of them started
// after the call).
func (p *passes) wait(t *testing.T, n int) {
	t.Helper()
	target := p.n.Load() + int64(n)
	testenv.Eventually(t, 15*time.Second, fmt.Sprintf("%d dispatcher passes", n), func() bool { return p.n.Load() >= target })
}

// The whole loop with the real service and the real reference worker: a
// good URL is refreshed and scheduled on its rule, a broken URL ends disabled
// with "Provided URL is invalid: <url>", and a throttled URL is retried no
// earlier than its Retry-After. On every store.
func TestWholeLoop(t *testing.T) {
	t.Parallel()
	teststore.Each(t, []string{teststore.MySQL, teststore.Postgres, teststore.SQLite}, wholeLoop)
}

// bigTables is the application's table of TestWholeLoop, by store.
var bigTables = map[string]string{
	teststore.MySQL: `CREATE TABLE big_tables (
		id BIGINT AUTO_INCREMENT PRIMARY KEY,
		uid CHAR(20) NOT NULL UNIQUE,
		input_url VARCHAR(2048) NOT NULL)`,
	teststore.Postgres: `CREATE TABLE big_tables (
		id bigserial PRIMARY KEY,
		uid varchar(20) NOT NULL UNIQUE,
		input_url text NOT NULL)`,
	teststore.SQLite: `CREATE TABLE big_tables (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		uid VARCHAR(20) NOT NULL UNIQUE,
		input_url VARCHAR(2048) NOT NULL)`,
}

func wholeLoop(t *testing.T, storeName string) {
	ctx := context.Background()
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	clk := &clock{now: t0}

	var mu sync.Mutex
	throttled := 0 // requests to /throttled
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/good.csv":
			_, _ = io.WriteString(w, "a,b\n1,2\n")
		case "/throttled.csv":
			mu.Lock()
			throttled++
			n := throttled
			mu.Unlock()
			if n == 1 {
				w.Header().Set("Retry-After", "600")
				http.Error(w, "slow down", http.StatusTooManyRequests)
				return
			}
			_, _ = io.WriteString(w, "ok")
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)

	db := teststore.Open(t, storeName)
	rdb, prefix := testenv.Redis(t)
	db.Exec(t, bigTables[storeName])
	_, err := db.Store.Migrate(ctx, []string{"big_tables"}, io.Discard, false)
	require.NoError(t, err)
	for uid, path := range map[string]string{"good": "/good.csv", "broken": "/missing.csv", "throttled": "/throttled.csv"} {
		db.Exec(t, "INSERT INTO big_tables (uid, input_url, refresh_at) VALUES (?, ?, ?)", uid, srv.URL+path, t0)
	}

	sched, err := schedule.Parse("DTSTART;TZID=Europe/Berlin:20260101T140000\nRRULE:FREQ=DAILY")
	require.NoError(t, err)
	retry, err := policy.ParseRetry("delays:0s,1m,5m")
	require.NoError(t, err)
	lists := redisio.DefaultLists(prefix + "big_tables")
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	dispatched := &passes{}
	svc, err := refresher.New(refresher.Config{
		Observer: refresher.Observer{AfterDispatch: dispatched.pass},
		Kinds: []refresher.Kind{{
			Name:     "big_tables",
			Table:    models.Table{Name: "big_tables", Key: "uid", Payload: []string{"input_url"}},
			Lists:    lists,
			Schedule: sched,
			Policy:   policy.Policy{Kind: "big_tables", Timeout: 5 * time.Minute, Retry: retry},
		}},
		InstanceID: "e2e",
		MaxSleep:   20 * time.Millisecond,
		Clock:      clk,
		Logger:     quiet,
	}, db.Store, redisio.New(rdb))
	require.NoError(t, err)
	w, err := worker.New(worker.Config{
		Kind: "big_tables", Redis: rdb, Input: lists.Input, Output: lists.Output,
		HTTPTimeout: 5 * time.Second, AllowPrivateNetworks: true, Now: clk.Now, Logger: quiet, // the test server is on loopback
	})
	require.NoError(t, err)

	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = svc.Run(runCtx) })
	wg.Go(func() { _ = w.Run(runCtx) })
	t.Cleanup(func() { cancel(); wg.Wait() })

	table := models.Table{Name: "big_tables", Key: "uid"}
	state := func(uid string) policy.State { return read(t, db.Store, table, uid) }
	waitFor := func(uid, what string, cond func(policy.State) bool) policy.State {
		t.Helper()
		var st policy.State
		testenv.EventuallyNil(t, 15*time.Second, uid+": "+what, func() error {
			if st = state(uid); cond(st) {
				return nil
			}
			return fmt.Errorf("state %+v", st)
		})
		return st
	}

	// The good URL: refreshed, next run at 14:00 Berlin = 13:00 UTC.
	good := waitFor("good", "success", func(s policy.State) bool { return !s.LastSuccessAt.IsZero() })
	require.True(t, good.RefreshAt.Equal(time.Date(2026, 11, 21, 13, 0, 0, 0, time.UTC)), "refresh_at %s", good.RefreshAt)
	require.Equal(t, "fetched", good.Status, "no size for a response from a non-public address")
	require.Zero(t, good.AttemptNo)

	// The broken URL: disabled at once with the user-friendly reason.
	broken := waitFor("broken", "disabled", func(s policy.State) bool { return s.Disabled() })
	require.Equal(t, "Provided URL is invalid: "+srv.URL+"/missing.csv", broken.DisabledReason)
	require.Contains(t, broken.LastError, "404")
	require.True(t, broken.RefreshAt.IsZero())

	// The throttled URL: its retry waits for Retry-After (600s), longer than
	// the policy's first delay (0s).
	th := waitFor("throttled", "first failure", func(s policy.State) bool { return s.LastError != "" })
	require.True(t, th.RefreshAt.Equal(t0.Add(600*time.Second)), "refresh_at %s, want now+600s", th.RefreshAt)
	clk.Advance(599 * time.Second)
	dispatched.wait(t, 2) // the second pass ran at now+599s
	require.False(t, state("throttled").Running(), "no attempt before Retry-After")
	mu.Lock()
	require.Equal(t, 1, throttled, "no request before Retry-After")
	mu.Unlock()
	clk.Advance(time.Second)
	th = waitFor("throttled", "success after Retry-After", func(s policy.State) bool { return !s.LastSuccessAt.IsZero() })
	require.True(t, th.LastSuccessAt.Equal(t0.Add(600*time.Second)))
	require.True(t, th.RefreshAt.Equal(time.Date(2026, 11, 21, 13, 0, 0, 0, time.UTC)))
	mu.Lock()
	require.Equal(t, 2, throttled)
	mu.Unlock()
}

func read(t *testing.T, store models.Store, table models.Table, uid string) policy.State {
	t.Helper()
	var st policy.State
	err := store.Tx(context.Background(), func(tx models.Tx) error {
		rows, err := tx.LockByKeys(context.Background(), table, []string{uid})
		st = rows[uid].State
		return err
	})
	require.NoError(t, err)
	return st
}
