package schedule

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// goldenCase is one line of testdata/golden.jsonl, written by
// scripts/gen-rrule-golden.py from python-dateutil's occurrences.
type goldenCase struct {
	ID      int      `json:"id"`
	Family  string   `json:"family"`
	Text    string   `json:"text"`
	From    string   `json:"from"`
	Horizon string   `json:"horizon"`
	Want    []string `json:"want"`
	Refuse  string   `json:"refuse"`
}

// documentedLimits are the refusals of RFC 5545 schedules that have
// occurrences: the engine's deliberate limits, each listed in
// docs/schedules.md ("Limits"). A refusal of a golden schedule whose
// error contains none of these fails the test.
var documentedLimits = []string{
	"is too large",                           // COUNT over 100,000; INTERVAL over about a hundred years
	"is out of range",                        // years before 1900 or after 9999
	"times per day",                          // more than 1,440 times of day on a DAILY or coarser rule
	"whole BYMINUTE x BYSECOND combinations", // BYSETPOS splitting an HOURLY rule's minute x second pairs
	"no occurrence within",                   // occurrences further apart than the cost bound allows
	"BYEASTER cannot be combined",            // BYEASTER (not RFC 5545) with BYWEEKNO, BYYEARDAY, BYSETPOS or a numbered BYDAY
	"use UNTIL instead of COUNT",             // a COUNT that cannot be counted within the cost bound
}

const goldenFormat = "20060102T150405Z"

// TestGolden compares Next with python-dateutil on every schedule of
// testdata/golden.jsonl: the same occurrences, in order, strictly after
// "from" and up to "horizon"; and nothing more before the horizon when
// dateutil lists fewer than 20. Refusals must be documented limits.
func TestGolden(t *testing.T) {
	t.Parallel()
	f, err := os.Open("testdata/golden.jsonl")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	total, agreed, emptyAgreed, limits, mismatches := 0, 0, 0, map[string]int{}, 0
	parseT := func(v string) time.Time {
		tm, err := time.Parse(goldenFormat, v)
		require.NoError(t, err)
		return tm
	}
	for sc.Scan() {
		var c goldenCase
		require.NoError(t, json.Unmarshal(sc.Bytes(), &c))
		total++
		s, err := Parse(c.Text)
		if c.Refuse != "" {
			if err == nil || !strings.Contains(err.Error(), c.Refuse) {
				mismatches++
				t.Errorf("case %d should be refused with %q, got %v: %q", c.ID, c.Refuse, err, c.Text)
				continue
			}
			limits[c.Refuse]++
			continue
		}
		if err != nil && len(c.Want) == 0 && isEmptyError(err) {
			emptyAgreed++ // dateutil finds no occurrence either
			continue
		}
		if err != nil {
			why := ""
			for _, l := range documentedLimits {
				if strings.Contains(err.Error(), l) {
					why = l
				}
			}
			if why == "" {
				mismatches++
				t.Errorf("case %d (%s) refused, not a documented limit: %v\n%s\nwant %v", c.ID, c.Family, err, c.Text, c.Want)
				continue
			}
			limits[why]++
			continue
		}
		after, horizon := parseT(c.From), parseT(c.Horizon)
		var got []string
		for range c.Want {
			n := s.Next(after)
			if n.IsZero() {
				break
			}
			got = append(got, n.Format(goldenFormat))
			after = n
		}
		if len(c.Want) < 20 && len(got) == len(c.Want) {
			if n := s.Next(after); !n.IsZero() && n.Before(horizon) {
				got = append(got, n.Format(goldenFormat))
			}
		}
		if strings.Join(got, " ") != strings.Join(c.Want, " ") {
			mismatches++
			if mismatches <= 30 {
				t.Errorf("case %d (%s) from %s:\n%s\nwant %v\ngot  %v", c.ID, c.Family, c.From, c.Text, c.Want, got)
			}
			continue
		}
		agreed++
	}
	require.NoError(t, sc.Err())
	refused := 0
	for _, n := range limits {
		refused += n
	}
	t.Logf("%d golden schedules: %d agree with dateutil (%d of them refused as empty, as dateutil finds no occurrence), %d refused as documented limits %v, %d mismatches",
		total, agreed+emptyAgreed, emptyAgreed, refused, limits, mismatches)
	require.GreaterOrEqual(t, total, 2000)
	require.Zero(t, mismatches)
}

// isEmptyError reports whether err says that the schedule has no
// occurrence at all (rather than that it exceeds a limit).
func isEmptyError(err error) bool {
	for _, s := range []string{"never produces", "no occurrence between", "picks nothing", "no time of day matches", "never reaches", "EXDATE removes every"} {
		if strings.Contains(err.Error(), s) {
			return true
		}
	}
	return false
}
