package policy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSimulateOccurrences(t *testing.T) {
	t.Parallel()

	sim := Simulate(dailyAt{hour: 14}, Policy{}, SimulateOptions{From: at("2025-06-10T14:00:00Z"), Occurrences: 3})
	require.Equal(t, []time.Time{at("2025-06-11T14:00:00Z"), at("2025-06-12T14:00:00Z"), at("2025-06-13T14:00:00Z")}, sim.Occurrences)
	require.Empty(t, sim.Attempts)

	// The rule ends: fewer occurrences.
	sim = Simulate(dailyAt{hour: 14, until: at("2025-06-11T14:00:00Z")}, Policy{}, SimulateOptions{From: at("2025-06-10T12:00:00Z"), Occurrences: 10})
	require.Equal(t, []time.Time{at("2025-06-10T14:00:00Z"), at("2025-06-11T14:00:00Z")}, sim.Occurrences)

	// A Nexter that does not advance cannot hang it.
	sim = Simulate(fixedNexter(at("2025-06-10T12:00:00Z")), Policy{}, SimulateOptions{From: at("2025-06-10T11:00:00Z"), Occurrences: 5})
	require.Equal(t, []time.Time{at("2025-06-10T12:00:00Z")}, sim.Occurrences)
}

// fixedNexter always answers the same time.
type fixedNexter time.Time

func (f fixedNexter) Next(time.Time) time.Time { return time.Time(f) }

func TestSimulateFailures(t *testing.T) {
	t.Parallel()

	// The default policy (0s, 1m, 5m, 15m, 30m, 1h, give up at the 7th), a 1h
	// timeout and a daily 14:00 rule; each attempt fails at once.
	sim := Simulate(dailyAt{hour: 14}, Policy{Kind: "big_tables"}, SimulateOptions{From: at("2025-06-10T12:00:00Z"), Fail: 9})
	type row struct {
		no        int
		started   string
		delay     time.Duration
		branch    Branch
		refreshAt string
	}
	want := []row{
		{1, "2025-06-10T12:00:00Z", 0, BranchRetry, "2025-06-10T12:00:00Z"},
		{2, "2025-06-10T12:00:00Z", time.Minute, BranchRetry, "2025-06-10T12:01:00Z"},
		{3, "2025-06-10T12:01:00Z", 5 * time.Minute, BranchRetry, "2025-06-10T12:06:00Z"},
		{4, "2025-06-10T12:06:00Z", 15 * time.Minute, BranchRetry, "2025-06-10T12:21:00Z"},
		{5, "2025-06-10T12:21:00Z", 30 * time.Minute, BranchRetry, "2025-06-10T12:51:00Z"},
		{6, "2025-06-10T12:51:00Z", time.Hour, BranchPlanned, "2025-06-10T14:00:00Z"}, // 13:51 + 1h > 14:00
		{7, "2025-06-10T14:00:00Z", 0, BranchDisabled, ""},
	}
	require.Len(t, sim.Attempts, len(want)) // stopped early: disabled
	for i, w := range want {
		a := sim.Attempts[i]
		require.Equal(t, w.no, a.AttemptNo, "row %d", i)
		require.Equal(t, at(w.started), a.StartedAt, "row %d", i)
		require.Equal(t, at(w.started), a.FailedAt, "row %d", i)
		require.Equal(t, "simulated failure", a.FailReason)
		require.Equal(t, w.branch, a.Decision.Branch, "row %d", i)
		require.Equal(t, w.delay, a.Decision.Delay, "row %d", i)
		require.Equal(t, w.delay, a.DelayMax, "row %d", i)
		if w.refreshAt == "" {
			require.True(t, a.Decision.RefreshAt.IsZero())
		} else {
			require.Equal(t, at(w.refreshAt), a.Decision.RefreshAt, "row %d", i)
		}
	}
	last := sim.Attempts[6].Decision
	require.True(t, last.GaveUp)
	require.Equal(t, "Cannot refresh big_tables after 7 attempt(s)", last.Reason)
}

func TestSimulateRunAndTimeout(t *testing.T) {
	t.Parallel()

	p := Policy{Timeout: time.Hour, Retry: mustRetry(t, "constant:unit=10m,attempts=3")}
	sim := Simulate(dailyAt{hour: 14}, p, SimulateOptions{From: at("2025-06-10T11:00:00Z"), Fail: 3, Run: 20 * time.Minute})
	require.Len(t, sim.Attempts, 3)
	a := sim.Attempts[0]
	require.Equal(t, at("2025-06-10T11:20:00Z"), a.FailedAt)
	require.Equal(t, at("2025-06-10T11:30:00Z"), a.Decision.RefreshAt) // ends 12:30
	a = sim.Attempts[1]
	require.Equal(t, at("2025-06-10T11:30:00Z"), a.StartedAt)
	require.Equal(t, at("2025-06-10T11:50:00Z"), a.FailedAt)
	require.Equal(t, at("2025-06-10T12:00:00Z"), a.Decision.RefreshAt)
	require.Equal(t, BranchDisabled, sim.Attempts[2].Decision.Branch)

	// Running as long as the timeout: it times out at timeout_at.
	sim = Simulate(dailyAt{hour: 14}, p, SimulateOptions{From: at("2025-06-10T11:00:00Z"), Fail: 1, Run: 3 * time.Hour})
	a = sim.Attempts[0]
	require.Equal(t, at("2025-06-10T12:00:00Z"), a.FailedAt)
	require.Equal(t, "timed out after 1h", a.FailReason)
	require.Equal(t, BranchRetry, a.Decision.Branch) // 12:10 + 1h <= 14:00
	require.Equal(t, at("2025-06-10T12:10:00Z"), a.Decision.RefreshAt)
}

func TestSimulateJitterRange(t *testing.T) {
	t.Parallel()

	p := Policy{Retry: mustRetry(t, "constant:unit=10m,jitter=equal")}
	sim := Simulate(dailyAt{hour: 14}, p, SimulateOptions{From: at("2025-06-10T08:00:00Z"), Fail: 2})
	for _, a := range sim.Attempts {
		require.Equal(t, 5*time.Minute, a.Decision.Delay) // the lower bound
		require.Equal(t, 10*time.Minute, a.DelayMax)
		require.Equal(t, a.FailedAt.Add(5*time.Minute), a.Decision.RefreshAt)
	}
}
