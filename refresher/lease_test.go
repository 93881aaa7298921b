package refresher

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/internal/teststore"
	"github.com/refresher/refresher/redisio"
)

// waitLease waits up to 10s for an answer to attempt's last request for
// more time that cond accepts.
func (b *testBundle) waitLease(attempt string, cond func(redisio.LeaseAnswer) bool) redisio.LeaseAnswer {
	b.t.Helper()
	var a redisio.LeaseAnswer
	testenv.EventuallyNil(b.t, 10*time.Second, "the lease answer of attempt "+attempt, func() error {
		var ok bool
		var err error
		a, ok, err = redisio.ReadLease(context.Background(), b.rdb, b.kind.Lists, attempt)
		switch {
		case err != nil:
			return err
		case !ok:
			return fmt.Errorf("no answer")
		case !cond(a):
			return fmt.Errorf("answer %+v", a)
		}
		return nil
	})
	return a
}

// The fault run of leases: workers extend their attempts and are killed
// (they never send another word). Nothing is lost: each attempt times out
// at its lease's end, not at the kind's timeout and not later, and is
// retried; the dead workers' late requests are answered as over. Half the
// workers ask for 30m at 10:50 (their lease ends at 11:20), the others for
// 5h, which max_timeout (3h from the 10:00 start) caps at 13:00.
func TestKilledWorkersWithExtendedLeasesLoseNothing(t *testing.T) {
	t.Parallel()
	forEachStore(t, teststore.Servers, func(t *testing.T, store string) {
		b := setup(t, setupOpts{store: store, timeout: time.Hour, retry: "delays:0s,1m"})
		const n = 20
		uids := make([]string, n)
		for i := range uids {
			uids[i] = fmt.Sprintf("m%02d", i)
		}
		b.insert(uids...)
		svc := b.start(func(c *Config) { c.Kinds[0].Policy.MaxTimeout = 3 * time.Hour })
		jobs := map[string]redisio.Job{}
		for _, j := range b.popJobs(n) {
			jobs[j.UID] = j
		}
		short, long := uids[:n/2], uids[n/2:]

		b.clock.Advance(50 * time.Minute) // 10:50
		var asks []redisio.Result
		for _, uid := range short {
			asks = append(asks, redisio.Result{UID: uid, AttemptUID: jobs[uid].AttemptUID, Type: redisio.ResultExtend, Seconds: 1800})
		}
		for _, uid := range long {
			asks = append(asks, redisio.Result{UID: uid, AttemptUID: jobs[uid].AttemptUID, Type: redisio.ResultStatus, Status: "downloading", Seconds: 5 * 3600})
		}
		b.sendAll(asks...)
		shortEnd, longEnd := t0.Add(80*time.Minute), t0.Add(3*time.Hour)
		for _, uid := range short {
			a := b.waitLease(jobs[uid].AttemptUID, func(redisio.LeaseAnswer) bool { return true })
			require.Equal(t, redisio.LeaseAnswer{AttemptUID: jobs[uid].AttemptUID, Running: true, TimeoutAt: shortEnd}, a, uid)
		}
		for _, uid := range long {
			a := b.waitLease(jobs[uid].AttemptUID, func(redisio.LeaseAnswer) bool { return true })
			require.Equal(t, redisio.LeaseAnswer{AttemptUID: jobs[uid].AttemptUID, Running: true, TimeoutAt: longEnd, Capped: "max_timeout"}, a, uid)
		}
		for uid, st := range b.states(uids) {
			end := shortEnd
			if st.Status == "downloading" {
				end = longEnd
			}
			require.True(t, st.TimeoutAt.Equal(end) && st.RefreshAt.Equal(end), "%s: %+v", uid, st)
		}

		// The kind's timeout (11:00) and the last instant of the short leases
		// pass: nothing is taken back.
		b.clock.Advance(10 * time.Minute)
		b.noJob()
		b.clock.Advance(20*time.Minute - time.Microsecond)
		b.noJob()

		// 11:20: the short leases end; each attempt times out and is retried.
		b.clock.Advance(time.Microsecond)
		retried := map[string]redisio.Job{}
		for _, j := range b.popJobs(n / 2) {
			retried[j.UID] = j
		}
		b.noJob()
		for _, uid := range short {
			require.Equal(t, 2, retried[uid].AttemptNo, uid)
			st := b.state(uid)
			require.Equal(t, "timed out after 1h20m (lease extended)", st.LastError, uid)
			require.Equal(t, retried[uid].AttemptUID, st.AttemptUID, uid)
		}

		// A killed worker's request that was still queued comes too late: it
		// changes nothing and is answered as over.
		dead := short[0]
		b.send(redisio.Result{UID: dead, AttemptUID: jobs[dead].AttemptUID, Type: redisio.ResultExtend, Seconds: 1800})
		a := b.waitLease(jobs[dead].AttemptUID, func(a redisio.LeaseAnswer) bool { return !a.Running })
		require.Equal(t, redisio.LeaseAnswer{AttemptUID: jobs[dead].AttemptUID}, a)
		require.Equal(t, retried[dead].AttemptUID, b.state(dead).AttemptUID)
		require.Equal(t, 1.0, results(svc, redisio.ResultExtend, "stale")())

		// 13:00: the capped leases end.
		b.clock.Advance(100*time.Minute - time.Microsecond)
		b.noJob()
		b.clock.Advance(time.Microsecond)
		for _, j := range b.popJobs(n / 2) {
			retried[j.UID] = j
		}
		for _, uid := range long {
			require.Equal(t, 2, retried[uid].AttemptNo, uid)
			st := b.state(uid)
			require.Equal(t, "timed out after 3h (lease extended)", st.LastError, uid)
			require.Equal(t, retried[uid].AttemptUID, st.AttemptUID, uid)
		}
		require.Equal(t, float64(n), decisions(svc, "retry", "timeout"), "every attempt timed out once")
		require.Equal(t, float64(n/2), results(svc, redisio.ResultExtend, "applied")())
		require.Equal(t, float64(n/2), results(svc, redisio.ResultStatus, "applied")())
	})
}

// TestLeaseBoundariesOnEachStore runs the boundaries the fault run leaves
// out through the service, on the fake clock: a request capped by the
// row's next planned occurrence (14:00, before max_timeout's 16:00) is
// answered with that cap; a request read just after the attempt's
// timeout_at extends nothing: the attempt ends as timed out and the answer
// says it is over.
func TestLeaseBoundariesOnEachStore(t *testing.T) {
	t.Parallel()
	forEachStore(t, teststore.Servers, func(t *testing.T, store string) {
		b := setup(t, setupOpts{store: store, timeout: time.Hour, retry: "delays:1m"})
		b.insert("capped", "late")
		b.start(func(c *Config) { c.Kinds[0].Policy.MaxTimeout = 6 * time.Hour })
		jobs := map[string]redisio.Job{}
		for _, j := range b.popJobs(2) {
			jobs[j.UID] = j
		}

		b.clock.Advance(50 * time.Minute) // 10:50
		b.send(redisio.Result{UID: "capped", AttemptUID: jobs["capped"].AttemptUID, Type: redisio.ResultExtend, Seconds: 5 * 3600})
		a := b.waitLease(jobs["capped"].AttemptUID, func(redisio.LeaseAnswer) bool { return true })
		require.Equal(t, redisio.LeaseAnswer{AttemptUID: jobs["capped"].AttemptUID, Running: true,
			TimeoutAt: t0.Add(4 * time.Hour), Capped: "next_occurrence"}, a)
		st := b.state("capped")
		require.True(t, st.TimeoutAt.Equal(t0.Add(4*time.Hour)) && st.RefreshAt.Equal(st.TimeoutAt), "%+v", st)

		// 11:00 and a microsecond: "late"'s timeout_at (11:00) has passed
		// when its request is read.
		b.clock.Advance(10*time.Minute + time.Microsecond)
		b.send(redisio.Result{UID: "late", AttemptUID: jobs["late"].AttemptUID, Type: redisio.ResultExtend, Seconds: 1800})
		a = b.waitLease(jobs["late"].AttemptUID, func(redisio.LeaseAnswer) bool { return true })
		require.Equal(t, redisio.LeaseAnswer{AttemptUID: jobs["late"].AttemptUID}, a, "answered as over")
		st = b.state("late")
		require.NotEqual(t, jobs["late"].AttemptUID, st.AttemptUID, "the attempt is over: %+v", st)
		require.Equal(t, "timed out after 1h", st.LastError)
		require.False(t, st.TimeoutAt.After(t0.Add(time.Hour+time.Minute+time.Microsecond)), "not extended: %+v", st)
	})
}
