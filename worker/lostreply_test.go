package worker

import (
	"testing"
	"time"

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

// A pop whose reply is lost loses the jobs Redis popped for it, as a worker
// killed holding them would: the pop sent again takes the next ones, and the
// lost jobs' attempts time out at the service, which retries them. The
// worker goes on.
func TestWorkerPopReplyLost(t *testing.T) {
	t.Parallel()
	srv, _ := testServer(t)
	rdb, prefix := testenv.Redis(t)
	input := prefix + "big_tables-input"
	future := time.Now().Add(time.Hour)
	for _, uid := range []string{"1", "2", "3"} {
		pushJobTo(t, rdb, input, uid, srv.URL+"/ok", future)
	}
	var done <-chan struct{}
	b := lossyRun(t, func(p *testenv.Proxy, c Config) {
		// The LPOP after the BLPOP: jobs 2 and 3.
		done = p.LoseReply(func(a []string) bool { return len(a) > 1 && a[0] == "lpop" && a[1] == c.Input })
	}, func(c *Config) { c.Input, c.Concurrency = input, 3 })
	require.Equal(t, "1", b.nextResult(t).UID)
	<-done
	b.pushJob(t, "4", srv.URL+"/ok", future)
	require.Equal(t, "4", b.nextResult(t).UID)
	b.stop(t)
	require.Equal(t, Stats{Done: 2}, b.worker.Stats(), "jobs 2 and 3 were lost")
	require.Zero(t, rdb.LLen(t.Context(), b.cfg.Output).Val())
}
