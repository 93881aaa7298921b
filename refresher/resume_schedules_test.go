package refresher

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/schedule"
)

// Resuming plans a row of a spread kind at its own spread occurrence, as
// the dispatcher and the poller plan it, not at the kind's bare occurrence;
// a row's own rule is spread too unless the kind skips own rules; a rule
// that does not parse plans nothing.
func TestResumeSchedulesSpread(t *testing.T) {
	daily, err := schedule.Parse("DTSTART:20260101T020000Z\nRRULE:FREQ=DAILY")
	require.NoError(t, err)
	now := time.Date(2026, 3, 4, 1, 0, 0, 0, time.UTC)
	at2 := time.Date(2026, 3, 4, 2, 0, 0, 0, time.UTC)
	at3 := time.Date(2026, 3, 4, 3, 0, 0, 0, time.UTC)
	spread := policy.Spread{Window: time.Hour}
	off := policy.SpreadOffset("items", "m1", time.Hour)
	require.NotZero(t, off, "the test needs a row with an offset")
	own := "DTSTART:20260101T030000Z\nRRULE:FREQ=DAILY"

	next := func(s policy.Spread, key, rule string) time.Time {
		t.Helper()
		n := ResumeSchedules("items", daily, s)(key, rule)
		require.NotNil(t, n)
		return n.Next(now)
	}
	require.Equal(t, at2.Add(off), next(spread, "m1", ""), "kind's rule, spread")
	require.Equal(t, at2, next(policy.Spread{}, "m1", ""), "no spread")
	require.Equal(t, at3.Add(off), next(spread, "m1", own), "own rule, spread")
	require.Equal(t, at3, next(policy.Spread{Window: time.Hour, SkipOwnRules: true}, "m1", own), "own rule, not spread")
	require.Nil(t, ResumeSchedules("items", daily, spread)("m1", "RRULE:NOPE"), "a rule that does not parse")
	require.Nil(t, ResumeSchedules("items", nil, spread)("m1", ""), "no rule at all")
}
