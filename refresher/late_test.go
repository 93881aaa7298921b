package refresher

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
)

// A result read at or after its attempt's timeout_at (by the service's
// clock) is not applied: the poller ends the attempt as timed out, exactly as
// the dispatcher would, and the result counts as stale. The dispatcher is
// held after its first pass, so the late results reach the poller before the
// dispatcher has seen the timeouts.
func TestLateResultEndsAttemptAsTimedOut(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{timeout: time.Hour, retry: "delays:1h"})
	b.insert("ontime", "success", "permanent", "status")
	firstPass, release := make(chan struct{}), make(chan struct{})
	svc := b.start(func(c *Config) {
		c.Observer.AfterDispatch = func(_ string, started int) {
			if started > 0 {
				close(firstPass)
				<-release // held until the test ends
			}
		}
	})
	t.Cleanup(func() { close(release) }) // runs before the service's cleanup stops it
	select {
	case <-firstPass:
	case <-time.After(10 * time.Second):
		t.Fatal("the dispatcher did not start the attempts within 10s")
	}
	jobs := map[string]redisio.Job{}
	for _, j := range b.popJobs(4) {
		jobs[j.UID] = j
	}
	timeoutAt := t0.Add(time.Hour)
	require.True(t, jobs["ontime"].TimeoutAt.Equal(timeoutAt))

	// 1µs before timeout_at: applied.
	b.clock.Advance(time.Hour - time.Microsecond)
	b.send(redisio.Result{UID: "ontime", AttemptUID: jobs["ontime"].AttemptUID, Type: "success"})
	st := b.waitFor("ontime", "success applied", func(s policy.State) bool { return !s.Running() })
	require.True(t, st.LastSuccessAt.Equal(timeoutAt.Add(-time.Microsecond)))
	require.True(t, st.RefreshAt.Equal(t0.Add(4*time.Hour)), "next occurrence, 14:00")

	// At timeout_at: late, whatever the result says.
	b.clock.Advance(time.Microsecond)
	b.send(redisio.Result{UID: "success", AttemptUID: jobs["success"].AttemptUID, Type: "success", Status: "fetched 1234 bytes"})
	b.send(redisio.Result{UID: "permanent", AttemptUID: jobs["permanent"].AttemptUID, Type: "failure", Permanent: true, Reason: "HTTP 404"})
	b.send(redisio.Result{UID: "status", AttemptUID: jobs["status"].AttemptUID, Type: "status", Status: "importing 99%"})
	waitCounter(t, func() float64 { return decisions(svc, "retry", "timeout") }, 3, "late results end their attempts as timed out")
	for _, uid := range []string{"success", "permanent", "status"} {
		require.Equal(t, policy.State{
			RefreshAt:    timeoutAt.Add(time.Hour), // delays:1h, before the 14:00 occurrence
			AttemptAt:    t0,
			AttemptNo:    1,
			FailingSince: t0,
			LastError:    "timed out after 1h",
		}, b.state(uid), uid)
	}
	for _, typ := range []string{"success", "failure", "status"} {
		require.Equal(t, 1.0, results(svc, typ, "stale")(), "a late %s counts as stale", typ)
	}
	require.Zero(t, decisions(svc, "disabled", "worker"), "the late permanent failure disabled nothing")
	require.Equal(t, 1.0, results(svc, "success", "applied")(), "the one on time")
}
