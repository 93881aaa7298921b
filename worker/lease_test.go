package worker

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/redisio"
)

// slowBody serves a body in pieces, one every 100ms, until release is
// closed: a large download in progress.
func slowBody(t *testing.T, release <-chan struct{}) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for {
			io.WriteString(w, "row\n")
			w.(http.Flusher).Flush()
			select {
			case <-release:
				return
			case <-r.Context().Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// While a download runs, the worker asks for its lease again every
// lease/3 (here 1s of 3s), and stops asking once the download is done:
// the success is the last message.
func TestWorkerExtendsWhileDownloading(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := slowBody(t, release)
	b := setupRun(t, func(c *Config) { c.Lease = 3 * time.Second })
	b.pushJob(t, "big", srv.URL+"/export.csv", time.Now().Add(3*time.Second))

	for range 2 {
		require.Equal(t, redisio.Result{UID: "big", AttemptUID: "att-big", Type: redisio.ResultExtend, Seconds: 3}, b.nextResult(t))
	}
	close(release)
	res := b.nextResult(t)
	require.Equal(t, redisio.ResultSuccess, res.Type, "%+v", res)
	time.Sleep(1500 * time.Millisecond) // more than one request's period: nothing may come (an absence)
	n, err := b.rdb.LLen(context.Background(), b.cfg.Output).Result()
	require.NoError(t, err)
	require.Zero(t, n, "no request for more time after the result")
}

// When the service answers that the attempt is over (it timed out before
// a request was applied), the worker stops the download and drops the job:
// no result, no more requests.
func TestWorkerStopsWhenItsAttemptIsOver(t *testing.T) {
	t.Parallel()
	srv := slowBody(t, make(chan struct{}))
	b := setupRun(t, func(c *Config) { c.Lease = 600 * time.Millisecond })
	b.pushJob(t, "big", srv.URL+"/export.csv", time.Now().Add(time.Minute))

	require.Equal(t, redisio.Result{UID: "big", AttemptUID: "att-big", Type: redisio.ResultExtend, Seconds: 1}, b.nextResult(t))
	lists := redisio.Lists{Output: b.cfg.Output}
	require.NoError(t, redisio.New(b.rdb).WriteLeases(context.Background(), lists,
		[]redisio.LeaseAnswer{{AttemptUID: "att-big"}}, time.Now()))

	testenv.Eventually(t, 10*time.Second, "the job dropped", func() bool { return b.worker.Stats().Expired == 1 })
	b.rdb.Del(context.Background(), b.cfg.Output) // a request may have crossed the answer
	time.Sleep(600 * time.Millisecond)            // three request periods: nothing may come (an absence, not a condition to wait for)
	n, err := b.rdb.LLen(context.Background(), b.cfg.Output).Result()
	require.NoError(t, err)
	require.Zero(t, n, "neither a result nor a request after the attempt is over")
	require.Zero(t, b.worker.Stats().Done)
}

// A negative Lease never asks for more time; a zero Lease asks for the
// time the job had left (here about 1.2s, so every 400ms).
func TestWorkerLeaseOffAndDerived(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		lease   time.Duration
		extends bool
	}{{-1, false}, {0, true}} {
		release := make(chan struct{})
		srv := slowBody(t, release)
		b := setupRun(t, func(c *Config) { c.Lease = tc.lease })
		b.pushJob(t, "big", srv.URL+"/export.csv", time.Now().Add(1200*time.Millisecond))
		time.AfterFunc(time.Second, func() { close(release) })
		res := b.nextResult(t)
		if tc.extends {
			require.Equal(t, redisio.Result{UID: "big", AttemptUID: "att-big", Type: redisio.ResultExtend, Seconds: 2}, res)
		} else {
			require.Equal(t, redisio.ResultSuccess, res.Type, "lease %s: %+v", tc.lease, res)
		}
	}
}

// A result whose push fails after the job's first timeout_at, in an
// attempt the service extended beyond it, is retried until the lease's
// end: the push's expiry is the last timeout_at the service answered, not
// the job's.
func TestWorkerPushRetriesUntilTheLeaseEnds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	release := make(chan struct{})
	srv := slowBody(t, release)
	b := setupRun(t, func(c *Config) { c.Lease = 3 * time.Second })
	timeoutAt := time.Now().Add(1500 * time.Millisecond)
	b.pushJob(t, "big", srv.URL+"/export.csv", timeoutAt)

	require.Equal(t, redisio.Result{UID: "big", AttemptUID: "att-big", Type: redisio.ResultExtend, Seconds: 3}, b.nextResult(t))
	lists := redisio.Lists{Output: b.cfg.Output}
	require.NoError(t, redisio.New(b.rdb).WriteLeases(ctx, lists,
		[]redisio.LeaseAnswer{{AttemptUID: "att-big", Running: true, TimeoutAt: time.Now().Add(time.Minute)}}, time.Now()))

	// The job's first timeout_at passes while the download runs; then Redis
	// refuses the result's push (the output key holds a string) for a while.
	time.Sleep(time.Until(timeoutAt) + 100*time.Millisecond)
	require.NoError(t, b.rdb.Set(ctx, b.cfg.Output, "not a list", 0).Err())
	close(release)
	time.Sleep(500 * time.Millisecond) // the first push fails meanwhile (nothing to wait for: it leaves no trace)
	require.NoError(t, b.rdb.Del(ctx, b.cfg.Output).Err())

	res := b.nextResult(t)
	for res.Type == redisio.ResultExtend {
		res = b.nextResult(t)
	}
	require.Equal(t, redisio.ResultSuccess, res.Type, "%+v", res)
	require.Zero(t, b.worker.Stats().Lost)
}
