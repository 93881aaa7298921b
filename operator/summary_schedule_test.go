package operator

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/schedule"
)

// A spread kind's timeline shows the row's offset and spread times; a row
// due for longer than the catchup window says what the dispatcher will do.
func TestTimelineSpreadAndMisfire(t *testing.T) {
	t.Parallel()
	sched, err := schedule.Parse("DTSTART:20260101T140000Z\nRRULE:FREQ=DAILY")
	require.NoError(t, err)
	k := &Kind{Name: "feeds", Schedule: sched, Policy: policy.Policy{Kind: "feeds",
		Spread: policy.Spread{Window: 10 * time.Minute}, Catchup: policy.Catchup{Window: time.Hour}}}
	now := time.Date(2026, 6, 13, 16, 0, 0, 0, time.UTC)

	planned := models.Row{Key: "42", State: policy.State{RefreshAt: time.Date(2026, 6, 14, 14, 9, 0, 0, time.UTC),
		LastSuccessAt: time.Date(2026, 6, 13, 14, 9, 5, 0, time.UTC)}}
	tl := heldTimeline(k, planned, now, time.Time{})
	require.Equal(t, 540.0, *tl.SpreadOffsetSeconds, "feeds/42 in 10m")
	require.Equal(t, time.Date(2026, 6, 14, 14, 9, 0, 0, time.UTC), tl.Occurrences[0])
	require.True(t, tl.NextIsPlanned, "14:09 is the row's planned run")
	require.Empty(t, tl.Misfire)
	require.Equal(t, "refreshed at 14:09; next refresh at Jun 14 14:09, a planned run of the schedule (UTC)", summary(planned, tl, now, time.Minute, false))

	down := models.Row{Key: "42", State: policy.State{RefreshAt: time.Date(2026, 6, 10, 14, 9, 0, 0, time.UTC)}}
	tl = heldTimeline(k, down, now, time.Time{})
	require.Equal(t, "skip", tl.Misfire)
	require.Equal(t, "never refreshed yet; due since Jun 10 14:09, late by 73h51m; longer than the catchup window: it will not start late but wait for its next occurrence (UTC)",
		summary(down, tl, now, time.Minute, false))
	k.Policy.Catchup.Misfire = policy.MisfireRunOnce
	tl = heldTimeline(k, down, now, time.Time{})
	require.Equal(t, "run_once", tl.Misfire)
	require.Contains(t, summary(down, tl, now, time.Minute, false), "longer than the catchup window: it will start once (misfire run_once)")

	// Within the window, or without spread: nothing extra.
	k.Policy = policy.Policy{Kind: "feeds"}
	tl = heldTimeline(k, down, now, time.Time{})
	require.Nil(t, tl.SpreadOffsetSeconds)
	require.Empty(t, tl.Misfire)
}
