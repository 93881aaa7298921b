package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// --spread and --key spread every time shown by the row's offset: feeds/42
// in a 10m window is 9m (FNV-1a, pinned in policy's tests), also through a
// DST day of a real zone.
func TestExplainSpread(t *testing.T) {
	t.Parallel()
	out, err := runExplainCmd(t, "--schedule", daily14, "--from", "2025-06-10T12:00:00Z", "--occurrences", "2",
		"--kind", "feeds", "--key", "42", "--spread", "10m", "--fail", "6")
	require.NoError(t, err)
	require.Contains(t, out, `Spread:   key "42" of kind feeds: offset 9m within 10m; every time below includes it`)
	require.Contains(t, out, "1  2025-06-10T14:09:00Z  Tue")
	require.Contains(t, out, "2  2025-06-11T14:09:00Z  Wed")
	// The 6th attempt's 1h retry at 13:51 would still run at the spread
	// 14:09, which serves as the retry.
	require.Regexp(t, `6 +2025-06-10T12:51:00Z .* planned +a retry after 1h could still run \(timeout 1h\) at the planned 2025-06-10T14:09:00Z`, out)

	out, err = runExplainCmd(t, "--schedule", `DTSTART;TZID=Europe/Berlin:20260101T023000\nRRULE:FREQ=DAILY`,
		"--from", "2026-03-28T00:00:00Z", "--occurrences", "3", "--kind", "feeds", "--key", "42", "--spread", "10m", "--json")
	require.NoError(t, err)
	var got explainJSON
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	require.Equal(t, &explainSpreadJSON{Key: "42", WindowSeconds: 600, OffsetSeconds: 540}, got.Spread)
	// 02:30 CET, then the spring-forward day's 03:30 CEST, then 02:30 CEST;
	// each plus 9m.
	require.Equal(t, []string{"2026-03-28T01:39:00Z", "2026-03-29T01:39:00Z", "2026-03-30T00:39:00Z"}, got.Occurrences)
}

func TestExplainDowntime(t *testing.T) {
	t.Parallel()
	args := []string{"--schedule", daily14, "--from", "2025-06-10T12:00:00Z", "--occurrences", "0", "--down-until", "2025-06-13T16:00:00Z"}

	out, err := runExplainCmd(t, append(args, "--catchup-window", "1h")...)
	require.NoError(t, err)
	require.Equal(t, `Schedule: DTSTART:20250101T140000Z | RRULE:FREQ=DAILY
Retry:    delays:0s,1m,5m,15m,30m,1h (timeout 1h)

Down from 2025-06-10T12:00:00Z until 2025-06-13T16:00:00Z (catchup window 1h, misfire skip):
  missed 4 occurrence(s): 2025-06-10T14:00:00Z, 2025-06-11T14:00:00Z, 2025-06-12T14:00:00Z, 2025-06-13T14:00:00Z
  due for 74h, longer than the catchup window (1h): misfire skip, not started late; it runs next at 2025-06-14T14:00:00Z
  (missed occurrences are never run one by one)

`, out)

	for _, tt := range []struct {
		flags                 []string
		action, misfire, runs string
		verdict               string
	}{
		{[]string{"--catchup-window", "1h", "--misfire", "skip"}, "misfire_skipped", "skip", "2025-06-14T14:00:00Z",
			"due for 74h, longer than the catchup window (1h): misfire skip, not started late; it runs next at 2025-06-14T14:00:00Z"},
		{[]string{"--catchup-window", "1h", "--misfire", "run_once"}, "started", "run_once", "2025-06-13T16:00:00Z",
			"due for 74h, longer than the catchup window (1h): misfire run_once, starts once at 2025-06-13T16:00:00Z"},
		{[]string{"--catchup-window", "74h"}, "started", "", "2025-06-13T16:00:00Z",
			"due for 74h, within the catchup window (74h): starts once at 2025-06-13T16:00:00Z"},
		{nil, "started", "", "2025-06-13T16:00:00Z",
			"due for 74h, within the catchup window (unlimited): starts once at 2025-06-13T16:00:00Z"},
	} {
		out, err := runExplainCmd(t, append(append(args, tt.flags...), "--json")...)
		require.NoError(t, err, tt.flags)
		var got explainJSON
		dec := json.NewDecoder(strings.NewReader(out))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(&got))
		d := got.Downtime
		require.NotNil(t, d)
		require.Equal(t, 4, d.MissedCount, tt.flags)
		require.Equal(t, tt.action, d.Action, tt.flags)
		require.Equal(t, tt.misfire, d.MisfireAction, tt.flags)
		require.Equal(t, strp(tt.runs), d.RunsAt, tt.flags)
		require.Equal(t, tt.verdict, d.Verdict, tt.flags)
	}
}

func TestExplainSpreadAndDowntimeBadInput(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--spread", "10m"}, "--spread needs --key"},
		{[]string{"--key", "42"}, `--key "42": give the kind's spread window too (--spread, e.g. 10m)`},
		{[]string{"--spread", "1s", "--key", "42"}, `--spread "1s": too short to spread anything`},
		{[]string{"--catchup-window", "1h"}, "--catchup-window and --misfire need --down-until"},
		{[]string{"--down-until", "2025-06-13T16:00:00Z", "--misfire", "later"}, `--misfire: "later" is not a misfire setting (use skip, the default, or run_once)`},
		{[]string{"--down-until", "2025-06-09T16:00:00Z"}, "--down-until 2025-06-09T16:00:00Z: must be after --from 2025-06-10T12:00:00Z"},
		{[]string{"--down-until", "tomorrow"}, `--down-until "tomorrow": not an RFC 3339 time`},
	} {
		_, err := runExplainCmd(t, append([]string{"--schedule", daily14, "--from", "2025-06-10T12:00:00Z"}, tt.args...)...)
		require.ErrorContains(t, err, tt.want, tt.args)
	}
}

// A rule whose next occurrence lies beyond the engine's horizon is not
// shown as a rule that ended: explain says the row would be disabled, and
// why.
func TestExplainBeyondTheHorizon(t *testing.T) {
	t.Parallel()
	out, err := runExplainCmd(t, "--schedule", `DTSTART:20240101T000001Z\nRRULE:FREQ=SECONDLY;INTERVAL=86399;BYHOUR=0;BYMINUTE=0;BYSECOND=0`,
		"--from", "2024-01-01T00:00:00Z", "--occurrences", "3")
	require.NoError(t, err)
	require.Contains(t, out, "  1  2024-01-02T00:00:00Z  Tue\n  (the next one lies beyond what the service computes: a row on this rule is disabled at its next success, "+
		`"Invalid refresh schedule: the rule's next occurrence lies more than 100 years ahead, further than the service computes; make it more frequent")`)
	require.NotContains(t, out, "no more occurrences")
}
