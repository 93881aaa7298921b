package policy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestGroupHold(t *testing.T) {
	t.Parallel()
	now := at("2025-06-10T10:00:00Z")
	p := Policy{MaxRetryAfter: time.Hour}
	tests := []struct {
		name  string
		r     Result
		until time.Time
		ok    bool
	}{
		{"429 with retry_after 2m", Result{Type: ResultFailure, RetryAfter: 2 * time.Minute}, now.Add(2 * time.Minute), true},
		{"scope group too", Result{Type: ResultFailure, RetryAfter: 2 * time.Minute, Scope: ScopeGroup}, now.Add(2 * time.Minute), true},
		{"capped by MaxRetryAfter", Result{Type: ResultFailure, RetryAfter: 48 * time.Hour}, now.Add(time.Hour), true},
		{"no retry_after: no hold", Result{Type: ResultFailure}, time.Time{}, false},
		{"permanent: no hold", Result{Type: ResultFailure, RetryAfter: time.Minute, Permanent: true}, time.Time{}, false},
		{"success: no hold", Result{Type: ResultSuccess, RetryAfter: time.Minute}, time.Time{}, false},
		{"status: no hold", Result{Type: ResultStatus, RetryAfter: time.Minute}, time.Time{}, false},
	}
	for _, tt := range tests {
		until, ok := p.GroupHold(tt.r, now)
		require.Equal(t, tt.ok, ok, tt.name)
		require.Equal(t, tt.until, until, tt.name)
	}
}

// TestApplyThrottled: a failure with "scope":"group" ends the attempt
// without counting it, at the end of the wait, even at the retry policy's
// last attempt; a permanent one still disables.
func TestApplyThrottled(t *testing.T) {
	t.Parallel()
	p := Policy{Kind: "feeds", Timeout: time.Hour, Retry: mustRetry(t, "delays:0s,1m")}
	sched := dailyAt{hour: 14}
	now := at("2025-06-10T10:00:00Z")
	started := now.Add(-time.Minute)
	failing := at("2025-06-10T09:00:00Z")
	last := State{RefreshAt: now.Add(time.Hour), AttemptUID: "u3", AttemptAt: started, AttemptNo: 3,
		TimeoutAt: now.Add(time.Hour), FailingSince: failing, Status: "waiting"}
	fresh := State{RefreshAt: now.Add(time.Hour), AttemptUID: "u3", AttemptAt: started, AttemptNo: 1, TimeoutAt: now.Add(time.Hour)}

	tests := []struct {
		name    string
		s       State
		r       Result
		want    State
		wantDec ApplyDecision
	}{
		{
			name: "throttled at the last attempt: not counted, waits the retry_after, never disabled",
			s:    last, r: Result{AttemptUID: "u3", Type: ResultFailure, Reason: "HTTP 429", RetryAfter: 5 * time.Hour, Scope: ScopeGroup},
			want: State{RefreshAt: at("2025-06-10T15:00:00Z"), AttemptAt: started, AttemptNo: 2, FailingSince: failing, LastError: "HTTP 429"},
			wantDec: ApplyDecision{Outcome: OutcomeApplied, Failed: true, Failure: Decision{Branch: BranchThrottled,
				Delay: 5 * time.Hour, RetryAt: at("2025-06-10T15:00:00Z"), RefreshAt: at("2025-06-10T15:00:00Z"),
				Reason: "throttled with its group: wait 5h; the attempt does not count"}},
		},
		{
			name: "throttled without retry_after: waits 1m; a first attempt leaves no failing run",
			s:    fresh, r: Result{AttemptUID: "u3", Type: ResultFailure, Reason: "throttled", Scope: ScopeGroup},
			want: State{RefreshAt: now.Add(time.Minute), AttemptAt: started, LastError: "throttled"},
			wantDec: ApplyDecision{Outcome: OutcomeApplied, Failed: true, Failure: Decision{Branch: BranchThrottled,
				Delay: time.Minute, RetryAt: now.Add(time.Minute), RefreshAt: now.Add(time.Minute),
				Reason: "throttled with its group: wait 1m; the attempt does not count"}},
		},
		{
			name: "a permanent failure with scope group still disables",
			s:    fresh, r: Result{AttemptUID: "u3", Type: ResultFailure, Reason: "HTTP 404", Permanent: true, Scope: ScopeGroup},
			want: State{AttemptAt: started, AttemptNo: 1, DisabledAt: now, DisabledReason: "Cannot refresh feeds: the source was rejected",
				FailingSince: started, LastError: "HTTP 404"},
			wantDec: ApplyDecision{Outcome: OutcomeApplied, Failed: true, Failure: Decision{Branch: BranchDisabled,
				Permanent: true, Reason: "Cannot refresh feeds: the source was rejected"}},
		},
		{
			name: "a 429 without scope counts as the model's failure (and gives up at the last attempt)",
			s:    last, r: Result{AttemptUID: "u3", Type: ResultFailure, Reason: "HTTP 429", RetryAfter: time.Minute},
			want: State{AttemptAt: started, AttemptNo: 3, DisabledAt: now, DisabledReason: "Cannot refresh feeds after 3 attempt(s)",
				FailingSince: failing, LastError: "HTTP 429"},
			wantDec: ApplyDecision{Outcome: OutcomeApplied, Failed: true, Failure: Decision{Branch: BranchDisabled,
				GaveUp: true, Reason: "Cannot refresh feeds after 3 attempt(s)"}},
		},
	}
	for _, tt := range tests {
		got, dec := p.Apply(tt.s, tt.r, now, sched, nil, 0)
		require.Equal(t, tt.want, got, tt.name)
		require.Equal(t, tt.wantDec, dec, tt.name)
	}
}

// TestHeld: a row Due started goes back to where it started from, with
// refresh_at at the hold's end; other decisions and ended holds pass.
func TestHeld(t *testing.T) {
	t.Parallel()
	p := Policy{Timeout: time.Hour}
	sched := dailyAt{hour: 14}
	now := at("2025-06-10T10:00:00Z")
	until := now.Add(10 * time.Minute)
	due := State{RefreshAt: now, AttemptNo: 1, FailingSince: now.Add(-time.Hour), LastError: "HTTP 503"}

	s, d := p.Due(due, now, sched, nil, "u1", 0)
	require.Equal(t, DueStarted, d.Action)
	got, dec := Held(s, d, until, now)
	require.Equal(t, State{RefreshAt: until, AttemptNo: 1, FailingSince: due.FailingSince, LastError: "HTTP 503"}, got)
	require.Equal(t, DueDecision{Action: DueHeld}, dec)

	// The hold ended: the start stands.
	got, dec = Held(s, d, now, now)
	require.Equal(t, s, got)
	require.Equal(t, d, dec)

	// A timed-out attempt: the timeout stands, no new attempt starts.
	running := State{RefreshAt: now, AttemptUID: "u0", AttemptAt: now.Add(-time.Hour), AttemptNo: 1, TimeoutAt: now}
	s, d = p.Due(running, now, sched, nil, "u1", 0)
	require.Equal(t, DueStarted, d.Action)
	require.True(t, d.TimedOut)
	got, dec = Held(s, d, until, now)
	require.Equal(t, State{RefreshAt: until, AttemptAt: now.Add(-time.Hour), AttemptNo: 1, FailingSince: now.Add(-time.Hour),
		LastError: "timed out after 1h"}, got)
	require.Equal(t, DueDecision{Action: DueHeld, TimedOut: true, Timeout: d.Timeout}, dec)

	// A row that was not started is left alone.
	waiting := State{RefreshAt: now.Add(time.Hour)}
	s, d = p.Due(waiting, now, sched, nil, "u1", 0)
	got, dec = Held(s, d, until, now)
	require.Equal(t, waiting, got)
	require.Equal(t, DueDecision{Action: DueWaiting}, dec)
}
