package schedule

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func schedParse(t *testing.T, text string) *Schedule {
	t.Helper()
	s, err := Parse(text)
	require.NoError(t, err, "text: %q", text)
	return s
}

func schedUTC(t *testing.T, v string) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339, v)
	require.NoError(t, err)
	return tm.UTC()
}

// schedSeq returns the next n occurrences after from, as RFC 3339 UTC
// strings ("-" for the zero time).
func schedSeq(s *Schedule, from time.Time, n int) []string {
	var out []string
	t := from
	for range n {
		t = s.Next(t)
		if t.IsZero() {
			out = append(out, "-")
			break
		}
		out = append(out, t.Format(time.RFC3339))
	}
	return out
}

func TestScheduleNextTable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		text string
		from string
		want []string
	}{
		// Europe/Berlin 2024: clocks go 02:00 CET -> 03:00 CEST on 31 March
		// (01:00Z) and 03:00 CEST -> 02:00 CET on 27 October (01:00Z).
		{"berlin daily 02:30 spring forward", "DTSTART;TZID=Europe/Berlin:20240101T023000\nRRULE:FREQ=DAILY",
			"2024-03-29T12:00:00Z", []string{"2024-03-30T01:30:00Z", "2024-03-31T01:30:00Z", "2024-04-01T00:30:00Z"}},
		{"berlin daily 01:30 spring forward", "DTSTART;TZID=Europe/Berlin:20240101T013000\nRRULE:FREQ=DAILY",
			"2024-03-29T12:00:00Z", []string{"2024-03-30T00:30:00Z", "2024-03-31T00:30:00Z", "2024-03-31T23:30:00Z"}},
		{"berlin daily 02:30 fall back takes the first", "DTSTART;TZID=Europe/Berlin:20240101T023000\nRRULE:FREQ=DAILY",
			"2024-10-25T12:00:00Z", []string{"2024-10-26T00:30:00Z", "2024-10-27T00:30:00Z", "2024-10-28T01:30:00Z"}},
		{"berlin hourly spring forward", "DTSTART;TZID=Europe/Berlin:20240330T220000\nRRULE:FREQ=HOURLY",
			"2024-03-30T21:30:00Z", []string{"2024-03-30T22:00:00Z", "2024-03-30T23:00:00Z", "2024-03-31T00:00:00Z", "2024-03-31T01:00:00Z", "2024-03-31T02:00:00Z"}},
		{"berlin hourly fall back skips the repeated hour", "DTSTART;TZID=Europe/Berlin:20241026T220000\nRRULE:FREQ=HOURLY",
			"2024-10-26T22:30:00Z", []string{"2024-10-26T23:00:00Z", "2024-10-27T00:00:00Z", "2024-10-27T02:00:00Z", "2024-10-27T03:00:00Z"}},

		// America/New_York 2024: 02:00 EST -> 03:00 EDT on 10 March (07:00Z),
		// 02:00 EDT -> 01:00 EST on 3 November (06:00Z).
		{"new york daily 02:30 spring forward", "DTSTART;TZID=America/New_York:20240101T023000\nRRULE:FREQ=DAILY",
			"2024-03-08T12:00:00Z", []string{"2024-03-09T07:30:00Z", "2024-03-10T07:30:00Z", "2024-03-11T06:30:00Z"}},
		{"new york daily 01:30 fall back takes the first", "DTSTART;TZID=America/New_York:20240101T013000\nRRULE:FREQ=DAILY",
			"2024-11-01T12:00:00Z", []string{"2024-11-02T05:30:00Z", "2024-11-03T05:30:00Z", "2024-11-04T06:30:00Z"}},
		{"new york daily 02:30 fall back", "DTSTART;TZID=America/New_York:20240101T023000\nRRULE:FREQ=DAILY",
			"2024-11-01T12:00:00Z", []string{"2024-11-02T06:30:00Z", "2024-11-03T07:30:00Z", "2024-11-04T07:30:00Z"}},
		{"new york DTSTART in the gap", "DTSTART;TZID=America/New_York:20240310T023000\nRRULE:FREQ=DAILY",
			"2024-01-01T00:00:00Z", []string{"2024-03-10T07:30:00Z", "2024-03-11T06:30:00Z", "2024-03-12T06:30:00Z"}},
		{"new york hourly spring forward", "DTSTART;TZID=America/New_York:20240310T000000\nRRULE:FREQ=HOURLY",
			"2024-03-10T05:30:00Z", []string{"2024-03-10T06:00:00Z", "2024-03-10T07:00:00Z", "2024-03-10T08:00:00Z"}},
		{"new york hourly fall back", "DTSTART;TZID=America/New_York:20241103T000000\nRRULE:FREQ=HOURLY",
			"2024-11-03T03:30:00Z", []string{"2024-11-03T04:00:00Z", "2024-11-03T05:00:00Z", "2024-11-03T07:00:00Z", "2024-11-03T08:00:00Z"}},
		{"new york every 30 minutes across the gap", "DTSTART;TZID=America/New_York:20240310T000000\nRRULE:FREQ=MINUTELY;INTERVAL=30",
			"2024-03-10T06:15:00Z", []string{"2024-03-10T06:30:00Z", "2024-03-10T07:00:00Z", "2024-03-10T07:30:00Z", "2024-03-10T08:00:00Z"}},
		{"new york weekly sunday 02:30", "DTSTART;TZID=America/New_York:20240303T023000\nRRULE:FREQ=WEEKLY;BYDAY=SU",
			"2024-03-01T00:00:00Z", []string{"2024-03-03T07:30:00Z", "2024-03-10T07:30:00Z", "2024-03-17T06:30:00Z"}},
		{"new york yearly rule that always falls in the gap", "DTSTART;TZID=America/New_York:20230101T000000\nRRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=2SU;BYHOUR=2;BYMINUTE=30;BYSECOND=0",
			"2023-06-01T00:00:00Z", []string{"2024-03-10T07:30:00Z", "2025-03-09T07:30:00Z"}},

		// Australia/Sydney 2024: 03:00 AEDT -> 02:00 AEST on 7 April
		// (16:00Z on the 6th), 02:00 AEST -> 03:00 AEDT on 6 October (16:00Z on the 5th).
		{"sydney daily 02:30 fall back takes the first", "DTSTART;TZID=Australia/Sydney:20240101T023000\nRRULE:FREQ=DAILY",
			"2024-04-05T00:00:00Z", []string{"2024-04-05T15:30:00Z", "2024-04-06T15:30:00Z", "2024-04-07T16:30:00Z"}},
		{"sydney daily 02:30 spring forward", "DTSTART;TZID=Australia/Sydney:20240101T023000\nRRULE:FREQ=DAILY",
			"2024-10-04T00:00:00Z", []string{"2024-10-04T16:30:00Z", "2024-10-05T16:30:00Z", "2024-10-06T15:30:00Z"}},
		{"sydney daily 01:30 spring forward", "DTSTART;TZID=Australia/Sydney:20240101T013000\nRRULE:FREQ=DAILY",
			"2024-10-04T00:00:00Z", []string{"2024-10-04T15:30:00Z", "2024-10-05T15:30:00Z", "2024-10-06T14:30:00Z"}},
		{"sydney hourly fall back", "DTSTART;TZID=Australia/Sydney:20240406T000000\nRRULE:FREQ=HOURLY",
			"2024-04-06T14:30:00Z", []string{"2024-04-06T15:00:00Z", "2024-04-06T17:00:00Z", "2024-04-06T18:00:00Z"}},

		// Months and weeks.
		{"berlin monthly last day keeps 09:00", "DTSTART;TZID=Europe/Berlin:20240131T090000\nRRULE:FREQ=MONTHLY;BYMONTHDAY=-1",
			"2024-01-01T00:00:00Z", []string{"2024-01-31T08:00:00Z", "2024-02-29T08:00:00Z", "2024-03-31T07:00:00Z", "2024-04-30T07:00:00Z"}},
		{"monthly on the 31st skips short months", "DTSTART:20240131T120000Z\nRRULE:FREQ=MONTHLY",
			"2024-01-31T12:00:00Z", []string{"2024-03-31T12:00:00Z", "2024-05-31T12:00:00Z", "2024-07-31T12:00:00Z"}},
		{"monthly last workday", "DTSTART:20240101T170000Z\nRRULE:FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1",
			"2024-01-01T00:00:00Z", []string{"2024-01-31T17:00:00Z", "2024-02-29T17:00:00Z", "2024-03-29T17:00:00Z"}},
		{"every other week on monday and friday", "DTSTART:20240101T080000Z\nRRULE:FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,FR",
			"2024-01-01T08:00:00Z", []string{"2024-01-05T08:00:00Z", "2024-01-15T08:00:00Z", "2024-01-19T08:00:00Z"}},
		{"yearly february 29", "DTSTART:20240229T000000Z\nRRULE:FREQ=YEARLY",
			"2024-02-29T00:00:00Z", []string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"}},

		// Ends, EXDATE and RDATE.
		{"count ends", "DTSTART:20240101T090000Z\nRRULE:FREQ=DAILY;COUNT=3",
			"2023-12-31T00:00:00Z", []string{"2024-01-01T09:00:00Z", "2024-01-02T09:00:00Z", "2024-01-03T09:00:00Z", "-"}},
		{"until ends, inclusive", "DTSTART;TZID=America/New_York:20240101T090000\nRRULE:FREQ=DAILY;UNTIL=20240103T140000Z",
			"2023-12-31T00:00:00Z", []string{"2024-01-01T14:00:00Z", "2024-01-02T14:00:00Z", "2024-01-03T14:00:00Z", "-"}},
		{"exdate and rdate", "DTSTART:20240101T090000Z\nRRULE:FREQ=DAILY;COUNT=5\nEXDATE:20240103T090000Z\nRDATE:20240110T120000Z",
			"2023-12-31T00:00:00Z", []string{"2024-01-01T09:00:00Z", "2024-01-02T09:00:00Z", "2024-01-04T09:00:00Z", "2024-01-05T09:00:00Z", "2024-01-10T12:00:00Z", "-"}},
		{"exdate with tzid compares instants", "DTSTART;TZID=Europe/Berlin:20240101T090000\nRRULE:FREQ=DAILY\nEXDATE;TZID=Europe/Berlin:20240102T090000,20240103T090000\nEXDATE:20240104T080000Z",
			"2024-01-01T08:00:00Z", []string{"2024-01-05T08:00:00Z"}},
		{"rdate before the rule", "DTSTART:20240101T090000Z\nRRULE:FREQ=WEEKLY\nRDATE;TZID=Europe/Berlin:20231225T100000",
			"2023-12-01T00:00:00Z", []string{"2023-12-25T09:00:00Z", "2024-01-01T09:00:00Z", "2024-01-08T09:00:00Z"}},
		{"empty rule, RDATE gives the set (RFC 5545 3.8.5)", "DTSTART:20240101T000000Z\nRRULE:FREQ=HOURLY;BYMINUTE=0;BYSETPOS=2\nRDATE:20240105T120000Z",
			"2023-12-31T00:00:00Z", []string{"2024-01-05T12:00:00Z", "-"}},
		{"all-day DTSTART, EXDATE and RDATE are midnight in the rule's zone", "DTSTART;TZID=Europe/Berlin;VALUE=DATE:20240101\nRRULE:FREQ=DAILY;COUNT=4\nEXDATE;VALUE=DATE:20240102\nRDATE;VALUE=DATE:20240110",
			"2023-12-31T00:00:00Z", []string{"2023-12-31T23:00:00Z", "2024-01-02T23:00:00Z", "2024-01-03T23:00:00Z", "2024-01-09T23:00:00Z", "-"}},
		{"all-day floating DTSTART is UTC midnight", "DTSTART;VALUE=DATE:20240101\nRRULE:FREQ=WEEKLY",
			"2024-01-01T00:00:00Z", []string{"2024-01-08T00:00:00Z"}},
		{"SECONDLY with an INTERVAL that does not divide a day, on Mondays", "DTSTART:20240101T000001Z\nRRULE:FREQ=SECONDLY;INTERVAL=7;BYDAY=MO;BYHOUR=0;BYMINUTE=0",
			"2024-01-01T00:00:00Z", []string{"2024-01-01T00:00:01Z", "2024-01-01T00:00:08Z", "2024-01-01T00:00:15Z"}},
		{"SECONDLY INTERVAL=7 moves its grid by 1 s a day", "DTSTART:20240101T000001Z\nRRULE:FREQ=SECONDLY;INTERVAL=7;BYDAY=TU;BYHOUR=0;BYMINUTE=0",
			"2024-01-01T00:00:00Z", []string{"2024-01-02T00:00:02Z", "2024-01-02T00:00:09Z"}},
		{"SECONDLY BYSETPOS=1 keeps the second", "DTSTART:20240101T000000Z\nRRULE:FREQ=SECONDLY;BYSETPOS=1;BYHOUR=3;BYMINUTE=4;BYSECOND=5",
			"2024-01-01T00:00:00Z", []string{"2024-01-01T03:04:05Z", "2024-01-02T03:04:05Z"}},
		{"exdate removes an rdate too", "DTSTART:20240101T090000Z\nRRULE:FREQ=DAILY;COUNT=1\nRDATE:20240105T000000Z\nEXDATE:20240105T000000Z",
			"2023-12-31T00:00:00Z", []string{"2024-01-01T09:00:00Z", "-"}},

		// No DTSTART: anchored at 2000-01-01T00:00:00Z, never at now.
		{"no dtstart daily at 14:00", "RRULE:FREQ=DAILY;BYHOUR=14;BYMINUTE=0;BYSECOND=0",
			"2024-05-05T15:00:00Z", []string{"2024-05-06T14:00:00Z", "2024-05-07T14:00:00Z"}},
		{"no dtstart daily at midnight", "RRULE:FREQ=DAILY",
			"2024-05-05T15:00:00Z", []string{"2024-05-06T00:00:00Z"}},
		{"no dtstart every 5 hours keeps the 2000 phase", "FREQ=HOURLY;INTERVAL=5",
			"2024-01-01T00:00:00Z", []string{"2024-01-01T01:00:00Z", "2024-01-01T06:00:00Z"}},

		// Separators.
		{"literal backslash-n separators", `DTSTART:20240101T090000Z\nRRULE:FREQ=DAILY\nEXDATE:20240102T090000Z`,
			"2024-01-01T09:00:00Z", []string{"2024-01-03T09:00:00Z"}},
		{"CRLF and blank lines", "\r\nDTSTART:20240101T090000Z\r\n\r\nRRULE:FREQ=DAILY\r\n",
			"2024-01-01T09:00:00Z", []string{"2024-01-02T09:00:00Z"}},
		{"floating DTSTART is UTC", "DTSTART:20240101T090000\nRRULE:FREQ=DAILY;UNTIL=20240102T090000",
			"2024-01-01T09:00:00Z", []string{"2024-01-02T09:00:00Z", "-"}},
		{"strictly after an occurrence", "DTSTART:20240101T140000Z\nRRULE:FREQ=DAILY",
			"2024-01-02T14:00:00Z", []string{"2024-01-03T14:00:00Z"}},
		{"just before an occurrence", "DTSTART:20240101T140000Z\nRRULE:FREQ=DAILY",
			"2024-01-02T13:59:59.999Z", []string{"2024-01-02T14:00:00Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := schedParse(t, tt.text)
			from, err := time.Parse(time.RFC3339Nano, tt.from)
			require.NoError(t, err)
			require.Equal(t, tt.want, schedSeq(s, from, len(tt.want)))
		})
	}
}

func TestScheduleNextReturnsUTC(t *testing.T) {
	t.Parallel()
	s := schedParse(t, "DTSTART;TZID=Europe/Berlin:20240101T090000\nRRULE:FREQ=DAILY")
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	got := s.Next(time.Date(2024, 6, 1, 12, 0, 0, 0, berlin))
	require.Equal(t, time.UTC, got.Location())
	require.Equal(t, schedUTC(t, "2024-06-02T07:00:00Z"), got)
}

func TestScheduleString(t *testing.T) {
	t.Parallel()
	tests := []struct{ text, want string }{
		{"RRULE:FREQ=DAILY", "DTSTART:20000101T000000Z\nRRULE:FREQ=DAILY"},
		{`dtstart;tzid=Europe/Berlin:20240101T090000\nrrule:byminute=0;freq=daily;byhour=9,8`,
			"DTSTART;TZID=Europe/Berlin:20240101T090000\nRRULE:FREQ=DAILY;BYHOUR=8,9;BYMINUTE=0"},
		{"DTSTART:20240101T090000\nRRULE:FREQ=WEEKLY;BYDAY=-1FR,MO;UNTIL=20250101T000000;WKST=SU",
			"DTSTART:20240101T090000\nRRULE:FREQ=WEEKLY;UNTIL=20250101T000000;WKST=SU;BYDAY=-1FR,MO"},
		{"DTSTART;TZID=America/New_York:20240101T090000\nRRULE:FREQ=DAILY;COUNT=4\nEXDATE:20240102T140000Z\nRDATE:20240301T090000",
			"DTSTART;TZID=America/New_York:20240101T090000\nRRULE:FREQ=DAILY;COUNT=4\nEXDATE:20240102T140000Z\nRDATE;TZID=America/New_York:20240301T090000"},
	}
	for _, tt := range tests {
		if strings.Contains(tt.want, "BYDAY=-1FR") {
			// A numbered BYDAY needs MONTHLY or YEARLY; check the error instead.
			_, err := Parse(tt.text)
			require.ErrorContains(t, err, "numbered weekday")
			continue
		}
		s := schedParse(t, tt.text)
		require.Equal(t, tt.want, s.String())
		again := schedParse(t, s.String())
		require.Equal(t, s.String(), again.String())
		from := schedUTC(t, "2024-01-01T00:00:00Z")
		require.Equal(t, schedSeq(s, from, 5), schedSeq(again, from, 5))
	}
}

func TestScheduleParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, text string
		want       []string // substrings of the error
	}{
		{"empty", "", []string{"empty", "RRULE:FREQ=DAILY"}},
		{"only spaces and separators", ` \n \n`, []string{"empty"}},
		{"misspelt FREQ", "RRULE:FREQ=DAYLY", []string{`RRULE: unknown FREQ "DAYLY" (use SECONDLY, MINUTELY, HOURLY, DAILY, WEEKLY, MONTHLY or YEARLY)`}},
		{"missing FREQ", "RRULE:BYHOUR=3", []string{"FREQ is missing"}},
		{"no RRULE", "DTSTART:20240101T000000Z", []string{"no RRULE line"}},
		{"two RRULEs", "RRULE:FREQ=DAILY\nRRULE:FREQ=WEEKLY", []string{"more than one RRULE"}},
		{"unknown line", "FOO:BAR\nRRULE:FREQ=DAILY", []string{`unknown line "FOO:BAR"`, "DTSTART, RRULE, EXDATE and RDATE"}},
		{"line without colon", "RRULE FREQ=DAILY", []string{"has no ':'"}},
		{"unknown part", "RRULE:FREQ=DAILY;FOO=1", []string{`unknown part "FOO"`}},
		{"duplicate part", "RRULE:FREQ=DAILY;BYHOUR=1;BYHOUR=2", []string{"BYHOUR is given twice"}},
		{"interval zero", "RRULE:FREQ=DAILY;INTERVAL=0", []string{`INTERVAL="0" must be a whole number of at least 1`}},
		{"interval too large", "RRULE:FREQ=YEARLY;INTERVAL=1000", []string{"INTERVAL=1000 is too large for FREQ=YEARLY; use at most 100"}},
		{"count too large", "RRULE:FREQ=DAILY;COUNT=100000000", []string{"COUNT=100000000 is too large"}},
		{"count and until", "RRULE:FREQ=DAILY;COUNT=2;UNTIL=20250101T000000Z", []string{"COUNT and UNTIL cannot both be given"}},
		{"hour 24", "RRULE:FREQ=DAILY;BYHOUR=24", []string{`BYHOUR value "24" is out of range; use 0 to 23`}},
		{"monthday 0", "RRULE:FREQ=MONTHLY;BYMONTHDAY=0", []string{"BYMONTHDAY value \"0\" is out of range"}},
		{"bad weekday", "RRULE:FREQ=WEEKLY;BYDAY=MON", []string{`BYDAY value "MON" is not a weekday`}},
		{"10th monday of a month (panics rrule-go)", "RRULE:FREQ=MONTHLY;BYDAY=10MO", []string{"BYDAY=10MO", "at most 5"}},
		{"60th monday of a year", "RRULE:FREQ=YEARLY;BYDAY=60MO", []string{"at most 53"}},
		{"numbered weekday with BYMONTH", "RRULE:FREQ=YEARLY;BYMONTH=12;BYDAY=53MO", []string{"at most 5"}},
		{"numbered weekday with WEEKLY", "RRULE:FREQ=WEEKLY;BYDAY=2MO", []string{"only works with FREQ=MONTHLY or FREQ=YEARLY"}},
		{"BYEASTER out of range (panics rrule-go)", "RRULE:FREQ=YEARLY;BYEASTER=400", []string{`BYEASTER value "400" is out of range`}},
		{"BYEASTER with DAILY", "RRULE:FREQ=DAILY;BYEASTER=1", []string{"BYEASTER only works with FREQ=YEARLY"}},
		{"BYWEEKNO with MONTHLY", "RRULE:FREQ=MONTHLY;BYWEEKNO=3", []string{"BYWEEKNO only works with FREQ=YEARLY"}},
		{"BYYEARDAY with DAILY", "RRULE:FREQ=DAILY;BYYEARDAY=3", []string{"BYYEARDAY cannot be used with FREQ=DAILY"}},
		{"BYMONTHDAY with WEEKLY", "RRULE:FREQ=WEEKLY;BYMONTHDAY=3", []string{"BYMONTHDAY cannot be used with FREQ=WEEKLY"}},
		{"BYSETPOS alone", "RRULE:FREQ=MONTHLY;BYSETPOS=1", []string{"BYSETPOS needs another BYxxx part"}},
		{"year 0 DTSTART (panics rrule-go)", "DTSTART:00000101T000000Z\nRRULE:FREQ=WEEKLY;BYWEEKNO=1", []string{"DTSTART: year 0 is out of range; use a year between 1900 and 9999"}},
		{"DTSTART not a date", "DTSTART:2024-01-01\nRRULE:FREQ=DAILY", []string{`DTSTART: "2024-01-01" is not a date-time; write YYYYMMDDTHHMMSS`}},
		{"DTSTART month 13", "DTSTART:20241301T000000Z\nRRULE:FREQ=DAILY", []string{"DTSTART", "not a valid date-time", "month out of range"}},
		{"DTSTART twice", "DTSTART:20240101T000000Z\nDTSTART:20240102T000000Z\nRRULE:FREQ=DAILY", []string{"DTSTART is given twice"}},
		{"DTSTART TZID and Z", "DTSTART;TZID=Europe/Berlin:20240101T000000Z\nRRULE:FREQ=DAILY", []string{"both TZID and a trailing Z"}},
		{"unknown zone", "DTSTART;TZID=Mars/Olympus:20240101T000000\nRRULE:FREQ=DAILY", []string{`unknown time zone TZID="Mars/Olympus"`, "Europe/Berlin"}},
		{"Local zone", "DTSTART;TZID=Local:20240101T000000\nRRULE:FREQ=DAILY", []string{"unknown time zone"}},
		{"unknown DTSTART value type", "DTSTART;VALUE=PERIOD:20240101T000000Z/PT1H\nRRULE:FREQ=DAILY", []string{"VALUE=PERIOD is not supported"}},
		{"VALUE=DATE with a time", "DTSTART;VALUE=DATE:20240101T000000\nRRULE:FREQ=DAILY", []string{"VALUE=DATE needs a date such as 20240101"}},
		{"EXDATE removes every occurrence", "DTSTART:20240101T090000Z\nRRULE:FREQ=DAILY;COUNT=2\nEXDATE:20240101T090000Z,20240102T090000Z", []string{"EXDATE removes every occurrence"}},
		{"empty rule and RDATE removed by EXDATE", "DTSTART:20240101T000000Z\nRRULE:FREQ=HOURLY;BYMINUTE=0;BYSETPOS=2\nRDATE:20240105T120000Z\nEXDATE:20240105T120000Z", []string{"BYSETPOS picks nothing"}},
		{"SECONDLY BYSETPOS beyond the one second", "RRULE:FREQ=SECONDLY;BYSECOND=1,2;BYSETPOS=2", []string{"BYSETPOS picks nothing"}},
		{"occurrences too far apart", "DTSTART:20240101T120000Z\nRRULE:FREQ=SECONDLY;INTERVAL=86399;BYHOUR=0;BYMINUTE=0;BYSECOND=0", []string{"no occurrence within 100 years"}},
		{"invalid UTF-8 (panics rrule-go)", "RRULE:FREQ=DAILY;BYDAY=\xff\xfe", []string{"not valid UTF-8"}},
		{"control character", "RRULE:FREQ=DAILY\x00", []string{"control character"}},
		{"EXRULE", "RRULE:FREQ=DAILY\nEXRULE:FREQ=WEEKLY", []string{"EXRULE is not supported"}},
		{"bad EXDATE", "RRULE:FREQ=DAILY\nEXDATE:tomorrow", []string{`EXDATE: "tomorrow" is not a date-time`}},
		{"empty EXDATE list", "RRULE:FREQ=DAILY\nEXDATE:,", []string{"EXDATE has no dates"}},
		{"bad UNTIL", "RRULE:FREQ=DAILY;UNTIL=soon", []string{`UNTIL: "SOON" is not a date-time`}},
		{"UNTIL before DTSTART", "DTSTART:20240101T000000Z\nRRULE:FREQ=DAILY;UNTIL=20231231T000000Z", []string{"no occurrence between DTSTART", "move UNTIL later"}},
		{"unreachable hour (hangs rrule-go)", "DTSTART:20240101T000000Z\nRRULE:FREQ=HOURLY;INTERVAL=2;BYHOUR=1", []string{"no time of day matches", "INTERVAL=2"}},
		{"unreachable hour, interval not dividing a day (hangs rrule-go)", "DTSTART:20240101T000000Z\nRRULE:FREQ=HOURLY;INTERVAL=10;BYHOUR=1,3", []string{"never reaches the BYHOUR/BYMINUTE/BYSECOND values"}},
		{"unreachable minute (hangs rrule-go)", "DTSTART:20240101T000000Z\nRRULE:FREQ=MINUTELY;INTERVAL=2;BYMINUTE=1,3,5", []string{"no time of day matches"}},
		{"unreachable second (hangs rrule-go)", "DTSTART:20240101T000000Z\nRRULE:FREQ=SECONDLY;INTERVAL=14;BYSECOND=1", []string{"never reaches"}},
		{"unreachable combination of hour and minute", "DTSTART:20240101T000000Z\nRRULE:FREQ=MINUTELY;INTERVAL=120;BYHOUR=2;BYMINUTE=30", []string{"no time of day matches"}},
		{"impossible date", "RRULE:FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30", []string{"never produces an occurrence", "BYMONTH=2;BYMONTHDAY=30"}},
		{"impossible date, daily", "RRULE:FREQ=DAILY;BYMONTH=4;BYMONTHDAY=31", []string{"never produces an occurrence"}},
		{"weekday the grid never meets", "DTSTART:20240101T000000Z\nRRULE:FREQ=DAILY;INTERVAL=7;BYDAY=TU", []string{"never produces an occurrence"}},
		{"BYSETPOS beyond each minute's set (rrule-go walks to year 9999)", "RRULE:FREQ=MINUTELY;BYSECOND=36;BYSETPOS=3", []string{"BYSETPOS picks nothing", "holds only 1 time(s)"}},
		{"BYSETPOS splitting minute x second pairs", "RRULE:FREQ=HOURLY;BYMINUTE=0,30;BYSECOND=0,30;BYSETPOS=1,4", []string{"whole BYMINUTE x BYSECOND combinations"}},
		{"too many times per day", "RRULE:FREQ=DAILY;BYHOUR=0,1,2;BYMINUTE=" + schedList(60) + ";BYSECOND=" + schedList(60), []string{"10800 times per day", "FREQ=MINUTELY"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := Parse(tt.text)
			require.Error(t, err, "accepted %q as %v", tt.text, s)
			require.Nil(t, s)
			msg := err.Error()
			for _, w := range tt.want {
				require.Contains(t, msg, w)
			}
			require.NotContains(t, msg, "policy:")
			require.NotContains(t, msg, "rrule")
			// The message is one line of plain text for "Invalid refresh schedule: <why>".
			require.NotContains(t, msg, "\n")
			require.LessOrEqual(t, len(msg), 300)
		})
	}
}

func schedList(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = strconv.Itoa(i)
	}
	return strings.Join(parts, ",")
}

func TestScheduleConcurrentNext(t *testing.T) {
	t.Parallel()
	// COUNT rules and sets mutate rrule-go objects while iterating; a
	// shared *Schedule must still give the same answers on every goroutine
	// (run with -race).
	s := schedParse(t, "DTSTART;TZID=Europe/Berlin:20240101T090000\nRRULE:FREQ=DAILY;COUNT=400;BYHOUR=9,17\nEXDATE;TZID=Europe/Berlin:20240105T170000")
	from := schedUTC(t, "2024-01-01T00:00:00Z")
	want := schedSeq(s, from, 50)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				if got := schedSeq(s, from, 50); strings.Join(got, " ") != strings.Join(want, " ") {
					t.Errorf("concurrent Next differs: %v", got)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestScheduleCountEndAfterLongTime(t *testing.T) {
	t.Parallel()
	s := schedParse(t, "DTSTART:20190101T000000Z\nRRULE:FREQ=MINUTELY;COUNT=100000")
	last := schedUTC(t, "2019-01-01T00:00:00Z").Add(99999 * time.Minute)
	require.Equal(t, last, s.Next(last.Add(-time.Second)))
	require.True(t, s.Next(last).IsZero())
	require.True(t, s.Next(schedUTC(t, "2024-01-01T00:00:00Z")).IsZero())
}

// TestRulePartsTable checks that the one table of parts drives the parser,
// and the normalized text alike: every part the parser accepts is named in
// the "unknown part" message and survives a round trip through String.
func TestRulePartsTable(t *testing.T) {
	t.Parallel()
	_, err := Parse("RRULE:FREQ=DAILY;FOO=1")
	require.Error(t, err)
	examples := map[string]string{
		"FREQ": "YEARLY", "INTERVAL": "2", "COUNT": "5", "UNTIL": "20300101T000000Z", "WKST": "SU",
		"BYMONTH": "3", "BYWEEKNO": "10", "BYYEARDAY": "70", "BYMONTHDAY": "10", "BYDAY": "MO",
		"BYEASTER": "0", "BYHOUR": "9", "BYMINUTE": "30", "BYSECOND": "15", "BYSETPOS": "1",
	}
	for _, p := range ruleParts {
		require.Contains(t, err.Error(), p.name)
		v, ok := examples[p.name]
		require.True(t, ok, "no example for %s", p.name)
		rule := "FREQ=YEARLY;" + p.name + "=" + v
		if p.name == "FREQ" {
			rule = "FREQ=" + v
		}
		if p.name == "BYSETPOS" {
			rule += ";BYMONTH=3,4"
		}
		s, err := Parse("DTSTART:20240101T000000Z\nRRULE:" + rule)
		require.NoError(t, err, rule)
		require.Contains(t, s.String(), p.name+"="+v, rule)
	}
	require.Contains(t, err.Error(), "BYEASTER")
}

// TestLocation: the rule's zone, UTC for a UTC or floating DTSTART.
func TestLocation(t *testing.T) {
	for text, want := range map[string]string{
		"DTSTART;TZID=Europe/Berlin:20260101T023000\nRRULE:FREQ=DAILY": "Europe/Berlin",
		"DTSTART:20260101T023000Z\nRRULE:FREQ=DAILY":                   "UTC",
		"DTSTART:20260101T023000\nRRULE:FREQ=DAILY":                    "UTC",
	} {
		s, err := Parse(text)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Location().String(); got != want {
			t.Errorf("%q: %s, want %s", text, got, want)
		}
	}
	if got := (*Schedule)(nil).Location(); got != time.UTC {
		t.Errorf("nil schedule: %v", got)
	}
}
