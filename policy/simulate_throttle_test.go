package policy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// everyTenMinutes is a schedule for the tests: :00, :10, :20, ... UTC.
type everyTenMinutes struct{}

func (everyTenMinutes) Next(after time.Time) time.Time {
	return after.Truncate(10 * time.Minute).Add(10 * time.Minute)
}

// TestSimulateThrottled: each step of a throttled answer, exactly: the hold,
// the attempt that does not count, a row of the group held inside the
// hold, and the next start at the hold's end as attempt 1 again.
func TestSimulateThrottled(t *testing.T) {
	t.Parallel()
	p := Policy{Kind: "feeds", Timeout: time.Hour, Retry: mustRetry(t, "delays:0s,1m"), MaxRetryAfter: 2 * time.Hour}
	from := at("2026-06-10T10:00:00Z")
	tests := []struct {
		name                 string
		run, retryAfter      time.Duration
		outcome              Outcome
		branch               Branch
		hold, refreshAt      time.Time
		heldAt               time.Time
		next                 DueAction
		nextAttempt, afterNo int
	}{
		{name: "15m: held, an occurrence inside is held too", run: 30 * time.Second, retryAfter: 15 * time.Minute,
			outcome: OutcomeApplied, branch: BranchThrottled,
			hold: at("2026-06-10T10:15:30Z"), refreshAt: at("2026-06-10T10:15:30Z"), heldAt: at("2026-06-10T10:10:00Z"),
			next: DueStarted, nextAttempt: 1},
		{name: "5m: no occurrence inside the hold", retryAfter: 5 * time.Minute,
			outcome: OutcomeApplied, branch: BranchThrottled,
			hold: at("2026-06-10T10:05:00Z"), refreshAt: at("2026-06-10T10:05:00Z"),
			next: DueStarted, nextAttempt: 1},
		{name: "capped by max_retry_after", retryAfter: 30 * time.Hour,
			outcome: OutcomeApplied, branch: BranchThrottled,
			hold: at("2026-06-10T12:00:00Z"), refreshAt: at("2026-06-10T12:00:00Z"), heldAt: at("2026-06-10T10:10:00Z"),
			next: DueStarted, nextAttempt: 1},
		{name: "no retry_after: waits 1m, holds no group", retryAfter: 0,
			outcome: OutcomeApplied, branch: BranchThrottled,
			refreshAt: at("2026-06-10T10:01:00Z"), next: DueStarted, nextAttempt: 1},
		{name: "late answer: timed out, counted, no hold", run: time.Hour, retryAfter: 15 * time.Minute,
			outcome: OutcomeLate, branch: BranchPlanned, refreshAt: at("2026-06-10T11:10:00Z"), afterNo: 1,
			next: DueStarted, nextAttempt: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim := SimulateThrottled(everyTenMinutes{}, p, ThrottleOptions{From: from, Run: tt.run, RetryAfter: tt.retryAfter})
			require.Equal(t, DueStarted, sim.Start.Action)
			require.Equal(t, 1, sim.Started.AttemptNo)
			require.Equal(t, from.Add(tt.run), sim.AnsweredAt)
			require.Equal(t, tt.outcome, sim.Answer.Outcome)
			require.Equal(t, tt.branch, sim.Answer.Failure.Branch)
			require.Equal(t, tt.afterNo, sim.After.AttemptNo, "a throttled attempt does not count")
			require.Equal(t, tt.refreshAt, sim.After.RefreshAt)
			require.Equal(t, tt.hold, sim.HoldUntil)
			require.Equal(t, tt.heldAt, sim.HeldAt)
			if !tt.heldAt.IsZero() {
				require.Equal(t, DueHeld, sim.HeldDecision.Action)
				require.Equal(t, State{RefreshAt: tt.hold}, sim.HeldState, "held: refresh_at at the hold's end, no attempt")
			}
			require.Equal(t, tt.next, sim.Next.Action)
			require.Equal(t, tt.nextAttempt, sim.NextState.AttemptNo)
			require.Equal(t, tt.refreshAt, sim.NextState.AttemptAt)
		})
	}
}
