package sqlitestore

import (
	"fmt"
	"strings"
	"time"
)

// TimeFormat is how the Store writes times: UTC, exactly six decimals, and
// the offset +00:00. Being fixed-width, text order is time order. The
// offset makes the text unambiguous to every reader (SQLite drivers parse
// it as UTC rather than local time; SQLite's date functions accept it),
// and it is what the pure-Go and mattn drivers write for a UTC time.Time,
// so that what an application writes through GORM compares exactly.
const TimeFormat = "2006-01-02 15:04:05.000000+00:00"

// dbTime is a time as a statement argument: TimeFormat in UTC, truncated to
// microseconds; nil (NULL) for the zero time.
func dbTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Truncate(time.Microsecond).Format(TimeFormat)
}

// fromBound is t as the lower bound of a comparison with a stored time
// (refresh_at >= ?): TimeFormat without its "+00:00". Stored times are
// compared as text, and an application may write the same instant with the
// offset (TimeFormat, as README.md says) or without it (as
// "2006-01-02 15:04:05.000000"); the text without it sorts before or at
// both, so the bound stays inclusive either way. An upper bound (<=) takes
// dbTime, which sorts at or after both. nil for the zero time.
func fromBound(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Truncate(time.Microsecond).Format(strings.TrimSuffix(TimeFormat, "+00:00"))
}

// storedLayout is TimeFormat without its offset.
const storedLayout = "2006-01-02 15:04:05.000000"

// readFormats are the text forms parseTime accepts: TimeFormat first, then
// what SQLite drivers and GORM write ("...-07:00" is the modernc and mattn
// drivers' _time_format=sqlite, the last one time.Time.String, their
// default), then SQLite's own date functions' forms.
var readFormats = []string{
	"2006-01-02 15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02T15:04:05.999999999Z07:00",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999 -0700 MST",
	"2006-01-02 15:04",
	"2006-01-02T15:04",
	"2006-01-02",
}

// parseTime reads a time column value as the driver returns it: a
// time.Time (when the driver parsed it), or text in one of readFormats
// (no zone means UTC). nil is the zero time. ok is false for a value it
// cannot read, which callers treat like MySQL's zero date: the zero time,
// and the row is written in full on the next Save.
func parseTime(v any) (t time.Time, ok bool) {
	switch x := v.(type) {
	case nil:
		return time.Time{}, true
	case time.Time:
		return x.UTC(), true
	case []byte:
		return parseTimeText(string(x))
	case string:
		return parseTimeText(x)
	}
	return time.Time{}, false
}

func parseTimeText(s string) (time.Time, bool) {
	// TimeFormat, what the Store writes, without trying the layouts
	// before it.
	if len(s) == len(TimeFormat) && strings.HasSuffix(s, "+00:00") {
		if t, ok := parseStored(s[:len(storedLayout)]); ok {
			return t, true
		}
		// What time.Parse is lenient with (a sign in the fraction, a
		// one-digit hour after two spaces) it still reads.
		if t, err := time.ParseInLocation(storedLayout, s[:len(storedLayout)], time.UTC); err == nil {
			return t, true
		}
	}
	s = strings.TrimSpace(s)
	if i := strings.Index(s, " m="); i > 0 { // time.Time.String's monotonic clock
		s = s[:i]
	}
	for _, f := range readFormats {
		if t, err := time.ParseInLocation(f, s, time.UTC); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// parseStored reads s in storedLayout as UTC, by hand: the claim reads a
// time or more of every row it claims, and the layout machinery of
// time.Parse costs several times as much. What it reads, it reads as
// time.ParseInLocation does; it refuses a field out of its range and a
// day its month does not have, as that does, and a few texts that
// time.Parse is lenient with, which parseTimeText then gives it
// (TestParseStoredAsTimeParse).
func parseStored(s string) (time.Time, bool) {
	if len(s) != len(storedLayout) || s[4] != '-' || s[7] != '-' || s[10] != ' ' || s[13] != ':' || s[16] != ':' || (s[19] != '.' && s[19] != ',') {
		return time.Time{}, false
	}
	num := func(from, to int) (int, bool) {
		n := 0
		for i := from; i < to; i++ {
			c := s[i]
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, true
	}
	year, ok1 := num(0, 4)
	month, ok2 := num(5, 7)
	day, ok3 := num(8, 10)
	hour, ok4 := num(11, 13)
	minute, ok5 := num(14, 16)
	sec, ok6 := num(17, 19)
	micro, ok7 := num(20, 26)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7) ||
		month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, micro*1000, time.UTC)
	if t.Day() != day { // past the month's last day: time.Date moved it on
		return time.Time{}, false
	}
	return t, true
}

// mustParseTime is parseTime for values the Store itself wrote (MIN of a
// column), where unreadable text is an error.
func mustParseTime(v any, what string) (time.Time, error) {
	t, ok := parseTime(v)
	if !ok {
		return time.Time{}, fmt.Errorf("%s: cannot read %q as a time: write times as UTC text like %q", what, fmt.Sprint(v), TimeFormat)
	}
	return t, nil
}
