package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// daily14 is every day at 14:00 UTC, written with the two characters \n as
// a shell user would paste it.
const daily14 = `DTSTART:20250101T140000Z\nRRULE:FREQ=DAILY`

func runExplainCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), append([]string{"explain"}, args...), &stdout, &stderr)
	return stdout.String(), err
}

func strp(s string) *string { return &s }

func f64p(f float64) *float64 { return &f }

func TestExplainJSON(t *testing.T) {
	t.Parallel()

	out, err := runExplainCmd(t, "--schedule", daily14, "--from", "2025-06-10T12:00:00Z",
		"--occurrences", "3", "--fail", "9", "--kind", "big_tables", "--json")
	require.NoError(t, err)

	var got explainJSON
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&got))

	require.Equal(t, []string{"2025-06-10T14:00:00Z", "2025-06-11T14:00:00Z", "2025-06-12T14:00:00Z"}, got.Occurrences)

	// The default policy (0s, 1m, 5m, 15m, 30m, 1h, give up at the 7th) with
	// the default 1h timeout; each attempt fails at once.
	type row struct {
		started, retryAt, refreshAt, decision string
		delay                                 float64
	}
	want := []row{
		{"2025-06-10T12:00:00Z", "2025-06-10T12:00:00Z", "2025-06-10T12:00:00Z", "retry", 0},
		{"2025-06-10T12:00:00Z", "2025-06-10T12:01:00Z", "2025-06-10T12:01:00Z", "retry", 60},
		{"2025-06-10T12:01:00Z", "2025-06-10T12:06:00Z", "2025-06-10T12:06:00Z", "retry", 300},
		{"2025-06-10T12:06:00Z", "2025-06-10T12:21:00Z", "2025-06-10T12:21:00Z", "retry", 900},
		{"2025-06-10T12:21:00Z", "2025-06-10T12:51:00Z", "2025-06-10T12:51:00Z", "retry", 1800},
		{"2025-06-10T12:51:00Z", "2025-06-10T13:51:00Z", "2025-06-10T14:00:00Z", "planned", 3600},
	}
	require.Len(t, got.Attempts, 7)
	for i, w := range want {
		a := got.Attempts[i]
		require.Equal(t, i+1, a.AttemptNo)
		require.Equal(t, w.started, a.StartedAt, "attempt %d", i+1)
		require.Equal(t, w.started, a.FailedAt, "attempt %d", i+1)
		require.Equal(t, "simulated failure", a.Error)
		require.Equal(t, f64p(w.delay), a.DelaySeconds, "attempt %d", i+1)
		require.Equal(t, f64p(w.delay), a.DelayMaxSeconds, "attempt %d", i+1)
		require.Equal(t, strp(w.retryAt), a.RetryAt, "attempt %d", i+1)
		require.Equal(t, strp("2025-06-10T14:00:00Z"), a.PlannedAt, "attempt %d", i+1)
		require.Equal(t, strp(w.refreshAt), a.RefreshAt, "attempt %d", i+1)
		require.Equal(t, w.decision, a.Decision, "attempt %d", i+1)
		require.NotEmpty(t, a.Reason)
	}
	require.Equal(t, explainAttemptJSON{
		AttemptNo: 7,
		StartedAt: "2025-06-10T14:00:00Z",
		FailedAt:  "2025-06-10T14:00:00Z",
		Error:     "simulated failure",
		Decision:  "disabled",
		Reason:    "Cannot refresh big_tables after 7 attempt(s)",
	}, got.Attempts[6])

	// Nulls are JSON nulls, and there is exactly one object.
	require.Contains(t, out, `"retry_at": null`)
	require.Contains(t, out, `"delay_seconds": null`)
	require.False(t, dec.More())
}

func TestExplainJSONJitterAndTimeout(t *testing.T) {
	t.Parallel()

	out, err := runExplainCmd(t, "--schedule", daily14, "--from", "2025-06-10T08:00:00+02:00",
		"--retry", "constant:unit=10m,jitter=equal", "--timeout", "30m", "--run", "45m",
		"--occurrences", "0", "--fail", "1", "--json")
	require.NoError(t, err)
	var got explainJSON
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	require.Equal(t, []string{}, got.Occurrences)
	require.Len(t, got.Attempts, 1)
	a := got.Attempts[0]
	require.Equal(t, "2025-06-10T06:00:00Z", a.StartedAt) // converted to UTC
	require.Equal(t, "2025-06-10T06:30:00Z", a.FailedAt)  // timed out
	require.Equal(t, "timed out after 30m", a.Error)
	require.Equal(t, f64p(300), a.DelaySeconds)    // the range's lower bound
	require.Equal(t, f64p(600), a.DelayMaxSeconds) // and its upper bound
	require.Equal(t, strp("2025-06-10T06:35:00Z"), a.RefreshAt)
	require.Equal(t, "retry", a.Decision)
}

func TestExplainText(t *testing.T) {
	t.Parallel()

	out, err := runExplainCmd(t, "--schedule", daily14, "--from", "2025-06-10T12:00:00Z",
		"--occurrences", "3", "--fail", "8", "--retry", "linear:unit=20m,jitter=full,attempts=3")
	require.NoError(t, err)
	require.Contains(t, out, "Retry:    linear:unit=20m,attempts=3,jitter=full (timeout 1h)")
	require.Contains(t, out, "Next 3 occurrences after 2025-06-10T12:00:00Z (UTC):")
	require.Contains(t, out, "8 consecutive failures, each running 0s, the first starting at 2025-06-10T12:00:00Z:")
	require.Contains(t, out, "(stopped after 3 attempt(s): the model would be disabled)")
	require.Contains(t, out, "0s-20m") // jitter shown as its range
	require.Contains(t, out, "Cannot refresh model after 3 attempt(s)")

	// Both tables are aligned: every row's columns start where the header's do.
	lines := strings.Split(out, "\n")
	checkAligned(t, lines, "  #", []string{"OCCURRENCE", "WEEKDAY"}, 3)
	checkAligned(t, lines, "  ATTEMPT", []string{"STARTED", "FAILED", "DELAY", "RETRY AT", "PLANNED AT", "REFRESH AT", "DECISION", "REASON"}, 3)
	require.Contains(t, out, "  1  2025-06-10T14:00:00Z  Tue\n")
}

// checkAligned finds the header line starting with prefix and checks that in
// the n rows below it each column starts at the header's column offset.
func checkAligned(t *testing.T, lines []string, prefix string, cols []string, n int) {
	t.Helper()
	for i, l := range lines {
		if !strings.HasPrefix(l, prefix) {
			continue
		}
		require.GreaterOrEqual(t, len(lines), i+1+n)
		for _, row := range lines[i+1 : i+1+n] {
			for _, c := range cols {
				off := strings.Index(l, c)
				require.Positive(t, off, c)
				require.Less(t, off, len(row), "row %q too short for %s", row, c)
				require.Equal(t, byte(' '), row[off-1], "column %s of row %q", c, row)
				require.NotEqual(t, byte(' '), row[off], "column %s of row %q", c, row)
			}
		}
		return
	}
	t.Fatalf("no header %q in output", prefix)
}

func TestExplainEveryPolicyFamily(t *testing.T) {
	t.Parallel()

	specs := []string{
		"delays:0s,1m,5m,15m,30m,1h",
		"constant:unit=1m",
		"linear:unit=1m",
		"fibonacci:unit=1m",
		"quadratic:unit=1s",
		"polynomial:unit=1s,power=3",
		"exponential:base=1s,factor=2",
		"arctan:max=24h",
		"delayed_job",
		"progressive:5m/24h,1h/168h,12h/336h,24h/720h,96h/4320h,192h/8640h",
		"exponential:base=1s,factor=2,max=1h,attempts=10,max_age=72h,jitter=decorrelated",
	}
	for _, spec := range specs {
		out, err := runExplainCmd(t, "--schedule", daily14, "--from", "2025-06-10T12:00:00Z", "--retry", spec, "--fail", "12", "--json")
		require.NoError(t, err, spec)
		var got explainJSON
		require.NoError(t, json.Unmarshal([]byte(out), &got), spec)
		require.Len(t, got.Occurrences, 10, spec)
		require.NotEmpty(t, got.Attempts, spec)
		for i, a := range got.Attempts {
			require.Equal(t, i+1, a.AttemptNo, spec)
			require.Contains(t, []string{"retry", "planned", "disabled"}, a.Decision, spec)
		}

		out, err = runExplainCmd(t, "--schedule", daily14, "--from", "2025-06-10T12:00:00Z", "--retry", spec, "--fail", "3")
		require.NoError(t, err, spec)
		require.Contains(t, out, "ATTEMPT", spec)
	}
}

func TestExplainBadInput(t *testing.T) {
	t.Parallel()

	base := []string{"--schedule", daily14, "--from", "2025-06-10T12:00:00Z"}
	tests := []struct {
		name string
		args []string
		want string // part of the error
	}{
		{"missing schedule", []string{"--from", "2025-06-10T12:00:00Z"}, `"schedule"`},
		{"bad rule", []string{"--schedule", "RRULE:FREQ=SOMETIMES"}, "--schedule"},
		{"empty rule", []string{"--schedule", ""}, "--schedule"},
		{"bad rule on several lines", []string{"--schedule", "DTSTART:20250101T140000Z\nRRULE:FREQ=NEVER"}, "--schedule"},
		{"bad retry", append(base, "--retry", "exponential:base=1s,factr=2"), `--retry: retry "exponential:base=1s,factr=2": unknown key "factr"`},
		{"bad timeout", append(base, "--timeout", "1 hour"), `--timeout "1 hour": not a duration`},
		{"zero timeout", append(base, "--timeout", "0s"), `--timeout "0s": must be positive`},
		{"bad run", append(base, "--run", "fast"), `--run "fast": not a duration`},
		{"negative run", append(base, "--run", "-1m"), `--run "-1m": cannot be negative`},
		{"bad from", []string{"--schedule", daily14, "--from", "2025-06-10 12:00"}, `--from "2025-06-10 12:00": not an RFC 3339 time`},
		{"negative occurrences", append(base, "--occurrences", "-1"), "--occurrences -1: cannot be negative"},
		{"negative fail", append(base, "--fail", "-2"), "--fail -2: cannot be negative"},
		{"bad fail", append(base, "--fail", "many"), `"many"`},
		{"unknown flag", append(base, "--frobnicate"), "frobnicate"},
		{"extra argument", append(base, "now"), `"now"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, err := runExplainCmd(t, tt.args...)
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.want)
			require.NotContains(t, err.Error(), "\n", "one line")
			require.Empty(t, out)
		})
	}
}

// --incident simulates failures during an incident: none counts and none
// disables, where the same failures without it disable at the 3rd.
func TestExplainIncident(t *testing.T) {
	t.Parallel()
	args := []string{"--schedule", daily14, "--from", "2025-06-10T10:00:00Z", "--occurrences", "1", "--fail", "5",
		"--retry", "delays:0s,1m", "--json"}
	decode := func(out string) explainJSON {
		var got explainJSON
		require.NoError(t, json.Unmarshal([]byte(out), &got))
		return got
	}
	out, err := runExplainCmd(t, args...)
	require.NoError(t, err)
	require.Len(t, decode(out).Attempts, 3, "without an incident the 3rd failure disables")

	out, err = runExplainCmd(t, append(args, "--incident")...)
	require.NoError(t, err)
	got := decode(out)
	require.Len(t, got.Attempts, 5)
	for _, a := range got.Attempts {
		require.Equal(t, 1, a.AttemptNo, "attempts during an incident do not count")
		require.Equal(t, f64p(60), a.DelaySeconds, "the guard's 1m floor")
	}
}
