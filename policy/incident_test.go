package policy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestGuardIncident: the exact edges of the default threshold (80% of at
// least 50 results), the worker's word, and the guard turned off.
func TestGuardIncident(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		g    Guard
		w    Window
		want bool
	}{
		{"empty window", Guard{}, Window{}, false},
		{"40 of 50: exactly 80%", Guard{}, Window{Results: 50, Failures: 40}, true},
		{"39 of 50: below", Guard{}, Window{Results: 50, Failures: 39}, false},
		{"49 of 49: too few results", Guard{}, Window{Results: 49, Failures: 49}, false},
		{"1000 of 1000", Guard{}, Window{Results: 1000, Failures: 1000}, true},
		{"worker scope alone", Guard{}, Window{Worker: true}, true},
		{"custom 50% of 10", Guard{Threshold: 0.5, MinResults: 10}, Window{Results: 10, Failures: 5}, true},
		{"custom 50% of 10, 4 failures", Guard{Threshold: 0.5, MinResults: 10}, Window{Results: 10, Failures: 4}, false},
		{"off: never", Guard{Off: true}, Window{Results: 100, Failures: 100, Worker: true}, false},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, tt.g.Incident(tt.w), tt.name)
	}
}

func TestGuardValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, Guard{}.Validate())
	require.EqualError(t, Guard{Threshold: 1.5}.Validate(), "incident threshold 1.5 is out of range (use a share above 0 and at most 1, e.g. 0.8)")
	require.EqualError(t, Guard{MinResults: -1}.Validate(), "incident minimum of results -1 is out of range (use at least 1, e.g. 50)")
	require.EqualError(t, Guard{Window: 30 * time.Second}.Validate(), "incident window 30s is too short (use at least 1m: the statistic is kept per minute)")
	require.EqualError(t, Policy{Guard: Guard{Threshold: -1}}.Validate(), "Guard: incident threshold -1 is out of range (use a share above 0 and at most 1, e.g. 0.8)")
}

// TestFailureDuringIncident: a non-permanent failure during an incident
// does not count and never disables; a permanent one still disables; with
// the guard off the incident flag changes nothing.
func TestFailureDuringIncident(t *testing.T) {
	t.Parallel()
	retry := mustRetry(t, "delays:0s,1m") // gives up at the 3rd failure
	sched := dailyAt{hour: 14}
	now := at("2025-06-10T10:00:00Z")
	started := now.Add(-time.Minute)
	third := State{RefreshAt: now.Add(time.Hour), AttemptUID: "u3", AttemptAt: started, AttemptNo: 3,
		TimeoutAt: now.Add(time.Hour), FailingSince: at("2025-06-10T09:00:00Z")}
	first := State{RefreshAt: now.Add(time.Hour), AttemptUID: "u1", AttemptAt: started, AttemptNo: 1,
		TimeoutAt: now.Add(time.Hour)}
	transient := Failure{Reason: "HTTP 503"}

	tests := []struct {
		name    string
		p       Policy
		s       State
		f       Failure
		want    State
		wantDec Decision
	}{
		{
			name: "3rd failure without an incident: gives up",
			p:    Policy{Kind: "feeds", Retry: retry}, s: third, f: transient,
			want: State{AttemptAt: started, AttemptNo: 3, DisabledAt: now, DisabledReason: "Cannot refresh feeds after 3 attempt(s)",
				FailingSince: third.FailingSince, LastError: "HTTP 503"},
			wantDec: Decision{Branch: BranchDisabled, GaveUp: true, Reason: "Cannot refresh feeds after 3 attempt(s)"},
		},
		{
			name: "3rd failure in an incident: not counted, retried after the guard's 1m",
			p:    Policy{Kind: "feeds", Retry: retry, Incident: true}, s: third, f: transient,
			want: State{RefreshAt: now.Add(time.Minute), AttemptAt: started, AttemptNo: 2,
				FailingSince: third.FailingSince, LastError: "HTTP 503"},
			wantDec: Decision{Branch: BranchRetry, Incident: true, Delay: time.Minute, RetryAt: now.Add(time.Minute),
				PlannedAt: at("2025-06-10T14:00:00Z"), RefreshAt: now.Add(time.Minute),
				Reason: "incident, the attempt does not count: retry after 1m ends (timeout 1h) by the planned 2025-06-10T14:00:00Z"},
		},
		{
			name: "1st failure in an incident: the policy's 0s becomes the guard's 1m; attempt_no back to 0",
			p:    Policy{Kind: "feeds", Retry: retry, Incident: true}, s: first, f: transient,
			want: State{RefreshAt: now.Add(time.Minute), AttemptAt: started, AttemptNo: 0,
				FailingSince: started, LastError: "HTTP 503"},
			wantDec: Decision{Branch: BranchRetry, Incident: true, Delay: time.Minute, RetryAt: now.Add(time.Minute),
				PlannedAt: at("2025-06-10T14:00:00Z"), RefreshAt: now.Add(time.Minute),
				Reason: "incident, the attempt does not count: retry after 1m ends (timeout 1h) by the planned 2025-06-10T14:00:00Z"},
		},
		{
			name: "in an incident, aligned as always: a retry that would overlap 14:00 waits for it",
			p:    Policy{Kind: "feeds", Retry: retry, Incident: true, Guard: Guard{Retry: 3*time.Hour + 30*time.Minute}}, s: third, f: transient,
			want: State{RefreshAt: at("2025-06-10T14:00:00Z"), AttemptAt: started, AttemptNo: 2,
				FailingSince: third.FailingSince, LastError: "HTTP 503"},
			wantDec: Decision{Branch: BranchPlanned, Incident: true, Delay: 3*time.Hour + 30*time.Minute, RetryAt: at("2025-06-10T13:30:00Z"),
				PlannedAt: at("2025-06-10T14:00:00Z"), RefreshAt: at("2025-06-10T14:00:00Z"),
				Reason: "incident, the attempt does not count: a retry after 3h30m could still run (timeout 1h) at the planned 2025-06-10T14:00:00Z, which serves as the retry"},
		},
		{
			name: "in an incident a permanent failure still disables",
			p:    Policy{Kind: "feeds", Retry: retry, Incident: true}, s: first, f: Failure{Reason: "HTTP 404", Permanent: true},
			want: State{AttemptAt: started, AttemptNo: 1, DisabledAt: now, DisabledReason: "Cannot refresh feeds: the source was rejected",
				FailingSince: started, LastError: "HTTP 404"},
			wantDec: Decision{Branch: BranchDisabled, Permanent: true, Reason: "Cannot refresh feeds: the source was rejected"},
		},
		{
			name: "guard off: the incident flag changes nothing",
			p:    Policy{Kind: "feeds", Retry: retry, Incident: true, Guard: Guard{Off: true}}, s: third, f: transient,
			want: State{AttemptAt: started, AttemptNo: 3, DisabledAt: now, DisabledReason: "Cannot refresh feeds after 3 attempt(s)",
				FailingSince: third.FailingSince, LastError: "HTTP 503"},
			wantDec: Decision{Branch: BranchDisabled, GaveUp: true, Reason: "Cannot refresh feeds after 3 attempt(s)"},
		},
	}
	for _, tt := range tests {
		got, dec := tt.p.Failure(tt.s, now, tt.f, sched, 0)
		require.Equal(t, tt.want, got, tt.name)
		require.Equal(t, tt.wantDec, dec, tt.name)
	}
}
