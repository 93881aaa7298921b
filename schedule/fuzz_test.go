package schedule

import (
	"testing"
	"time"
)

// scheduleFuzzSeeds are inputs that panic or hang rrule-go, DST corner cases
// and ordinary rules.
var scheduleFuzzSeeds = []string{
	"",
	"RRULE:FREQ=DAILY",
	"DTSTART:20240101T090000Z\nRRULE:FREQ=MINUTELY",
	"RRULE:FREQ=MONTHLY;BYDAY=10MO",
	"RRULE:FREQ=YEARLY;BYEASTER=400",
	"RRULE:FREQ=YEARLY;BYEASTER=-400",
	"DTSTART:00000101T000000Z\nRRULE:FREQ=WEEKLY;BYWEEKNO=1",
	"RRULE:FREQ=DAILY;BYDAY=\xff\xfe",
	"DTSTART:20240101T000000Z\nRRULE:FREQ=HOURLY;INTERVAL=2;BYHOUR=1",
	"DTSTART:20240101T000000Z\nRRULE:FREQ=MINUTELY;INTERVAL=2;BYMINUTE=1",
	"DTSTART:20240101T000000Z\nRRULE:FREQ=SECONDLY;INTERVAL=2;BYSECOND=1",
	"DTSTART:20240101T000000Z\nRRULE:FREQ=SECONDLY;INTERVAL=7;BYHOUR=23;BYMINUTE=59;BYSECOND=59",
	"RRULE:FREQ=SECONDLY;BYHOUR=23;BYMINUTE=59;BYSECOND=59;BYMONTH=2;BYMONTHDAY=29",
	"RRULE:FREQ=MINUTELY;BYSECOND=36;COUNT=81;BYSETPOS=3,-4",
	"RRULE:FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30",
	"RRULE:FREQ=YEARLY;BYMONTH=12;BYDAY=53MO",
	"RRULE:FREQ=YEARLY;BYDAY=-53MO;BYWEEKNO=53",
	"RRULE:FREQ=YEARLY;BYWEEKNO=53,-53;BYDAY=SU;WKST=SU",
	"RRULE:FREQ=DAILY;INTERVAL=7;BYDAY=TU",
	"DTSTART;TZID=America/New_York:20240310T023000\nRRULE:FREQ=DAILY",
	"DTSTART;TZID=Europe/Berlin:20241027T023000\nRRULE:FREQ=HOURLY;INTERVAL=3",
	"DTSTART;TZID=Australia/Sydney:20241006T020000\nRRULE:FREQ=MINUTELY;INTERVAL=30;COUNT=10",
	"DTSTART;TZID=Pacific/Apia:20111229T120000\nRRULE:FREQ=HOURLY",
	"DTSTART;TZID=Australia/Lord_Howe:20241006T020000\nRRULE:FREQ=MINUTELY;INTERVAL=15",
	"DTSTART;TZID=America/New_York:20230101T000000\nRRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=2SU;BYHOUR=2;BYMINUTE=30;BYSECOND=0",
	`DTSTART:20240101T090000Z\nRRULE:FREQ=DAILY;COUNT=5\nEXDATE:20240103T090000Z\nRDATE:20240110T120000Z`,
	"DTSTART:99991231T235959Z\nRRULE:FREQ=SECONDLY",
	"DTSTART:19000101T000000Z\nRRULE:FREQ=YEARLY;INTERVAL=100;BYEASTER=250",
	"RRULE:FREQ=MONTHLY;BYMONTHDAY=-31,31;BYSETPOS=-366",
	"RRULE:FREQ=WEEKLY;INTERVAL=5200;BYDAY=MO",
	"RRULE:FREQ=HOURLY;BYMINUTE=0,30;BYSECOND=0,30;BYSETPOS=1,2",
}

// FuzzSchedule checks that Parse and Next never panic, that Next
// never takes more than a second, and that occurrences move strictly forward.
func FuzzSchedule(f *testing.F) {
	for _, s := range scheduleFuzzSeeds {
		f.Add(s, int64(1717243200))
	}
	f.Fuzz(func(t *testing.T, text string, afterUnix int64) {
		s, err := Parse(text)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error text")
			}
			return
		}
		if s.String() == "" {
			t.Fatal("empty normalized text")
		}
		after := time.Unix(afterUnix%(400*365*86400), 0).UTC().AddDate(1900, 0, 0)
		for i := 0; i < 4; i++ {
			next := scheduleNextWithin(t, s, after, time.Second)
			if next.IsZero() {
				return
			}
			if !next.After(after) {
				t.Fatalf("%q: Next(%v) = %v is not after it", text, after, next)
			}
			if next.Location() != time.UTC {
				t.Fatalf("Next returned %v, not UTC", next.Location())
			}
			after = next
		}
	})
}

// scheduleNextWithin calls s.Next(after) and fails the test when it takes
// longer than limit or panics.
func scheduleNextWithin(t *testing.T, s *Schedule, after time.Time, limit time.Duration) time.Time {
	t.Helper()
	type result struct {
		t     time.Time
		panic any
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- result{panic: p}
			}
		}()
		done <- result{t: s.Next(after)}
	}()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case r := <-done:
		if r.panic != nil {
			t.Fatalf("%q: Next(%v) panicked: %v", s.String(), after, r.panic)
		}
		return r.t
	case <-timer.C:
		t.Fatalf("%q: Next(%v) took more than %v", s.String(), after, limit)
		return time.Time{}
	}
}
