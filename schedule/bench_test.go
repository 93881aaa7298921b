package schedule

import (
	"testing"
	"time"
)

// BenchmarkNext measures Next for rules whose DTSTART is 1 day and 5 years
// before the asked time. rrule-go's own After walks from DTSTART (about 1 s
// and 63 MB per call for the 5-year MINUTELY rule); Next must cost about the
// same for both ages.
func BenchmarkNext(b *testing.B) {
	now := time.Date(2024, 6, 1, 12, 0, 30, 0, time.UTC)
	for _, freq := range []string{"MINUTELY", "HOURLY"} {
		for _, age := range []struct {
			name  string
			start time.Time
		}{
			{"1day", now.AddDate(0, 0, -1)},
			{"5years", now.AddDate(-5, 0, 0)},
		} {
			b.Run(freq+"/"+age.name, func(b *testing.B) {
				text := "DTSTART;TZID=Europe/Berlin:" + age.start.Format("20060102T150405") + "\nRRULE:FREQ=" + freq
				s, err := Parse(text)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					if s.Next(now).IsZero() {
						b.Fatal("no occurrence")
					}
				}
			})
		}
	}
}

// BenchmarkParse measures a parse through a Cache and a plain one.
func BenchmarkParse(b *testing.B) {
	text := "DTSTART;TZID=Europe/Berlin:20240101T140000\nRRULE:FREQ=DAILY;BYHOUR=14;BYMINUTE=0;BYSECOND=0"
	b.Run("cached", func(b *testing.B) {
		c := NewCache(16)
		for b.Loop() {
			if _, err := c.Parse(text); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("uncached", func(b *testing.B) {
		for b.Loop() {
			if _, err := parse(text); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestScheduleNextCostIndependentOfAge is the benchmark's claim as a test:
// the 5-year-old rule is not much slower than the fresh one.
func TestScheduleNextCostIndependentOfAge(t *testing.T) {
	if testing.Short() {
		t.Skip("timing test")
	}
	now := time.Date(2024, 6, 1, 12, 0, 30, 0, time.UTC)
	cost := func(start time.Time) time.Duration {
		s := schedParse(t, "DTSTART;TZID=Europe/Berlin:"+start.Format("20060102T150405")+"\nRRULE:FREQ=MINUTELY")
		best := time.Hour
		for range 5 {
			t0 := time.Now()
			for range 200 {
				s.Next(now)
			}
			best = min(best, time.Since(t0)/200)
		}
		return best
	}
	fresh, old := cost(now.AddDate(0, 0, -1)), cost(now.AddDate(-5, 0, 0))
	t.Logf("Next: %v with DTSTART 1 day back, %v with DTSTART 5 years back", fresh, old)
	if old > 3*fresh+20*time.Microsecond {
		t.Fatalf("5-year-old rule costs %v per Next, fresh one %v", old, fresh)
	}
}
