package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// --extend: each request's timeout_at, its cap, and the timeout at the
// lease's end, in text and JSON.
func TestExplainLease(t *testing.T) {
	t.Parallel()
	args := []string{"--schedule", daily14, "--from", "2025-06-10T10:00:00Z", "--occurrences", "0", "--extend", "30m@50m", "--extend", "3h@1h10m"}
	out, err := runExplainCmd(t, args...)
	require.NoError(t, err)
	require.Contains(t, out, `Lease: the attempt starting at 2025-06-10T10:00:00Z asks for more time, then its worker dies (timeout 1h, max_timeout 4h, next occurrence 2025-06-10T14:00:00Z):
  AT                    ASKS  TIMEOUT AT
  2025-06-10T10:00:00Z  -     2025-06-10T11:00:00Z  started: start + timeout
  2025-06-10T10:50:00Z  30m   2025-06-10T11:20:00Z  extended as asked
  2025-06-10T11:10:00Z  3h    2025-06-10T14:00:00Z  capped by the next occurrence: the attempt never overlaps its next run
  2025-06-10T14:00:00Z  -     -                     no word from the worker: timed out after 4h (lease extended); retry after 0s ends (timeout 1h) by the planned 2025-06-11T14:00:00Z
`)

	out, err = runExplainCmd(t, "--schedule", daily14, "--from", "2025-06-10T10:00:00Z", "--occurrences", "0",
		"--extend", "1h@1h30m", "--extend", "30m@50m", "--extend", "2h@1h10m", "--max-timeout", "2h", "--json")
	require.NoError(t, err)
	var got explainJSON
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&got))
	require.Equal(t, &explainLeaseJSON{
		StartedAt: "2025-06-10T10:00:00Z", TimeoutSeconds: 3600, MaxTimeoutSeconds: 7200,
		NextOccurrence: strp("2025-06-10T14:00:00Z"), TimeoutAt: "2025-06-10T11:00:00Z",
		Steps: []explainLeaseStepJSON{
			{At: "2025-06-10T10:50:00Z", AskSeconds: 1800, Outcome: "applied", TimeoutAt: strp("2025-06-10T11:20:00Z"), Says: "extended as asked"},
			{At: "2025-06-10T11:10:00Z", AskSeconds: 7200, Outcome: "applied", TimeoutAt: strp("2025-06-10T12:00:00Z"), Capped: "max_timeout",
				Says: "capped by max_timeout (start + max_timeout)"},
			{At: "2025-06-10T11:30:00Z", AskSeconds: 3600, Outcome: "applied", TimeoutAt: strp("2025-06-10T12:00:00Z"), Capped: "max_timeout",
				Says: "capped by max_timeout (start + max_timeout)"},
		},
		EndedAt: "2025-06-10T12:00:00Z", Error: "timed out after 2h (lease extended)", Decision: "retry",
		Reason: "retry after 0s ends (timeout 1h) by the planned 2025-06-10T14:00:00Z", RefreshAt: strp("2025-06-10T12:00:00Z"),
	}, got.Lease)

	out, err = runExplainCmd(t, "--schedule", daily14, "--from", "2025-06-10T10:00:00Z", "--occurrences", "0", "--extend", "1h@1h")
	require.NoError(t, err)
	require.Contains(t, out, "  2025-06-10T11:00:00Z  -     -                     no word from the worker: timed out after 1h; retry after 0s ends (timeout 1h) by the planned 2025-06-10T14:00:00Z\n"+
		"  2025-06-10T11:00:00Z  1h    -                     too late: the attempt timed out at its timeout_at; nothing extended, answered as over\n")

	for _, tt := range []struct{ args, want string }{
		{"--extend 30m", `--extend "30m": write FOR@AFTER, e.g. 30m@50m`},
		{"--extend soon@50m", `--extend "soon": not a duration`},
		{"--extend 30m@later", `--extend "later": not a duration`},
		{"--extend 1500ms@50m", `--extend "1500ms@50m": a worker asks for a whole number of seconds from 1s to 8760h`},
		{"--extend 0s@50m", `--extend "0s@50m": a worker asks for a whole number of seconds`},
		{"--extend 9000h@50m", `--extend "9000h@50m": a worker asks for a whole number of seconds`},
		{"--extend 30m@50m --max-timeout 30m", "--max-timeout 30m: less than --timeout 1h"},
		{"--max-timeout 2h", "--max-timeout needs --extend"},
	} {
		out, err := runExplainCmd(t, append([]string{"--schedule", daily14, "--from", "2025-06-10T10:00:00Z"}, strings.Fields(tt.args)...)...)
		require.Error(t, err, tt.args)
		require.Contains(t, err.Error(), tt.want)
		require.Empty(t, out)
	}
}
