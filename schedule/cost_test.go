package schedule

import (
	"strings"
	"testing"
	"time"
)

// costRules are the most expensive schedules found for Next: rules that
// almost never occur, grids that rarely meet their filters, an old DTSTART
// with a huge COUNT, and a thousand EXDATEs. "after" is a time from which
// Next has the longest way to go.
var costRules = []struct{ name, text, after string }{
	{"yearly-feb29-monday-setpos", "DTSTART:19000101T000000Z\nRRULE:FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29;BYDAY=MO;BYSETPOS=1", "2016-03-01T00:00:00Z"},
	{"monthly-feb29-monday", "DTSTART:19000101T000000Z\nRRULE:FREQ=MONTHLY;BYMONTH=2;BYMONTHDAY=29;BYDAY=MO", "2016-03-01T00:00:00Z"},
	{"daily-feb29-monday", "DTSTART:19000101T000000Z\nRRULE:FREQ=DAILY;BYMONTH=2;BYMONTHDAY=29;BYDAY=MO", "2016-03-01T00:00:00Z"},
	{"daily-feb29-monday-count-old", "DTSTART:19000101T000000Z\nRRULE:FREQ=DAILY;COUNT=100000;BYMONTH=2;BYMONTHDAY=29;BYDAY=MO", "2016-03-01T00:00:00Z"},
	{"hourly5-feb29-monday", "DTSTART:19000101T000000Z\nRRULE:FREQ=HOURLY;INTERVAL=5;BYMONTH=2;BYMONTHDAY=29;BYDAY=MO", "2016-03-01T00:00:00Z"},
	{"minutely7-feb29-monday", "DTSTART:20240101T000000Z\nRRULE:FREQ=MINUTELY;INTERVAL=7;BYMONTH=2;BYMONTHDAY=29;BYDAY=MO", "2024-06-01T00:00:00Z"},
	{"minutely7-2359", "DTSTART:20240101T000000Z\nRRULE:FREQ=MINUTELY;INTERVAL=7;BYHOUR=23;BYMINUTE=59", "2024-06-01T00:00:00Z"},
	{"secondly7-235959", "DTSTART:20240101T000000Z\nRRULE:FREQ=SECONDLY;INTERVAL=7;BYHOUR=23;BYMINUTE=59;BYSECOND=59", "2024-06-01T00:00:00Z"},
	{"secondly86399-midnight", "DTSTART:20240101T000001Z\nRRULE:FREQ=SECONDLY;INTERVAL=86399;BYHOUR=0;BYMINUTE=0;BYSECOND=0", "2024-06-01T00:00:00Z"},
	{"secondly86399-midnight-every-month", "DTSTART:20240101T000001Z\nRRULE:FREQ=SECONDLY;INTERVAL=86399;BYHOUR=0;BYMINUTE=0;BYSECOND=0;BYMONTH=1,2,3,4,5,6,7,8,9,10,11,12", "2024-06-01T00:00:00Z"},
	{"minutely1439-midnight-monday", "DTSTART:20240101T000100Z\nRRULE:FREQ=MINUTELY;INTERVAL=1439;BYHOUR=0;BYMINUTE=0;BYDAY=MO", "2024-06-01T00:00:00Z"},
	{"easter-on-march-22", "DTSTART:19000101T000000Z\nRRULE:FREQ=YEARLY;BYEASTER=0;BYMONTH=3;BYMONTHDAY=22", "2016-03-01T00:00:00Z"},
	{"minutely-1000-exdates", "DTSTART:20240101T000000Z\nRRULE:FREQ=MINUTELY" + costExdates(), "2024-05-31T23:59:30Z"},
}

func costExdates() string {
	var b []string
	t := time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)
	for i := range 1000 {
		b = append(b, t.Add(time.Duration(i)*time.Minute).Format("20060102T150405Z"))
	}
	return "\nEXDATE:" + strings.Join(b, ",")
}

// costRefused are rules whose occurrences lie too far apart (or never come):
// Parse must refuse them, and quickly.
var costRefused = []string{
	"DTSTART:20240101T000000Z\nRRULE:FREQ=MINUTELY;INTERVAL=7;BYDAY=TU;BYHOUR=23;BYMINUTE=59",
	"DTSTART:20240101T000000Z\nRRULE:FREQ=SECONDLY;INTERVAL=7;BYDAY=TU;BYHOUR=23;BYMINUTE=59;BYSECOND=59",
	"DTSTART:20240101T120000Z\nRRULE:FREQ=SECONDLY;INTERVAL=86399;BYHOUR=0;BYMINUTE=0;BYSECOND=0;BYMONTH=1,2,3,4,5,6,7,8,9,10,11,12",
	"DTSTART:20240101T000001Z\nRRULE:FREQ=SECONDLY;INTERVAL=999983;BYHOUR=0;BYMINUTE=0;BYSECOND=0;BYDAY=MO",
	"DTSTART:19000101T000000Z\nRRULE:FREQ=YEARLY;BYEASTER=0;BYMONTH=5",
	"DTSTART:19000101T000000Z\nRRULE:FREQ=YEARLY;BYWEEKNO=53;BYDAY=MO;BYMONTH=1;BYMONTHDAY=1",
}

// BenchmarkWorstNext measures Next on costRules.
func BenchmarkWorstNext(b *testing.B) {
	for _, w := range costRules {
		b.Run(w.name, func(b *testing.B) {
			s, err := Parse(w.text)
			if err != nil {
				b.Fatal(err)
			}
			after, _ := time.Parse(time.RFC3339, w.after)
			for b.Loop() {
				s.Next(after)
			}
		})
	}
}

// BenchmarkWorstParse measures Parse on costRefused.
func BenchmarkWorstParse(b *testing.B) {
	for i, text := range costRefused {
		b.Run(strings.Fields(strings.ReplaceAll(text, "\n", " "))[1][6:], func(b *testing.B) {
			_ = i
			for b.Loop() {
				if _, err := Parse(text); err == nil {
					b.Fatal("accepted")
				}
			}
		})
	}
}

// TestNextCostBound is the cost bound as a test: on the worst rules found,
// every Next (and every refusing Parse) takes less than costLimit, far below
// the old engine's worst (hundreds of milliseconds to parse, milliseconds
// per Next). The limit leaves room for a slow, shared machine; the figures
// measured are in docs/schedules.md.
func TestNextCostBound(t *testing.T) {
	if testing.Short() {
		t.Skip("timing test")
	}
	const costLimit = 20 * time.Millisecond
	best := func(f func()) time.Duration {
		b := time.Hour
		for range 5 {
			t0 := time.Now()
			f()
			b = min(b, time.Since(t0))
		}
		return b
	}
	for _, w := range costRules {
		s, err := Parse(w.text)
		if err != nil {
			t.Fatalf("%s: %v", w.name, err)
		}
		after, _ := time.Parse(time.RFC3339, w.after)
		d := best(func() { s.Next(after) })
		t.Logf("%-36s Next %v -> %v", w.name, d, s.Next(after).Format(time.RFC3339))
		if d > costLimit {
			t.Errorf("%s: Next took %v", w.name, d)
		}
	}
	for _, text := range costRefused {
		var err error
		d := best(func() { _, err = Parse(text) })
		t.Logf("refused in %v: %v", d, err)
		if err == nil {
			t.Errorf("accepted %q", text)
		} else if d > costLimit {
			t.Errorf("%q: Parse took %v", text, d)
		}
	}
}

// TestNextCheckedTooFar: a rule accepted because its first occurrence is
// near DTSTART, whose next gap exceeds the search bound, reports ErrTooFar
// from NextChecked (Next reads it as no more occurrences), while an RDATE
// before the bound is still found.
func TestNextCheckedTooFar(t *testing.T) {
	t.Parallel()
	// The grid moves back 1 s a day: 00:00:00 on day 2, then after 86,399 days.
	text := "DTSTART:20240101T000001Z\nRRULE:FREQ=SECONDLY;INTERVAL=86399;BYHOUR=0;BYMINUTE=0;BYSECOND=0"
	s, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	after := time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)
	n, err := s.NextChecked(after)
	if !n.IsZero() || err != ErrTooFar {
		t.Fatalf("NextChecked = %v, %v; want zero, ErrTooFar", n, err)
	}
	if !s.Next(after).IsZero() {
		t.Fatal("Next should be zero")
	}
	s, err = Parse(text + "\nRDATE:20300101T000000Z")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.NextChecked(after); err != nil || !n.Equal(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("NextChecked = %v, %v; want the RDATE", n, err)
	}
	// A rule that ends is not "too far".
	s, _ = Parse("DTSTART:20240101T000000Z\nRRULE:FREQ=HOURLY;COUNT=2")
	if n, err := s.NextChecked(after); !n.IsZero() || err != nil {
		t.Fatalf("NextChecked = %v, %v; want zero, nil", n, err)
	}
}
