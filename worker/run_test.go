package worker

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/redisio"
)

type runBundle struct {
	rdb    *redis.Client
	cfg    Config // Input and Output under the test's key prefix
	worker *Worker
	cancel context.CancelFunc
	done   chan error // receives Run's error
}

// setupRun starts a worker on the test's own lists; change cfg with edit.
func setupRun(t *testing.T, edit func(*Config)) *runBundle {
	t.Helper()
	rdb, prefix := testenv.Redis(t)
	b := &runBundle{rdb: rdb, done: make(chan error, 1)}
	b.cfg = Config{Kind: "big_tables", Redis: rdb, Input: prefix + "big_tables-input", Output: prefix + "big_tables-output",
		Concurrency: 2, HTTPTimeout: 5 * time.Second, AllowPrivateNetworks: true, Logger: quietLogger()}
	if edit != nil {
		edit(&b.cfg)
	}
	var err error
	b.worker, err = New(b.cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	go func() { b.done <- b.worker.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-b.done
	})
	return b
}

func (b *runBundle) pushJob(t *testing.T, uid, url string, timeoutAt time.Time) {
	t.Helper()
	pushJobTo(t, b.rdb, b.cfg.Input, uid, url, timeoutAt)
}

// pushJobTo pushes a job of the row uid (attempt "att-<uid>") to input.
func pushJobTo(t *testing.T, rdb *redis.Client, input, uid, url string, timeoutAt time.Time) {
	t.Helper()
	data, err := json.Marshal(redisio.Job{Kind: "big_tables", UID: uid, AttemptUID: "att-" + uid, AttemptNo: 1,
		TimeoutAt: timeoutAt, Payload: map[string]any{"input_url": url}})
	require.NoError(t, err)
	require.NoError(t, rdb.RPush(context.Background(), input, data).Err())
}

// nextResult waits up to 10 s for the next result on the output list.
func (b *runBundle) nextResult(t *testing.T) redisio.Result {
	t.Helper()
	kv, err := b.rdb.BLPop(context.Background(), 10*time.Second, b.cfg.Output).Result()
	require.NoError(t, err, "no result on %s within 10s", b.cfg.Output)
	var res redisio.Result
	require.NoError(t, json.Unmarshal([]byte(kv[1]), &res))
	return res
}

// stop cancels Run and waits for it to return.
func (b *runBundle) stop(t *testing.T) {
	t.Helper()
	b.cancel()
	select {
	case err := <-b.done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s of its context being cancelled")
	}
	b.done <- nil // for the cleanup
}

func TestWorkerRun(t *testing.T) {
	t.Parallel()
	srv, _ := testServer(t)
	b := setupRun(t, nil)
	future := time.Now().Add(time.Hour)

	require.NoError(t, b.rdb.RPush(context.Background(), b.cfg.Input, `{"uid": 1, "payload": `).Err())
	b.pushJob(t, "ok", srv.URL+"/ok", future)
	b.pushJob(t, "gone", srv.URL+"/status/404", future)
	b.pushJob(t, "throttled", srv.URL+"/status/429?retry_after=60", future)
	b.pushJob(t, "broken", "not a url", future)

	got := map[string]redisio.Result{}
	for range 4 {
		res := b.nextResult(t)
		got[res.UID] = res
	}
	require.Equal(t, map[string]redisio.Result{
		"ok": {UID: "ok", AttemptUID: "att-ok", Type: redisio.ResultSuccess, Status: "fetched"},
		"gone": {UID: "gone", AttemptUID: "att-gone", Type: redisio.ResultFailure, Permanent: true,
			Reason:             "GET " + srv.URL + "/status/404: HTTP 404 Not Found",
			UserFriendlyReason: "Provided URL is invalid: " + srv.URL + "/status/404"},
		"throttled": {UID: "throttled", AttemptUID: "att-throttled", Type: redisio.ResultFailure, RetryAfterSeconds: 60,
			Reason: "GET " + srv.URL + "/status/429?retry_after=60: HTTP 429 Too Many Requests (retry after 60s)"},
		"broken": {UID: "broken", AttemptUID: "att-broken", Type: redisio.ResultFailure, Permanent: true,
			Reason:             `malformed URL "not a url": scheme must be http or https`,
			UserFriendlyReason: "Provided URL is invalid: not a url"},
	}, got)

	// The worker keeps going after the undecodable message and after a
	// batch: one more job is done.
	b.pushJob(t, "again", srv.URL+"/ok", future)
	require.Equal(t, "again", b.nextResult(t).UID)

	b.stop(t)
	require.Equal(t, Stats{Done: 5, Malformed: 1}, b.worker.Stats())
	n, err := b.rdb.LLen(context.Background(), b.cfg.Input).Result()
	require.NoError(t, err)
	require.Zero(t, n)
}

func TestWorkerRunBatches(t *testing.T) {
	t.Parallel()
	srv, _ := testServer(t)
	rdb, prefix := testenv.Redis(t)
	future := time.Now().Add(time.Hour)
	// Jobs are queued before the worker starts, so its first BLPOP + LPOP
	// takes as many as it has free slots.
	input := prefix + "in"
	for _, uid := range []string{"1", "2", "3", "4", "5", "6", "7"} {
		data, err := json.Marshal(redisio.Job{UID: uid, AttemptUID: "a" + uid, TimeoutAt: future, Payload: map[string]any{"input_url": srv.URL + "/ok"}})
		require.NoError(t, err)
		require.NoError(t, rdb.RPush(context.Background(), input, data).Err())
	}
	w, err := New(Config{Kind: "k", Redis: rdb, Input: input, Output: prefix + "out", Concurrency: 3, Logger: quietLogger()})
	require.NoError(t, err)
	msgs, err := w.pop(context.Background(), 3)
	require.NoError(t, err)
	require.Len(t, msgs, 3)
	n, err := rdb.LLen(context.Background(), input).Result()
	require.NoError(t, err)
	require.EqualValues(t, 4, n)

	b := setupRun(t, func(c *Config) { c.Input, c.Output, c.Concurrency = input, prefix+"out", 3 })
	seen := map[string]bool{}
	for range 4 {
		seen[b.nextResult(t).UID] = true
	}
	require.Equal(t, map[string]bool{"4": true, "5": true, "6": true, "7": true}, seen)
}

func TestWorkerRunDropsExpiredJobs(t *testing.T) {
	t.Parallel()
	srv, requests := testServer(t)
	b := setupRun(t, func(c *Config) { c.Concurrency = 1 })

	b.pushJob(t, "expired", srv.URL+"/ok", time.Now().Add(-time.Second))
	b.pushJob(t, "current", srv.URL+"/ok", time.Now().Add(time.Hour))
	require.Equal(t, "current", b.nextResult(t).UID)
	b.stop(t)

	require.Equal(t, Stats{Done: 1, Expired: 1}, b.worker.Stats())
	n, err := b.rdb.LLen(context.Background(), b.cfg.Output).Result()
	require.NoError(t, err)
	require.Zero(t, n, "no result for the expired job")
	require.EqualValues(t, 1, requests.Load(), "no request for the expired job")
}

func TestWorkerRunGracefulStop(t *testing.T) {
	t.Parallel()
	started, release := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
		w.Write([]byte("late"))
	}))
	t.Cleanup(srv.Close)
	b := setupRun(t, func(c *Config) { c.Concurrency = 1 })

	b.pushJob(t, "slow", srv.URL+"/slow", time.Now().Add(time.Hour))
	<-started
	b.cancel() // SIGTERM with a job in hand

	// The one slot is busy, so the worker is not popping; after the
	// cancellation it must not pop again.
	b.pushJob(t, "after-stop", srv.URL+"/slow", time.Now().Add(time.Hour))
	select {
	case <-b.done:
		t.Fatal("Run returned with a job in hand")
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	b.stop(t)

	res := b.nextResult(t)
	require.Equal(t, redisio.Result{UID: "slow", AttemptUID: "att-slow", Type: redisio.ResultSuccess, Status: "fetched"}, res)
	n, err := b.rdb.LLen(context.Background(), b.cfg.Input).Result()
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "the job pushed after the stop is left for another worker")
}
