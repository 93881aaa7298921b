package schedule

import (
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/teambition/rrule-go"
)

// TestCountEndMatchesRRuleGo compares COUNT's last occurrence, as countEnd
// finds it (per-day counts, cycles, restarts), with rrule-go's own COUNT
// walked from DTSTART, on random rules in UTC.
func TestCountEndMatchesRRuleGo(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(20261126, 20))
	countPart := regexp.MustCompile(`;?COUNT=\d+`)
	checked := 0
	for i := 0; i < 3000 && checked < 600; i++ {
		rule, age := schedRandomRule(r)
		rule = strings.TrimPrefix(countPart.ReplaceAllString(rule, ""), ";")
		start := time.Date(2024, 6, 1, 12, 34, 56, 0, time.UTC).Add(-age).Truncate(time.Second)
		k := 1 + r.IntN(400)
		text := "DTSTART:" + start.Format("20060102T150405Z") + "\nRRULE:" + rule + ";COUNT=" + strconv.Itoa(k)
		s, err := Parse(text)
		if err != nil || s.eng == nil || s.eng.easter != nil {
			continue
		}
		opt := s.eng.orig
		opt.Count = k
		ref, err := rrule.NewRRule(opt)
		require.NoError(t, err)
		done := make(chan []time.Time, 1)
		go func() { done <- ref.All() }()
		var all []time.Time
		select {
		case all = <-done:
		case <-time.After(2 * time.Second):
			continue // rrule-go's own walk is too slow for this rule
		}
		if len(all) < k {
			continue // beyond rrule-go's year 9999
		}
		checked++
		require.Equal(t, all[k-1].Format(time.RFC3339), s.endWall.Format(time.RFC3339), "%q", text)
	}
	require.Greater(t, checked, 300, "rules compared")
}

// TestCountOverCenturies: the COUNT rules that used to stop silently after
// a century of DTSTART (the search window) go on as RFC 5545 says, the
// values from python-dateutil.
func TestCountOverCenturies(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ text, after, want, end string }{
		{"DTSTART:19000101T000000Z\nRRULE:FREQ=SECONDLY;INTERVAL=7;BYHOUR=23;BYMINUTE=59;BYSECOND=59;COUNT=100000",
			"2026-11-20T00:00:00Z", "2026-11-21T23:59:59Z", "3816-07-13T23:59:59Z"},
		{"DTSTART:19200101T000000Z\nRRULE:FREQ=HOURLY;COUNT=5000;BYMONTH=2;BYMONTHDAY=29",
			"2026-11-26T00:00:00Z", "2028-02-29T00:00:00Z", "2776-02-29T07:00:00Z"},
		{"DTSTART:19000101T000000Z\nRRULE:FREQ=YEARLY;COUNT=5000", "2026-11-26T00:00:00Z", "2027-01-01T00:00:00Z", "6899-01-01T00:00:00Z"},
	} {
		s, err := Parse(c.text)
		require.NoError(t, err, c.text)
		after, _ := time.Parse(time.RFC3339, c.after)
		require.Equal(t, c.want, s.Next(after).Format(time.RFC3339), c.text)
		require.Equal(t, c.end, s.endWall.Format(time.RFC3339), c.text)
		end, _ := time.Parse(time.RFC3339, c.end)
		require.Equal(t, c.end, s.Next(end.Add(-time.Second)).Format(time.RFC3339), c.text)
		require.True(t, s.Next(end).IsZero(), "%q: nothing after the COUNT-th", c.text)
	}
}

// countCostRules are COUNT rules that are expensive to count: dense grids,
// sparse filters, centuries of occurrences, and grids that do not repeat
// with the calendar.
var countCostRules = []string{
	"DTSTART:20261126T000000Z\nRRULE:FREQ=SECONDLY;COUNT=100000;BYSECOND=" + intList(0, 58),
	"DTSTART:19000101T000000Z\nRRULE:FREQ=SECONDLY;INTERVAL=7;BYHOUR=23;BYMINUTE=59;BYSECOND=59;COUNT=100000",
	"DTSTART:19000101T000000Z\nRRULE:FREQ=SECONDLY;INTERVAL=13;BYHOUR=23;BYMINUTE=59;COUNT=100000",
	"DTSTART:19000101T000000Z\nRRULE:FREQ=SECONDLY;INTERVAL=7;COUNT=100000;BYMONTH=2;BYMONTHDAY=29;BYHOUR=0;BYMINUTE=0",
	"DTSTART:19200101T000000Z\nRRULE:FREQ=HOURLY;COUNT=5000;BYMONTH=2;BYMONTHDAY=29",
	"DTSTART:19000101T000001Z\nRRULE:FREQ=SECONDLY;INTERVAL=86399;BYHOUR=0;BYMINUTE=0;BYSECOND=0;COUNT=100000",
	"DTSTART:19000101T000000Z\nRRULE:FREQ=MINUTELY;INTERVAL=1439;COUNT=100000;BYDAY=MO",
	"DTSTART:19000101T000000Z\nRRULE:FREQ=MINUTELY;COUNT=100000;BYMONTH=2;BYMONTHDAY=29;BYDAY=MO;BYHOUR=0;BYMINUTE=0",
	"DTSTART:19000101T000000Z\nRRULE:FREQ=DAILY;COUNT=100000;BYMONTH=2;BYMONTHDAY=29;BYDAY=MO",
	"DTSTART:19000101T000000Z\nRRULE:FREQ=DAILY;INTERVAL=11;COUNT=100000;BYMONTH=2;BYMONTHDAY=29",
	"DTSTART:19000101T000000Z\nRRULE:FREQ=DAILY;COUNT=100000",
	"DTSTART:19000101T000000Z\nRRULE:FREQ=MONTHLY;COUNT=100000;BYMONTHDAY=1,2,3,4,5,6,7,8,9,10",
	"DTSTART:19000101T000000Z\nRRULE:FREQ=YEARLY;COUNT=100000;BYEASTER=0",
	"DTSTART:19000101T000000Z\nRRULE:FREQ=YEARLY;COUNT=100000;BYMONTH=2;BYMONTHDAY=29;BYDAY=MO",
}

func intList(lo, hi int) string {
	var b []string
	for i := lo; i <= hi; i++ {
		b = append(b, strconv.Itoa(i))
	}
	return strings.Join(b, ",")
}

// TestCountWorkBound: on the rules above, counting COUNT looks at no more
// than two 400-year cycles of days, 1,440 grid blocks a day for at most a
// few thousand distinct day phases, and maxCountSteps enumerated
// occurrences; a rule that would need more is refused with a reason that
// names UNTIL. The whole Parse plus the first Next stays under a generous
// time bound (a few milliseconds on a quiet machine).
func TestCountWorkBound(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	for _, text := range countCostRules {
		p, err := parseText(text)
		require.NoError(t, err)
		eng, err := newEngine(&p.rule, p.startWall)
		require.NoError(t, err, text)
		var w countWork
		end, err := eng.countEnd(p.rule.count, &w)
		require.LessOrEqual(t, w.days, 2*cycleDays+2, text)
		require.LessOrEqual(t, w.points, 2*86400+4*1440, text)
		require.LessOrEqual(t, w.steps, maxCountSteps+1, text)
		if err != nil {
			require.Contains(t, err.Error(), "use UNTIL instead of COUNT", text)
		}
		best := time.Hour
		for range 3 {
			t0 := time.Now()
			s, perr := Parse(text)
			if perr == nil {
				s.Next(now)
			}
			best = min(best, time.Since(t0))
		}
		t.Logf("%-8v work %+v end %v err %v: %q", best.Round(time.Microsecond), w, end.Format(time.RFC3339), err, text)
		require.Less(t, best, 50*time.Millisecond, text)
	}
}

// TestSkipDayMatchesSkip: the integer calendar of the COUNT walk agrees
// with dayFilter.skip on every day of a 400-year cycle and a half.
func TestSkipDayMatchesSkip(t *testing.T) {
	t.Parallel()
	for _, rule := range []string{
		"FREQ=HOURLY;BYMONTH=2,7;BYMONTHDAY=29,-1", "FREQ=HOURLY;BYDAY=MO,SU;BYYEARDAY=1,60,-1,-306",
		"FREQ=MINUTELY;BYMONTHDAY=-31,15", "FREQ=SECONDLY;BYYEARDAY=366,-366", "FREQ=HOURLY",
	} {
		p, err := parseText("DTSTART:19000101T000000Z\nRRULE:" + rule)
		require.NoError(t, err)
		f := newDayFilter(&p.rule)
		first := floorDiv(time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC).Unix(), secondsPerDay)
		for d := first; d < first+cycleDays*3/2; d++ {
			day := time.Unix(d*secondsPerDay, 0).UTC()
			require.Equal(t, f.skip(day), f.skipDay(d), "%s on %s", rule, day.Format(time.DateOnly))
		}
	}
}

// TestCountCostlyNotReplacedByRDATEs: a COUNT the engine refuses is refused
// with RDATEs too, rather than leaving the RDATEs alone as the set.
func TestCountCostlyNotReplacedByRDATEs(t *testing.T) {
	t.Parallel()
	_, err := Parse("DTSTART:19000101T000000Z\nRRULE:FREQ=MONTHLY;COUNT=100000;BYMONTHDAY=1,2,3,4,5,6,7,8,9,10\nRDATE:20300101T000000Z")
	require.ErrorContains(t, err, "use UNTIL instead of COUNT")
}
