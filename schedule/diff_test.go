package schedule

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/teambition/rrule-go"
)

// schedRandomRule returns a random RRULE (without the "RRULE:" prefix) and a
// DTSTART age that keeps rrule-go's walk from DTSTART cheap.
func schedRandomRule(r *rand.Rand) (rule string, age time.Duration) {
	freqs := []string{"SECONDLY", "MINUTELY", "HOURLY", "DAILY", "WEEKLY", "MONTHLY", "YEARLY"}
	ages := []time.Duration{3 * time.Hour, 3 * 24 * time.Hour, 90 * 24 * time.Hour, 3 * 365 * 24 * time.Hour,
		10 * 365 * 24 * time.Hour, 20 * 365 * 24 * time.Hour, 60 * 365 * 24 * time.Hour}
	fi := r.IntN(len(freqs))
	freq := freqs[fi]
	parts := []string{"FREQ=" + freq}
	pick := func(lo, hi, max int, signed bool) string {
		n := 1 + r.IntN(max)
		var vs []string
		for range n {
			v := lo + r.IntN(hi-lo+1)
			if signed && r.IntN(3) == 0 {
				v = -v
			}
			if !slices.Contains(vs, strconv.Itoa(v)) { // rrule-go keeps duplicates in BYSETPOS sets
				vs = append(vs, strconv.Itoa(v))
			}
		}
		return strings.Join(vs, ",")
	}
	if r.IntN(2) == 0 {
		intervals := []int{2, 3, 4, 5, 7, 10, 12, 15, 30, 45, 90, 100}
		parts = append(parts, "INTERVAL="+strconv.Itoa(intervals[r.IntN(len(intervals))]))
	}
	sub := fi <= 2
	dayFilter := false
	if r.IntN(4) == 0 {
		parts = append(parts, "BYMONTH="+pick(1, 12, 3, false))
		dayFilter = true
	}
	if freq != "WEEKLY" && r.IntN(4) == 0 {
		parts = append(parts, "BYMONTHDAY="+pick(1, 31, 3, true))
		dayFilter = true
	}
	if (freq == "YEARLY" || sub) && r.IntN(6) == 0 {
		parts = append(parts, "BYYEARDAY="+pick(1, 366, 4, true))
		dayFilter = true
	}
	if freq == "YEARLY" && r.IntN(6) == 0 {
		parts = append(parts, "BYWEEKNO="+pick(1, 53, 3, true))
		dayFilter = true
	}
	if r.IntN(3) == 0 {
		n := 1 + r.IntN(3)
		var ds []string
		for range n {
			d := weekdayNames[r.IntN(7)]
			if (freq == "MONTHLY" || freq == "YEARLY") && !strings.Contains(strings.Join(parts, ";"), "BYWEEKNO") && r.IntN(2) == 0 {
				nth := 1 + r.IntN(4)
				if r.IntN(3) == 0 {
					nth = -nth
				}
				d = strconv.Itoa(nth) + d
			}
			if !slices.Contains(ds, d) {
				ds = append(ds, d)
			}
		}
		parts = append(parts, "BYDAY="+strings.Join(ds, ","))
		dayFilter = true
	}
	if r.IntN(3) == 0 {
		parts = append(parts, "BYHOUR="+pick(0, 23, 3, false))
	}
	if r.IntN(3) == 0 {
		parts = append(parts, "BYMINUTE="+pick(0, 59, 3, false))
	}
	if r.IntN(4) == 0 {
		parts = append(parts, "BYSECOND="+pick(0, 59, 2, false))
	}
	if freq != "SECONDLY" && len(parts) > 1 && r.IntN(5) == 0 {
		parts = append(parts, "BYSETPOS="+pick(1, 4, 2, true))
	}
	if r.IntN(5) == 0 {
		parts = append(parts, "WKST="+weekdayNames[r.IntN(7)])
	}
	if r.IntN(5) == 0 {
		parts = append(parts, "COUNT="+strconv.Itoa(1+r.IntN(200)))
	}
	_ = dayFilter
	r.Shuffle(len(parts)-1, func(i, j int) { parts[i+1], parts[j+1] = parts[j+1], parts[i+1] })
	return strings.Join(parts, ";"), ages[fi]
}

// TestScheduleMatchesRRuleGo compares Next with rrule-go's own After, walked
// from the real DTSTART, on random rules in UTC (where rrule-go has no DST
// bugs). It proves that moving DTSTART forward, writing out the DTSTART
// defaults, the days x times strategy and COUNT-as-last-occurrence are exact.
func TestScheduleMatchesRRuleGo(t *testing.T) {
	t.Parallel()
	rules := 3000
	if testing.Short() {
		rules = 300
	}
	r := rand.New(rand.NewPCG(20240601, 7))
	now := time.Date(2024, 6, 1, 12, 0, 0, 0, time.UTC)
	accepted, compared := 0, 0
	for i := 0; i < rules; i++ {
		rule, age := schedRandomRule(r)
		start := now.Add(-time.Duration(r.Int64N(int64(age)))).Truncate(time.Second)
		text := "DTSTART:" + start.Format("20060102T150405Z") + "\nRRULE:" + rule
		if r.IntN(8) == 0 {
			until := start.Add(time.Duration(r.Int64N(int64(2 * age)))).Truncate(time.Second)
			text += ";UNTIL=" + until.Format("20060102T150405Z")
			if strings.Contains(text, "COUNT=") {
				continue
			}
		}
		s, err := Parse(text)
		if err != nil {
			continue
		}
		accepted++
		ref, err := rrule.StrToRRuleSet(text)
		require.NoError(t, err, text)
		for range 4 {
			var after time.Time
			switch r.IntN(4) {
			case 0:
				after = start.Add(-time.Duration(r.Int64N(int64(age / 10))))
			case 3:
				after = now.Add(time.Duration(r.Int64N(int64(age))))
			default:
				after = start.Add(time.Duration(r.Int64N(int64(age))))
			}
			if r.IntN(2) == 0 {
				after = after.Truncate(time.Second)
			}
			for step := range 3 {
				t0 := time.Now()
				want := ref.After(after, false)
				refTime := time.Since(t0)
				got := s.Next(after)
				if horizon := start.AddDate(280, 0, 0); got.After(horizon) || want.After(horizon) {
					break // rrule-go stops 292 years after DTSTART
				}
				compared++
				require.Truef(t, want.Equal(got), "rule %d step %d:\n%s\nafter %s: rrule-go %s, Next %s",
					i, step, text, after.Format(time.RFC3339Nano), fmtTime(want), fmtTime(got))
				if refTime > 20*time.Millisecond {
					break // rrule-go's own walk is slow on this rule (that is why Next does not use it)
				}
				if got.IsZero() {
					break
				}
				after = got
			}
		}
	}
	t.Logf("%d of %d random rules accepted, %d Next calls compared", accepted, rules, compared)
	require.Greater(t, accepted, rules/2, "the generator should mostly produce valid rules")
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "none"
	}
	return t.Format(time.RFC3339)
}

// TestScheduleMatchesRRuleGoOldDTSTART checks DTSTART forwarding over long
// distances on rules where rrule-go's walk from DTSTART is still affordable.
func TestScheduleMatchesRRuleGoOldDTSTART(t *testing.T) {
	t.Parallel()
	after := time.Date(2024, 7, 1, 10, 17, 23, 0, time.UTC)
	for _, tc := range []struct{ start, rule string }{
		{"20190701T101723Z", "FREQ=HOURLY;INTERVAL=5;BYMINUTE=15,45"},
		{"20190702T000013Z", "FREQ=HOURLY;INTERVAL=7"},
		{"20230101T000007Z", "FREQ=MINUTELY;INTERVAL=7"},
		{"20230101T000007Z", "FREQ=MINUTELY;INTERVAL=90;BYDAY=MO,TH"},
		{"20240601T000007Z", "FREQ=SECONDLY;INTERVAL=3600;BYMINUTE=0"},
		{"19840701T101723Z", "FREQ=DAILY;INTERVAL=3"},
		{"19840703T081500Z", "FREQ=WEEKLY;INTERVAL=2;BYDAY=TU,TH;WKST=SU"},
		{"19840131T081500Z", "FREQ=MONTHLY;INTERVAL=5"},
		{"19840701T081500Z", "FREQ=MONTHLY;INTERVAL=5;BYDAY=1MO,-1FR"},
		{"19840704T081500Z", "FREQ=YEARLY;INTERVAL=3"},
		{"19840229T081500Z", "FREQ=YEARLY"},
		{"19840101T081500Z", "FREQ=YEARLY;BYWEEKNO=1,53;BYDAY=MO"},
		{"19840101T081500Z", "FREQ=YEARLY;BYEASTER=-2,0,1"},
		{"19840101T081500Z", "FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1,3"},
		{"19900101T081500Z", "FREQ=DAILY;COUNT=20000"},
	} {
		text := "DTSTART:" + tc.start + "\nRRULE:" + tc.rule
		s := schedParse(t, text)
		ref, err := rrule.StrToRRuleSet(text)
		require.NoError(t, err)
		a := after
		for range 10 {
			want := ref.After(a, false)
			got := s.Next(a)
			require.Truef(t, want.Equal(got), "%s after %s: rrule-go %s, Next %s", tc.rule, a, fmtTime(want), fmtTime(got))
			if got.IsZero() {
				break
			}
			a = got
		}
	}
}

func ExampleParse() {
	s, err := Parse(`DTSTART;TZID=America/New_York:20240101T023000\nRRULE:FREQ=DAILY`)
	if err != nil {
		fmt.Println("Invalid refresh schedule: " + err.Error())
		return
	}
	t := time.Date(2024, 3, 9, 12, 0, 0, 0, time.UTC)
	for range 3 {
		t = s.Next(t)
		fmt.Println(t.Format(time.RFC3339), t.In(s.loc).Format("15:04 MST"))
	}
	_, err = Parse("RRULE:FREQ=DAYLY")
	fmt.Println("Invalid refresh schedule: " + err.Error())
	// Output:
	// 2024-03-10T07:30:00Z 03:30 EDT
	// 2024-03-11T06:30:00Z 02:30 EDT
	// 2024-03-12T06:30:00Z 02:30 EDT
	// Invalid refresh schedule: RRULE: unknown FREQ "DAYLY" (use SECONDLY, MINUTELY, HOURLY, DAILY, WEEKLY, MONTHLY or YEARLY)
}
