package refresher

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
)

// The service was down over 3 occurrences of a daily 14:00 rule (Nov 18,
// 19 and 20): the row has been due since Nov 18 14:00 when it comes back at
// t0, Nov 21 10:00, with a catchup window of 1h. With misfire skip none of
// the missed runs happens and the row runs once at the next occurrence;
// with run_once it starts exactly once now. Missed occurrences are never
// run one by one.
func TestMisfireAfterDowntime(t *testing.T) {
	t.Parallel()
	missedSince := time.Date(2026, 11, 18, 14, 0, 0, 0, time.UTC)
	next := time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)
	misfires := func(svc *Service, action policy.Misfire) float64 {
		return testutil.ToFloat64(svc.Metrics().Misfires.WithLabelValues("items", string(action)))
	}
	// down makes a bundle whose row m1 has been due since missedSince.
	down := func(t *testing.T, m policy.Misfire) *testBundle {
		b := setup(t, setupOpts{timeout: time.Hour})
		b.cfg.Kinds[0].Policy.Catchup = policy.Catchup{Window: time.Hour, Misfire: m}
		_, err := b.db.Exec("INSERT INTO items (uid, input_url, refresh_at) VALUES (?, ?, ?)", "m1", "https://example.com/m1", missedSince)
		require.NoError(t, err)
		return b
	}
	// success answers the job and returns the row once it is applied.
	success := func(b *testBundle, j redisio.Job) policy.State {
		b.send(redisio.Result{UID: j.UID, AttemptUID: j.AttemptUID, Type: "success"})
		return b.waitFor(j.UID, "success applied", func(s policy.State) bool { return !s.Running() })
	}

	t.Run("skip", func(t *testing.T) {
		t.Parallel()
		b := down(t, policy.MisfireSkip)
		svc := b.start(nil)
		st := b.waitFor("m1", "moved to the next occurrence", func(s policy.State) bool { return s.RefreshAt.Equal(next) })
		require.Zero(t, st.AttemptNo, "nothing started")
		b.noJob()
		require.Equal(t, 1.0, misfires(svc, policy.MisfireSkip))
		require.Zero(t, misfires(svc, policy.MisfireRunOnce))
		require.Zero(t, testutil.ToFloat64(svc.Metrics().Started.WithLabelValues("items")))

		b.clock.Advance(next.Sub(t0))
		j := b.popJob()
		require.Equal(t, "m1", j.UID)
		st = success(b, j)
		require.True(t, st.RefreshAt.Equal(next.Add(24*time.Hour)), "refresh_at %s", st.RefreshAt)
		b.noJob()
		require.Equal(t, 1.0, testutil.ToFloat64(svc.Metrics().Started.WithLabelValues("items")), "one run in all")
		require.Equal(t, 1.0, misfires(svc, policy.MisfireSkip), "a run on time is no misfire")
	})

	t.Run("run_once", func(t *testing.T) {
		t.Parallel()
		b := down(t, policy.MisfireRunOnce)
		svc := b.start(nil)
		j := b.popJob()
		require.Equal(t, "m1", j.UID)
		require.True(t, j.TimeoutAt.Equal(t0.Add(time.Hour)), "started now, at t0")
		st := success(b, j)
		require.True(t, st.RefreshAt.Equal(next), "then the next occurrence: refresh_at %s", st.RefreshAt)
		b.noJob()
		require.Equal(t, 1.0, testutil.ToFloat64(svc.Metrics().Started.WithLabelValues("items")), "exactly one start")
		require.Equal(t, 1.0, misfires(svc, policy.MisfireRunOnce))
		require.Zero(t, misfires(svc, policy.MisfireSkip))
	})
}
