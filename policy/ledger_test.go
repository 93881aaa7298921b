package policy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRetryBound: what set a failure's refresh_at, from the decision
// Failure took, for each bound and for a disabled row.
func TestRetryBound(t *testing.T) {
	t.Parallel()
	sched := dailyAt{hour: 14}
	now := at("2025-06-10T10:00:00Z")
	running := State{RefreshAt: now.Add(time.Hour), AttemptUID: "u", AttemptAt: now.Add(-time.Minute), AttemptNo: 1,
		TimeoutAt: now.Add(time.Hour)}
	retry := mustRetry(t, "delays:30s,1m")
	tests := []struct {
		name string
		p    Policy
		f    Failure
		want string
	}{
		{"the retry list's delay", Policy{Retry: retry}, Failure{Reason: "x"}, BoundRetryList},
		{"Retry-After longer than the delay", Policy{Retry: retry}, Failure{Reason: "x", RetryAfter: 10 * time.Minute}, BoundRetryAfter},
		{"Retry-After shorter than the delay", Policy{Retry: retry}, Failure{Reason: "x", RetryAfter: 10 * time.Second}, BoundRetryList},
		{"Retry-After past the next occurrence: the occurrence", Policy{Retry: retry}, Failure{Reason: "x", RetryAfter: 3*time.Hour + 30*time.Minute}, BoundNextOccurrence},
		{"incident: the guard's 1m floor", Policy{Retry: retry, Incident: true}, Failure{Reason: "x"}, BoundIncidentFloor},
		{"incident, Retry-After above the floor", Policy{Retry: retry, Incident: true}, Failure{Reason: "x", RetryAfter: 5 * time.Minute}, BoundRetryAfter},
		{"a long delay: the next occurrence serves", Policy{Retry: mustRetry(t, "delays:3h30m")}, Failure{Reason: "x"}, BoundNextOccurrence},
		{"permanent: disabled, no bound", Policy{Retry: retry}, Failure{Reason: "x", Permanent: true}, ""},
	}
	for _, tt := range tests {
		_, d := tt.p.Failure(running, now, tt.f, sched, 0)
		require.Equal(t, tt.want, tt.p.RetryBound(d, tt.f.RetryAfter), tt.name)
	}
	_, d := Policy{}.Throttled(running, now, Failure{RetryAfter: time.Minute})
	require.Equal(t, BoundRetryAfter, Policy{}.RetryBound(d, time.Minute), "throttled with a Retry-After")
	_, d = Policy{}.Throttled(running, now, Failure{})
	require.Equal(t, "", Policy{}.RetryBound(d, 0), "throttled without one")
}
