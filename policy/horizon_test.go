package policy

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var errBeyond = errors.New("the rule's next occurrence lies beyond the horizon")

// beyond is a CheckedNexter whose next occurrence lies beyond what it
// computes: Next reads as "no more", NextChecked says why.
type beyond struct{}

func (beyond) Next(time.Time) time.Time { return time.Time{} }

func (beyond) NextChecked(time.Time) (time.Time, error) { return time.Time{}, errBeyond }

// TestBeyondTheHorizon: every transition that plans a row's next run
// disables a row whose schedule cannot compute it, with the schedule's
// reason; a Nexter without NextChecked, whose Next is zero, still reads as
// a rule that ended (nothing planned, not disabled).
func TestBeyondTheHorizon(t *testing.T) {
	t.Parallel()
	now := at("2026-06-10T10:00:00Z")
	p := Policy{Kind: "feeds", Timeout: time.Hour, Catchup: Catchup{Window: time.Hour, Misfire: MisfireSkip}}
	reason := "Invalid refresh schedule: " + errBeyond.Error()
	running := State{AttemptUID: "a1", AttemptNo: 2, FailingSince: now.Add(-time.Hour), RefreshAt: now.Add(time.Hour), TimeoutAt: now.Add(time.Hour)}
	disabled := State{DisabledAt: now, DisabledReason: reason, LastError: reason, LastSuccessAt: now}

	for _, sched := range []Nexter{beyond{}, Spreaded(beyond{}, 7*time.Minute)} {
		require.Equal(t, disabled, succeed(running, now, sched))

		s, d := p.Apply(running, Result{AttemptUID: "a1", Type: ResultSuccess, Status: "ok"}, now, sched, nil, 0)
		want := disabled
		want.Status = "ok"
		require.Equal(t, want, s)
		require.Equal(t, ApplyDecision{Outcome: OutcomeApplied, InvalidSchedule: true, ScheduleError: errBeyond.Error()}, d)

		missed := State{RefreshAt: now.Add(-2 * time.Hour), AttemptNo: 1}
		s, dd := p.Due(missed, now, sched, nil, "x", 0)
		require.Equal(t, State{AttemptNo: 1, DisabledAt: now, DisabledReason: reason, LastError: reason}, s)
		require.Equal(t, DueInvalidSchedule, dd.Action)
		require.Equal(t, errBeyond.Error(), dd.ScheduleError)

		s = Resume(State{LastSuccessAt: now.Add(-time.Hour)}, now, sched)
		require.Equal(t, State{LastSuccessAt: now.Add(-time.Hour), DisabledAt: now, DisabledReason: reason, LastError: reason}, s)
	}

	// A plain Nexter with no next occurrence: the rule ended.
	s := succeed(running, now, fixedNexter(time.Time{}))
	require.Equal(t, State{LastSuccessAt: now}, s)
}

// Simulate tells occurrences that stop at the horizon from a rule that ended.
func TestSimulateBeyondTheHorizon(t *testing.T) {
	t.Parallel()
	sim := Simulate(Spreaded(beyond{}, time.Minute), Policy{}, SimulateOptions{From: at("2026-06-10T10:00:00Z"), Occurrences: 3})
	require.Empty(t, sim.Occurrences)
	require.Equal(t, errBeyond, sim.Beyond)
	sim = Simulate(fixedNexter(time.Time{}), Policy{}, SimulateOptions{From: at("2026-06-10T10:00:00Z"), Occurrences: 3})
	require.NoError(t, sim.Beyond)
}
