package refresher

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
)

// The service's Redis loses the reply of the dispatcher's push and of the
// poller's Ack after Redis ran them, and go-redis sends each again (Open's
// default MaxRetries). The push queues each job twice: the copies carry the
// same attempt UID, so of the results a worker sends for them (or a
// worker's own push sent twice) one is applied and the other is stale. The
// Ack sent again reports success, so the batch is counted for the charts
// once; it used to report the batch taken back, and its counts were lost.
func TestLostRepliesApplyEachResultOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{timeout: time.Hour, retry: "delays:1h"})
	b.insert("m1", "m2")
	p, u := testenv.RedisProxy(t)
	rdb, err := redisio.Open(context.Background(), u, redisio.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rdb.Close() })
	b.rio = redisio.New(rdb)
	pushLost := p.LoseReply(func(a []string) bool { return len(a) > 1 && a[0] == "rpush" && a[1] == b.kind.Lists.Input })
	processing := b.kind.Lists.Processing(b.cfg.InstanceID)
	// The Ack script is the one with 4 keys, the processing list first.
	ackLost := p.LoseReply(func(a []string) bool { return len(a) > 3 && a[0] == "evalsha" && a[2] == "4" && a[3] == processing })
	svc := b.start(nil)

	jobs := b.popJobs(4)
	attempts := map[string]string{}
	var rs []redisio.Result
	for _, j := range jobs {
		if a, ok := attempts[j.UID]; ok {
			require.Equal(t, a, j.AttemptUID, "the copies of a job carry one attempt")
		}
		attempts[j.UID] = j.AttemptUID
		r := redisio.Result{UID: j.UID, AttemptUID: j.AttemptUID, Type: "success"}
		if j.UID == "m2" {
			r.Type, r.Reason = "failure", "HTTP 503"
		}
		rs = append(rs, r)
	}
	require.Len(t, attempts, 2, "each job queued twice")
	<-pushLost
	b.sendAll(rs...)
	waitCounter(t, results(svc, "success", "stale"), 1, "the second success is stale")
	waitCounter(t, results(svc, "failure", "stale"), 1, "the second failure is stale")
	require.Equal(t, 1.0, results(svc, "success", "applied")())
	require.Equal(t, 1.0, results(svc, "failure", "applied")())
	<-ackLost
	require.True(t, b.state("m1").LastSuccessAt.Equal(t0))
	require.Equal(t, policy.State{RefreshAt: t0.Add(time.Hour), AttemptAt: t0, AttemptNo: 1, FailingSince: t0, LastError: "HTTP 503"}, b.state("m2"))

	minute := b.clock.Now().Unix() / 60
	want := redisio.StatsCount{Dispatched: 4, Applied: 2, Failed: 1} // the push counted twice
	testenv.EventuallyNil(t, 5*time.Second, "the minute's stats", func() error {
		pts, err := b.rio.ReadStats(context.Background(), []redisio.Lists{b.kind.Lists}, false, minute, 1)
		if err != nil {
			return err
		}
		if got := pts[0][0].StatsCount; got != want {
			return fmt.Errorf("got %+v, want %+v", got, want)
		}
		return nil
	})
}
