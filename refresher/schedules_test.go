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
