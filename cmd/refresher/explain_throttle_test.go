package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// --throttled: the hold, the uncounted attempt, a row of the group held at
// the occurrence inside the hold, and the next start as attempt 1; without
// retry_after_seconds no group is held and the row waits 1m.
func TestExplainThrottled(t *testing.T) {
	t.Parallel()
	args := []string{"--schedule", "RRULE:FREQ=HOURLY;BYMINUTE=5", "--from", "2025-06-10T10:00:00Z", "--occurrences", "0", "--run", "30s", "--json"}
	decode := func(out string) explainThrottleJSON {
		var got explainJSON
		dec := json.NewDecoder(strings.NewReader(out))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(&got))
		require.NotNil(t, got.Throttled)
		return *got.Throttled
	}
	out, err := runExplainCmd(t, append(args, "--throttled", "15m")...)
	require.NoError(t, err)
	require.Equal(t, explainThrottleJSON{
		StartedAt: "2025-06-10T10:00:00Z", AnsweredAt: "2025-06-10T10:00:30Z", RetryAfterSeconds: 900,
		HoldUntil: strp("2025-06-10T10:15:30Z"), Decision: "throttled",
		Reason:    "throttled with its group: wait 15m; the attempt does not count",
		AttemptNo: 0, RefreshAt: strp("2025-06-10T10:15:30Z"),
		HeldOccurrence: strp("2025-06-10T10:05:00Z"), HeldRefreshAt: strp("2025-06-10T10:15:30Z"),
		NextDispatchAt: strp("2025-06-10T10:15:30Z"), NextAttemptNo: 1,
	}, decode(out))

	out, err = runExplainCmd(t, append(args, "--throttled", "0s")...)
	require.NoError(t, err)
	require.Equal(t, explainThrottleJSON{
		StartedAt: "2025-06-10T10:00:00Z", AnsweredAt: "2025-06-10T10:00:30Z", Decision: "throttled",
		Reason:    "throttled with its group: wait 1m; the attempt does not count",
		RefreshAt: strp("2025-06-10T10:01:30Z"), NextDispatchAt: strp("2025-06-10T10:01:30Z"), NextAttemptNo: 1,
	}, decode(out))

	out, err = runExplainCmd(t, "--schedule", "RRULE:FREQ=HOURLY;BYMINUTE=5", "--from", "2025-06-10T10:00:00Z", "--occurrences", "0", "--throttled", "200h")
	require.NoError(t, err)
	require.Contains(t, out, "retry_after_seconds is capped at max_retry_after (168h)\n  its group is held until 2025-06-17T10:00:00Z")

	for _, tt := range []struct{ args, want string }{
		{"--throttled soon", `--throttled "soon": not a duration`},
		{"--throttled -1m", `--throttled "-1m": cannot be negative`},
		{"--throttled 1500ms", `--throttled "1500ms": retry_after_seconds is a whole number of seconds`},
		{"--throttled 1m --run 2h", "--throttled with --run 2h: the answer would come after the attempt's timeout (1h)"},
	} {
		out, err := runExplainCmd(t, append([]string{"--schedule", daily14, "--from", "2025-06-10T10:00:00Z"}, strings.Fields(tt.args)...)...)
		require.Error(t, err, tt.args)
		require.Contains(t, err.Error(), tt.want)
		require.Empty(t, out)
	}
}
