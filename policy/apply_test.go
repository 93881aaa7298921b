package policy

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestApply checks every result type just before, at and just after the
// attempt's timeout_at (12:00): before, the result is applied; at or after,
// it is late and the attempt ends as the dispatcher's timeout ends it.
func TestApply(t *testing.T) {
	t.Parallel()

	p := Policy{Kind: "feeds", Timeout: time.Hour} // default retry: 0s, 1m, 5m, ...
	sched := dailyAt{hour: 14}
	const uid = "d0attempt00000000000"
	started := at("2025-06-10T11:00:00Z")
	timeoutAt := at("2025-06-10T12:00:00Z")
	lastSuccess := at("2025-06-09T14:00:00Z")
	running := State{RefreshAt: timeoutAt, AttemptUID: uid, AttemptAt: started, AttemptNo: 1,
		TimeoutAt: timeoutAt, Status: "importing 40%", LastSuccessAt: lastSuccess}

	success := Result{AttemptUID: uid, Type: ResultSuccess, Status: "fetched 1234 bytes"}
	failure := Result{AttemptUID: uid, Type: ResultFailure, Reason: "GET https://x: HTTP 503"}
	permanent := Result{AttemptUID: uid, Type: ResultFailure, Reason: "GET https://x: HTTP 404", Permanent: true}
	status := Result{AttemptUID: uid, Type: ResultStatus, Status: "importing 50%"}

	// timedOut is the state after the attempt timed out at now (retry at
	// once: the first delay of the default policy is 0s).
	timedOut := func(now time.Time) (State, ApplyDecision) {
		return State{RefreshAt: now, AttemptAt: started, AttemptNo: 1, FailingSince: started,
				LastSuccessAt: lastSuccess, LastError: "timed out after 1h"},
			ApplyDecision{Outcome: OutcomeLate, Failed: true, TimedOut: true, Failure: Decision{
				Branch: BranchRetry, RetryAt: now, PlannedAt: at("2025-06-10T14:00:00Z"), RefreshAt: now,
				Reason: "retry after 0s ends (timeout 1h) by the planned 2025-06-10T14:00:00Z"}}
	}
	before := timeoutAt.Add(-time.Microsecond)

	type row struct {
		name    string
		r       Result
		now     time.Time
		want    State
		wantDec ApplyDecision
	}
	tests := []row{
		{
			name: "success before timeout_at", r: success, now: before,
			want: State{RefreshAt: at("2025-06-10T14:00:00Z"), AttemptAt: started, LastSuccessAt: before,
				Status: "fetched 1234 bytes"},
			wantDec: ApplyDecision{Outcome: OutcomeApplied},
		},
		{
			name: "success without status before timeout_at: the status is cleared",
			r:    Result{AttemptUID: uid, Type: ResultSuccess}, now: before,
			want:    State{RefreshAt: at("2025-06-10T14:00:00Z"), AttemptAt: started, LastSuccessAt: before},
			wantDec: ApplyDecision{Outcome: OutcomeApplied},
		},
		{
			name: "failure before timeout_at", r: failure, now: before,
			want: State{RefreshAt: before, AttemptAt: started, AttemptNo: 1, FailingSince: started,
				LastSuccessAt: lastSuccess, LastError: "GET https://x: HTTP 503"},
			wantDec: ApplyDecision{Outcome: OutcomeApplied, Failed: true, Failure: Decision{
				Branch: BranchRetry, RetryAt: before, PlannedAt: at("2025-06-10T14:00:00Z"), RefreshAt: before,
				Reason: "retry after 0s ends (timeout 1h) by the planned 2025-06-10T14:00:00Z"}},
		},
		{
			name: "permanent failure before timeout_at: the kind's reason, not the technical one", r: permanent, now: before,
			want: State{AttemptAt: started, AttemptNo: 1, DisabledAt: before,
				DisabledReason: "Cannot refresh feeds: the source was rejected", FailingSince: started,
				LastSuccessAt: lastSuccess, LastError: "GET https://x: HTTP 404"},
			wantDec: ApplyDecision{Outcome: OutcomeApplied, Failed: true, Failure: Decision{
				Branch: BranchDisabled, Permanent: true, Reason: "Cannot refresh feeds: the source was rejected"}},
		},
		{
			name: "status before timeout_at: stored, the attempt keeps running", r: status, now: before,
			want: State{RefreshAt: timeoutAt, AttemptUID: uid, AttemptAt: started, AttemptNo: 1,
				TimeoutAt: timeoutAt, Status: "importing 50%", LastSuccessAt: lastSuccess},
			wantDec: ApplyDecision{Outcome: OutcomeApplied},
		},
		{
			name: "stale: another attempt runs", r: Result{AttemptUID: "d0other0000000000000", Type: ResultSuccess}, now: before,
			want: running, wantDec: ApplyDecision{Outcome: OutcomeStale},
		},
		{
			name: "stale after timeout_at too", r: Result{AttemptUID: "d0other0000000000000", Type: ResultSuccess}, now: timeoutAt,
			want: running, wantDec: ApplyDecision{Outcome: OutcomeStale},
		},
	}
	// At and after timeout_at every result type ends the attempt the same
	// way: as timed out.
	for _, r := range []struct {
		name string
		r    Result
	}{{"success", success}, {"failure", failure}, {"permanent failure", permanent}, {"status", status}} {
		for _, now := range []time.Time{timeoutAt, timeoutAt.Add(time.Microsecond)} {
			want, wantDec := timedOut(now)
			tests = append(tests, row{
				name: fmt.Sprintf("%s at timeout_at%+v", r.name, now.Sub(timeoutAt)),
				r:    r.r, now: now, want: want, wantDec: wantDec,
			})
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, dec := p.Apply(running, tt.r, tt.now, sched, nil, 0)
			require.Equal(t, tt.want, got)
			require.Equal(t, tt.wantDec, dec)
			require.Equal(t, tt.wantDec.Outcome == OutcomeStale || tt.wantDec.Outcome == OutcomeLate,
				dec.Outcome.Metric() == "stale", "a late result counts as stale")
		})
	}

	t.Run("not running: stale", func(t *testing.T) {
		idle := State{RefreshAt: at("2025-06-10T14:00:00Z")}
		got, dec := p.Apply(idle, Result{AttemptUID: "", Type: ResultSuccess}, before, sched, nil, 0)
		require.Equal(t, idle, got)
		require.Equal(t, ApplyDecision{Outcome: OutcomeStale}, dec)
	})
	t.Run("invalid rule: disabled, applied on time and late after", func(t *testing.T) {
		bad := errors.New("RRULE: missing FREQ")
		for _, tc := range []struct {
			now     time.Time
			outcome Outcome
		}{{before, OutcomeApplied}, {timeoutAt, OutcomeLate}} {
			got, dec := p.Apply(running, success, tc.now, nil, bad, 0)
			require.Equal(t, State{AttemptAt: started, AttemptNo: 1, DisabledAt: tc.now,
				DisabledReason: "Invalid refresh schedule: RRULE: missing FREQ", LastError: "Invalid refresh schedule: RRULE: missing FREQ",
				Status: "importing 40%", LastSuccessAt: lastSuccess}, got)
			require.Equal(t, ApplyDecision{Outcome: tc.outcome, InvalidSchedule: true, ScheduleError: "RRULE: missing FREQ"}, dec)
		}
	})
	t.Run("status results may come many times", func(t *testing.T) {
		s := running
		for i := range 3 {
			var dec ApplyDecision
			s, dec = p.Apply(s, Result{AttemptUID: uid, Type: ResultStatus, Status: fmt.Sprintf("step %d", i)}, before, sched, nil, 0)
			require.Equal(t, OutcomeApplied, dec.Outcome)
		}
		want := running
		want.Status = "step 2"
		require.Equal(t, want, s, "only the status changes; timeout_at is not extended")
	})
}

// Whichever loop reaches a timed-out row first, it ends in the same state:
// the poller applying a late result and then the dispatcher's pass equal the
// dispatcher's pass alone.
func TestApplyLateMatchesDue(t *testing.T) {
	t.Parallel()

	sched := dailyAt{hour: 14}
	timeoutAt := at("2025-06-10T12:00:00Z")
	for _, p := range []Policy{{Timeout: time.Hour}, {Timeout: time.Hour, Retry: mustRetry(t, "constant:unit=10m,attempts=3")}} {
		for n := 1; n <= 7; n++ {
			for _, now := range []time.Time{timeoutAt, timeoutAt.Add(time.Microsecond), timeoutAt.Add(90 * time.Minute)} {
				for _, typ := range []ResultType{ResultSuccess, ResultFailure, ResultStatus} {
					s := p.Start(State{AttemptNo: n - 1}, at("2025-06-10T11:00:00Z"), "d0attempt00000000000")
					late, dec := p.Apply(s, Result{AttemptUID: s.AttemptUID, Type: typ, Status: "x", Permanent: true}, now, sched, nil, 0.5)
					require.Equal(t, OutcomeLate, dec.Outcome)
					viaPoller, _ := p.Due(late, now, sched, nil, "d1new000000000000000", 0.5)
					viaDispatcher, _ := p.Due(s, now, sched, nil, "d1new000000000000000", 0.5)
					require.Equal(t, viaDispatcher, viaPoller, "attempt %d, %s result at %s", n, typ, now)
				}
			}
		}
	}
}
