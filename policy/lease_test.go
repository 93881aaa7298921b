package policy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestApplyExtend checks an extension at its boundaries on a fake clock:
// the attempt started at 11:00 with a 1h timeout (timeout_at 12:00); the
// row's rule runs daily at 14:00, so its next planned occurrence after the
// start is 14:00; max_timeout is 4h (15:00) unless a row says otherwise.
func TestApplyExtend(t *testing.T) {
	t.Parallel()

	p := Policy{Kind: "feeds", Timeout: time.Hour}
	sched := dailyAt{hour: 14}
	const uid = "d0attempt00000000000"
	started := at("2025-06-10T11:00:00Z")
	timeoutAt := at("2025-06-10T12:00:00Z")
	lastSuccess := at("2025-06-09T14:00:00Z")
	running := State{RefreshAt: timeoutAt, AttemptUID: uid, AttemptAt: started, AttemptNo: 1,
		TimeoutAt: timeoutAt, Status: "importing 40%", LastSuccessAt: lastSuccess}
	before := timeoutAt.Add(-time.Microsecond)
	extend := func(d time.Duration) Result { return Result{AttemptUID: uid, Type: ResultExtend, Extend: d} }
	// leased is the running state with timeout_at (and refresh_at) at until.
	leased := func(until time.Time) State {
		s := running
		s.RefreshAt, s.TimeoutAt = until, until
		return s
	}
	timedOut := func(now time.Time) State {
		return State{RefreshAt: now, AttemptAt: started, AttemptNo: 1, FailingSince: started,
			LastSuccessAt: lastSuccess, LastError: "timed out after 1h"}
	}
	lateDec := func(now time.Time) ApplyDecision {
		return ApplyDecision{Outcome: OutcomeLate, Failed: true, TimedOut: true, Failure: Decision{
			Branch: BranchRetry, RetryAt: now, PlannedAt: at("2025-06-10T14:00:00Z"), RefreshAt: now,
			Reason: "retry after 0s ends (timeout 1h) by the planned 2025-06-10T14:00:00Z"}}
	}

	tests := []struct {
		name    string
		p       Policy
		sched   Nexter
		r       Result
		now     time.Time
		want    State
		wantDec ApplyDecision
	}{
		{
			name: "just before timeout_at: timeout_at = now + 10m", r: extend(10 * time.Minute), now: before,
			want: leased(before.Add(10 * time.Minute)),
			wantDec: ApplyDecision{Outcome: OutcomeApplied, Extended: true,
				Lease: Lease{Asked: before.Add(10 * time.Minute), Until: before.Add(10 * time.Minute)}},
		},
		{
			name: "at timeout_at: late, the attempt timed out, nothing extended", r: extend(10 * time.Minute), now: timeoutAt,
			want: timedOut(timeoutAt), wantDec: lateDec(timeoutAt),
		},
		{
			name: "just after timeout_at: late", r: extend(10 * time.Minute), now: timeoutAt.Add(time.Microsecond),
			want: timedOut(timeoutAt.Add(time.Microsecond)), wantDec: lateDec(timeoutAt.Add(time.Microsecond)),
		},
		{
			name: "capped by max_timeout: attempt_at + 2h", p: Policy{Kind: "feeds", Timeout: time.Hour, MaxTimeout: 2 * time.Hour},
			r: extend(2 * time.Hour), now: at("2025-06-10T11:59:00Z"),
			want: leased(at("2025-06-10T13:00:00Z")),
			wantDec: ApplyDecision{Outcome: OutcomeApplied, Extended: true,
				Lease: Lease{Asked: at("2025-06-10T13:59:00Z"), Until: at("2025-06-10T13:00:00Z"), Cap: LeaseMaxTimeout}},
		},
		{
			name: "just under max_timeout: granted as asked", p: Policy{Kind: "feeds", Timeout: time.Hour, MaxTimeout: 2 * time.Hour},
			r: extend(time.Hour), now: at("2025-06-10T12:00:00Z").Add(-time.Second),
			want: leased(at("2025-06-10T12:59:59Z")),
			wantDec: ApplyDecision{Outcome: OutcomeApplied, Extended: true,
				Lease: Lease{Asked: at("2025-06-10T12:59:59Z"), Until: at("2025-06-10T12:59:59Z")}},
		},
		{
			name: "capped by the next occurrence (14:00) before max_timeout (15:00)",
			r:    extend(3 * time.Hour), now: at("2025-06-10T11:59:00Z"),
			want: leased(at("2025-06-10T14:00:00Z")),
			wantDec: ApplyDecision{Outcome: OutcomeApplied, Extended: true,
				Lease: Lease{Asked: at("2025-06-10T14:59:00Z"), Until: at("2025-06-10T14:00:00Z"), Cap: LeaseNextOccurrence}},
		},
		{
			name:  "a next occurrence before timeout_at: nothing extended, never shortened",
			sched: dailyAt{hour: 11, minute: 30}, r: extend(time.Hour), now: at("2025-06-10T11:40:00Z"),
			want: running,
			wantDec: ApplyDecision{Outcome: OutcomeApplied, Extended: true,
				Lease: Lease{Asked: at("2025-06-10T12:40:00Z"), Until: timeoutAt, Cap: LeaseNextOccurrence}},
		},
		{
			name:  "a rule with no occurrence left: max_timeout only",
			sched: dailyAt{hour: 14, until: at("2025-06-10T13:00:00Z")}, r: extend(5 * time.Hour), now: at("2025-06-10T11:30:00Z"),
			want: leased(at("2025-06-10T15:00:00Z")),
			wantDec: ApplyDecision{Outcome: OutcomeApplied, Extended: true,
				Lease: Lease{Asked: at("2025-06-10T16:30:00Z"), Until: at("2025-06-10T15:00:00Z"), Cap: LeaseMaxTimeout}},
		},
		{
			name: "less than timeout_at already gives: unchanged", r: extend(time.Minute), now: at("2025-06-10T11:10:00Z"),
			want: running,
			wantDec: ApplyDecision{Outcome: OutcomeApplied, Extended: true,
				Lease: Lease{Asked: at("2025-06-10T11:11:00Z"), Until: timeoutAt}},
		},
		{
			name: "stale: another attempt runs; nothing changes", r: Result{AttemptUID: "d0other0000000000000", Type: ResultExtend, Extend: time.Hour},
			now: before, want: running, wantDec: ApplyDecision{Outcome: OutcomeStale},
		},
		{
			name: "a status with seconds: stored and extended",
			r:    Result{AttemptUID: uid, Type: ResultStatus, Status: "importing 60%", Extend: 30 * time.Minute}, now: at("2025-06-10T11:50:00Z"),
			want: func() State { s := leased(at("2025-06-10T12:20:00Z")); s.Status = "importing 60%"; return s }(),
			wantDec: ApplyDecision{Outcome: OutcomeApplied, Extended: true,
				Lease: Lease{Asked: at("2025-06-10T12:20:00Z"), Until: at("2025-06-10T12:20:00Z")}},
		},
		{
			name: "an extend with a status stores it",
			r:    Result{AttemptUID: uid, Type: ResultExtend, Status: "downloading", Extend: 30 * time.Minute}, now: at("2025-06-10T11:50:00Z"),
			want: func() State { s := leased(at("2025-06-10T12:20:00Z")); s.Status = "downloading"; return s }(),
			wantDec: ApplyDecision{Outcome: OutcomeApplied, Extended: true,
				Lease: Lease{Asked: at("2025-06-10T12:20:00Z"), Until: at("2025-06-10T12:20:00Z")}},
		},
		{
			name: "a status without seconds extends nothing", r: Result{AttemptUID: uid, Type: ResultStatus, Status: "x"}, now: before,
			want:    func() State { s := running; s.Status = "x"; return s }(),
			wantDec: ApplyDecision{Outcome: OutcomeApplied},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pol, sch := p, Nexter(sched)
			if tt.p.Kind != "" {
				pol = tt.p
			}
			if tt.sched != nil {
				sch = tt.sched
			}
			got, dec := pol.Apply(running, tt.r, tt.now, sch, nil, 0)
			require.Equal(t, tt.want, got)
			require.Equal(t, tt.wantDec, dec)
		})
	}
}

// TestExtendedAttemptTimesOutAtItsLease: a worker that extended and then
// died is taken back at its lease's end, not before, and its last_error
// says how long it ran.
func TestExtendedAttemptTimesOutAtItsLease(t *testing.T) {
	t.Parallel()

	p := Policy{Timeout: time.Hour}
	sched := dailyAt{hour: 14}
	s := p.Start(State{}, at("2025-06-10T11:00:00Z"), "d0attempt00000000000")
	s, dec := p.Apply(s, Result{AttemptUID: s.AttemptUID, Type: ResultExtend, Extend: 20 * time.Minute}, at("2025-06-10T11:50:00Z"), sched, nil, 0)
	require.Equal(t, at("2025-06-10T12:10:00Z"), dec.Lease.Until)

	got, d := p.Due(s, at("2025-06-10T12:10:00Z").Add(-time.Microsecond), sched, nil, "d1new000000000000000", 0)
	require.Equal(t, DueWaiting, d.Action, "not before the lease's end")
	require.Equal(t, s, got)

	got, d = p.Due(s, at("2025-06-10T12:10:00Z"), sched, nil, "d1new000000000000000", 0)
	require.True(t, d.TimedOut)
	require.Equal(t, DueStarted, d.Action, "retried at once")
	require.Equal(t, "timed out after 1h10m (lease extended)", got.LastError)
	require.Equal(t, 2, got.AttemptNo)
}

// TestExtendRepeatedStopsAtMaxTimeout: a worker that keeps extending (hung
// with a live extender) is taken back at attempt_at + max_timeout.
func TestExtendRepeatedStopsAtMaxTimeout(t *testing.T) {
	t.Parallel()

	p := Policy{Timeout: 30 * time.Minute} // max_timeout 2h
	sched := dailyAt{hour: 14}
	start := at("2025-06-10T08:00:00Z")
	s := p.Start(State{}, start, "d0attempt00000000000")
	for now := start.Add(10 * time.Minute); now.Before(s.TimeoutAt); now = now.Add(10 * time.Minute) {
		s, _ = p.Apply(s, Result{AttemptUID: s.AttemptUID, Type: ResultExtend, Extend: 30 * time.Minute}, now, sched, nil, 0)
		require.True(t, s.Running())
	}
	require.Equal(t, start.Add(2*time.Hour), s.TimeoutAt)
	require.Equal(t, s.TimeoutAt, s.RefreshAt)
}

func TestPolicyValidateMaxTimeout(t *testing.T) {
	t.Parallel()

	require.EqualError(t, Policy{Timeout: time.Hour, MaxTimeout: 30 * time.Minute}.Validate(),
		"MaxTimeout 30m is less than Timeout 1h: an extension could never reach the first timeout_at")
	require.NoError(t, Policy{Timeout: time.Hour, MaxTimeout: time.Hour}.Validate())
	require.Equal(t, 8*time.Hour, Policy{Timeout: 2 * time.Hour}.WithDefaults().MaxTimeout)
}

// TestExtendAroundAnExtendedTimeoutAt: once extended, the boundary is the
// lease's end, not the first timeout_at: a request after the first
// timeout_at and just before the lease's end is granted; one at the
// lease's end is late, and the attempt times out.
func TestExtendAroundAnExtendedTimeoutAt(t *testing.T) {
	t.Parallel()

	p := Policy{Timeout: time.Hour}
	sched := dailyAt{hour: 14}
	s := p.Start(State{}, at("2025-06-10T11:00:00Z"), "d0attempt00000000000")
	ask := func(s State, now time.Time) (State, ApplyDecision) {
		return p.Apply(s, Result{AttemptUID: s.AttemptUID, Type: ResultExtend, Extend: 30 * time.Minute}, now, sched, nil, 0)
	}
	s, dec := ask(s, at("2025-06-10T11:50:00Z"))
	require.Equal(t, at("2025-06-10T12:20:00Z"), dec.Lease.Until)

	got, dec := ask(s, at("2025-06-10T12:20:00Z").Add(-time.Microsecond))
	require.Equal(t, OutcomeApplied, dec.Outcome, "after the first timeout_at, just before the lease's end")
	require.Equal(t, at("2025-06-10T12:50:00Z").Add(-time.Microsecond), got.TimeoutAt)
	require.True(t, got.Running())

	got, dec = ask(s, at("2025-06-10T12:20:00Z"))
	require.Equal(t, OutcomeLate, dec.Outcome, "at the lease's end")
	require.True(t, dec.TimedOut)
	require.False(t, got.Running())
	require.Equal(t, "timed out after 1h20m (lease extended)", got.LastError)
}
