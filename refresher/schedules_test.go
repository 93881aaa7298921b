package refresher

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/schedule"
)

// A row's schedule is spread by its own offset, its own refresh_rrule too
// unless the kind says spread_own_rules: false.
func TestSchedulesSpreadRows(t *testing.T) {
	t.Parallel()
	def, err := schedule.Parse(dailyAt14)
	require.NoError(t, err)
	own := "DTSTART:20260101T150000Z\nRRULE:FREQ=DAILY"
	next := func(s *schedules, key, rule string) time.Time {
		n, err := s.get(key, rule)
		require.NoError(t, err)
		return n.Next(t0)
	}
	at := func(h, m, sec int) time.Time { return time.Date(2026, 11, 21, h, m, sec, 0, time.UTC) }

	plain := newSchedules(Kind{Name: "items", Schedule: def})
	require.Equal(t, at(14, 0, 0), next(&plain, "m1", ""))
	require.Equal(t, at(15, 0, 0), next(&plain, "m1", own))

	// m1: 91s, m2: 302s in "items" with a 10m window.
	spread := newSchedules(Kind{Name: "items", Schedule: def, Policy: policy.Policy{Spread: policy.Spread{Window: 10 * time.Minute}}})
	require.Equal(t, at(14, 1, 31), next(&spread, "m1", ""))
	require.Equal(t, at(14, 5, 2), next(&spread, "m2", ""))
	require.Equal(t, at(15, 1, 31), next(&spread, "m1", own))
	require.Equal(t, at(14, 1, 31), next(&spread, "m1", ""), "the memo does not mix rows")

	notOwn := newSchedules(Kind{Name: "items", Schedule: def,
		Policy: policy.Policy{Spread: policy.Spread{Window: 10 * time.Minute, SkipOwnRules: true}}})
	require.Equal(t, at(14, 1, 31), next(&notOwn, "m1", ""))
	require.Equal(t, at(15, 0, 0), next(&notOwn, "m1", own), "spread_own_rules: false")
}

// A row whose next occurrence lies beyond the engine's horizon: the row's
// schedule, memoised and spread or not, reports schedule.ErrTooFar, so a
// success disables the row with a plain reason instead of leaving it with
// nothing planned as if its rule had ended.
func TestSchedulesReportTooFar(t *testing.T) {
	t.Parallel()
	// The grid moves back 1 s a day: 00:00:00 on 2024-01-02, then after
	// 86,399 days (schedule's TestNextCheckedTooFar).
	rule := "DTSTART:20240101T000001Z\nRRULE:FREQ=SECONDLY;INTERVAL=86399;BYHOUR=0;BYMINUTE=0;BYSECOND=0"
	now := time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)
	def, err := schedule.Parse(dailyAt14)
	require.NoError(t, err)
	for _, w := range []time.Duration{0, 10 * time.Minute} {
		s := newSchedules(Kind{Name: "items", Schedule: def, Policy: policy.Policy{Spread: policy.Spread{Window: w}}})
		n, err := s.get("m1", rule)
		require.NoError(t, err)
		c, ok := n.(policy.CheckedNexter)
		require.True(t, ok, "spread %s: the row's schedule tells how its rule ends", w)
		for range 2 { // the memo keeps the error
			next, err := c.NextChecked(now)
			require.ErrorIs(t, err, schedule.ErrTooFar, "spread %s", w)
			require.True(t, next.IsZero())
		}

		st := policy.State{AttemptUID: "a1", AttemptNo: 1, RefreshAt: now.Add(time.Hour), TimeoutAt: now.Add(time.Hour)}
		after, d := policy.Policy{Kind: "items"}.Apply(st, policy.Result{AttemptUID: "a1", Type: policy.ResultSuccess}, now, n, nil, 0)
		require.True(t, d.InvalidSchedule, "spread %s", w)
		require.Equal(t, "Invalid refresh schedule: "+schedule.ErrTooFar.Error(), after.DisabledReason)
		require.True(t, after.RefreshAt.IsZero())
		require.Equal(t, now, after.LastSuccessAt, "the success itself is kept")
	}
}
