package worker

import (
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/redisio"
)

// The worker's Redis loses the reply of one command after Redis ran it, and
// go-redis, with the options redisio.Open gives it (as `refresher worker`
// opens its Redis), sends it again: see docs/protocol.md, "When a reply is
// lost".

// lossyRun starts a worker whose Redis is behind a proxy (see setupRun)
// and returns the proxy, armed by arm before the worker starts.
func lossyRun(t *testing.T, arm func(p *testenv.Proxy, cfg Config), edit func(*Config)) *runBundle {
	t.Helper()
	p, u := testenv.RedisProxy(t)
	rdb, err := redisio.Open(t.Context(), u, redisio.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rdb.Close() })
	return setupRun(t, func(c *Config) {
		c.Redis = rdb
		if edit != nil {
			edit(c)
		}
		arm(p, *c)
	})
}

// queuedLossyRun queues the jobs 1, 2 and 3, then starts a worker of
// concurrency 3 on them (see lossyRun) whose Redis loses the reply of the
// command that lost(its config) matches; done is closed once it did.
func queuedLossyRun(t *testing.T, srv *httptest.Server, lost func(Config) func([]string) bool) (b *runBundle, rdb *redis.Client, done <-chan struct{}) {
	t.Helper()
	rdb, prefix := testenv.Redis(t)
	require.NoError(t, popScript.Load(t.Context(), rdb).Err()) // so that EVALSHA runs it
	input := prefix + "big_tables-input"
	for _, uid := range []string{"1", "2", "3"} {
		pushJobTo(t, rdb, input, uid, srv.URL+"/ok", time.Now().Add(time.Hour))
	}
	b = lossyRun(t, func(p *testenv.Proxy, c Config) { done = p.LoseReply(lost(c)) },
		func(c *Config) { c.Input, c.Concurrency = input, 3 })
	return b, rdb, done
}

// A result push sent again queues the result twice; the service applies
// the first and counts the second as stale (refresher's
// TestLostRepliesApplyEachResultOnce).
func TestWorkerResultPushReplyLost(t *testing.T) {
	t.Parallel()
	srv, _ := testServer(t)
	var done <-chan struct{}
	b := lossyRun(t, func(p *testenv.Proxy, c Config) {
		done = p.LoseReply(func(a []string) bool { return len(a) > 1 && a[0] == "rpush" && a[1] == c.Output })
	}, nil)
	b.pushJob(t, "ok", srv.URL+"/ok", time.Now().Add(time.Hour))
	first, second := b.nextResult(t), b.nextResult(t)
	<-done
	require.Equal(t, first, second)
	require.Equal(t, redisio.Result{UID: "ok", AttemptUID: "att-ok", Type: redisio.ResultSuccess, Status: "fetched"}, first)
	b.stop(t)
	require.Equal(t, Stats{Done: 1}, b.worker.Stats())
}

// The pop of more jobs after the BLPOP sent again returns the jobs its
// first run popped, kept under its receipt, and pops nothing more: none is
// lost. The next pop of more deletes the receipt; it expires meanwhile.
func TestWorkerPopMoreReplyLost(t *testing.T) {
	t.Parallel()
	srv, _ := testServer(t)
	b, rdb, done := queuedLossyRun(t, srv, func(Config) func([]string) bool {
		return func(a []string) bool { return len(a) > 1 && a[0] == "evalsha" && a[1] == popScript.Hash() }
	})
	got := map[string]bool{}
	for range 3 {
		got[b.nextResult(t).UID] = true
	}
	<-done
	require.Equal(t, map[string]bool{"1": true, "2": true, "3": true}, got)
	b.pushJob(t, "4", srv.URL+"/ok", time.Now().Add(time.Hour))
	require.Equal(t, "4", b.nextResult(t).UID)
	b.stop(t)
	require.Equal(t, Stats{Done: 4}, b.worker.Stats())
	for _, k := range rdb.Keys(t.Context(), b.cfg.Input+":pop:*").Val() { // the last, until the next pop of more
		ttl := rdb.PTTL(t.Context(), k).Val()
		require.True(t, ttl > 0 && ttl <= popReceiptTTL, "receipt %s lives %s", k, ttl)
	}
}

// A BLPOP whose reply is lost loses the job Redis popped for it, as a
// worker killed holding it would: the BLPOP sent again takes the next one,
// and the lost job's attempt times out at the service, which retries it.
// The worker goes on.
func TestWorkerBlockingPopReplyLost(t *testing.T) {
	t.Parallel()
	srv, _ := testServer(t)
	b, rdb, done := queuedLossyRun(t, srv, func(c Config) func([]string) bool {
		return func(a []string) bool { return len(a) > 1 && a[0] == "blpop" && a[1] == c.Input }
	})
	got := map[string]bool{}
	for range 2 {
		got[b.nextResult(t).UID] = true
	}
	<-done
	require.Equal(t, map[string]bool{"2": true, "3": true}, got)
	b.stop(t)
	require.Equal(t, Stats{Done: 2}, b.worker.Stats(), "job 1 was lost")
	require.Zero(t, rdb.LLen(t.Context(), b.cfg.Output).Val())
}

// Each pop of more jobs deletes the receipt of the one before.
func TestPopDeletesTheLastReceipt(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	input := prefix + "in"
	for i := range 6 {
		pushJobTo(t, rdb, input, strconv.Itoa(i), "https://example.com/", time.Now().Add(time.Hour))
	}
	w, err := New(Config{Kind: "k", Redis: rdb, Input: input, Output: prefix + "out", Logger: quietLogger()})
	require.NoError(t, err)
	for range 2 {
		msgs, err := w.pop(t.Context(), 3)
		require.NoError(t, err)
		require.Len(t, msgs, 3)
	}
	require.Equal(t, []string{redisio.PopReceipt(input, w.popper, 2)}, rdb.Keys(t.Context(), input+":pop:*").Val())
}
