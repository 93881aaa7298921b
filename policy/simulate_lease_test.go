package policy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// An attempt started at 10:00 (timeout 1h, max_timeout 5h, next
// occurrence 14:00) whose worker asks for 30m at 10:50, for 3h at 11:10,
// then dies: its lease ends at 14:00, capped by the next occurrence, where
// it times out. A request read after timeout_at is late: the attempt
// timed out at its timeout_at, and later requests are not read.
func TestSimulateLease(t *testing.T) {
	t.Parallel()
	p := Policy{Timeout: time.Hour, MaxTimeout: 5 * time.Hour}
	sched := dailyAt{hour: 14}
	from := at("2025-06-10T10:00:00Z")
	sim := SimulateLease(sched, p, from, []LeaseAsk{{After: 70 * time.Minute, For: 3 * time.Hour}, {After: 50 * time.Minute, For: 30 * time.Minute}})
	require.Equal(t, at("2025-06-10T11:00:00Z"), sim.Started.TimeoutAt)
	require.Equal(t, at("2025-06-10T14:00:00Z"), sim.NextOccurrence)
	require.Equal(t, []LeaseStep{
		{Ask: LeaseAsk{After: 50 * time.Minute, For: 30 * time.Minute}, At: at("2025-06-10T10:50:00Z"), TimeoutAt: at("2025-06-10T11:20:00Z"),
			Decision: ApplyDecision{Outcome: OutcomeApplied, Extended: true,
				Lease: Lease{Asked: at("2025-06-10T11:20:00Z"), Until: at("2025-06-10T11:20:00Z")}}},
		{Ask: LeaseAsk{After: 70 * time.Minute, For: 3 * time.Hour}, At: at("2025-06-10T11:10:00Z"), TimeoutAt: at("2025-06-10T14:00:00Z"),
			Decision: ApplyDecision{Outcome: OutcomeApplied, Extended: true,
				Lease: Lease{Asked: at("2025-06-10T14:10:00Z"), Until: at("2025-06-10T14:00:00Z"), Cap: LeaseNextOccurrence}}},
	}, sim.Steps)
	require.Equal(t, at("2025-06-10T14:00:00Z"), sim.EndAt)
	require.Equal(t, "timed out after 4h (lease extended)", sim.After.LastError)
	require.Equal(t, BranchRetry, sim.End.Branch)
	require.Equal(t, at("2025-06-10T14:00:00Z"), sim.After.RefreshAt)

	late := SimulateLease(sched, p, from, []LeaseAsk{{After: 90 * time.Minute, For: time.Hour}, {After: 2 * time.Hour, For: time.Hour}})
	require.Len(t, late.Steps, 1, "nothing after the late request")
	require.Equal(t, OutcomeLate, late.Steps[0].Decision.Outcome)
	require.True(t, late.Steps[0].TimeoutAt.IsZero())
	require.Equal(t, at("2025-06-10T11:00:00Z"), late.EndAt, "at its timeout_at, not when the request came")
	require.Equal(t, "timed out after 1h", late.After.LastError)

	none := SimulateLease(sched, p, from, nil)
	require.Empty(t, none.Steps)
	require.Equal(t, at("2025-06-10T11:00:00Z"), none.EndAt)
}
