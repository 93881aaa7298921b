package sqlitestore

import (
	"testing"
	"time"
)

// FuzzParseStoredAsTimeParse (review14): on any text, parseStored reads
// only what time.ParseInLocation(storedLayout, s, time.UTC) reads, as
// that reads it, and parseTimeText answers as before (parseTimeTextBefore),
// with and without "+00:00". The seeds are the edges the review checked:
// leap second, year 0000/9999, 31st of short months, Feb 29, signs and
// commas in the fraction, non-ASCII digits, trailing text, empty text.
func FuzzParseStoredAsTimeParse(f *testing.F) {
	for _, s := range []string{
		"", "2026-03-04 05:06:08.123456", "0000-01-01 00:00:00.000000", "9999-12-31 23:59:59.999999",
		"2026-01-01 23:59:60.000000", "2016-12-31 23:59:60.000000", "2026-02-29 00:00:00.000000", "2024-02-29 00:00:00.000000",
		"0000-02-29 00:00:00.000000", "2026-04-31 00:00:00.000000", "2026-01-01 23:59:59,000001", "2026-01-01 23:59:59.+00001",
		"2026-01-01 23:59:59.-00001", "2026-01-01  5:59:59.000001", "2026-01-01 23:59:59.00000\u0661", "\u0662026-01-01 23:59:59.000000",
		"2026-01-01 23:59:59.000000Z", "2026-01-01 23:59:59.000000 ", "2026-01-01 23:59:59", "2026-01-01 23:59:59.1",
		"2026-01-01 23:59:59.123456789", "2026-01-01T23:59:59.000000", "-026-01-01 23:59:59.000000", "2026-01-01 23:59:59.000000-07:00",
		"2026-01-01 24:00:00.000000", "2026-00-01 00:00:00.000000", "2026-01-00 00:00:00.000000", "9999-12-31 23:59:59.999999+14:00",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := time.ParseInLocation(storedLayout, s, time.UTC)
		if got, ok := parseStored(s); ok && (err != nil || !got.Equal(want) || got.Location() != want.Location() || got != want) {
			t.Fatalf("%q: parseStored %v, time.ParseInLocation %v %v", s, got, want, err)
		}
		for _, text := range []string{s, s + "+00:00"} {
			got, ok := parseTimeText(text)
			want, wantOK := parseTimeTextBefore(text)
			if ok != wantOK || got != want {
				t.Fatalf("%q: parseTimeText %v %v, before %v %v", text, got, ok, want, wantOK)
			}
		}
	})
}

// TestParseStoredEveryField (review14): every two-digit value of each
// field after the year, every year from 0000 to 9999 on the last day of
// February, against time.ParseInLocation.
func TestParseStoredEveryField(t *testing.T) {
	t.Parallel()
	check := func(s string) {
		t.Helper()
		want, err := time.ParseInLocation(storedLayout, s, time.UTC)
		got, ok := parseStored(s)
		if ok && (err != nil || got != want) {
			t.Fatalf("%q: parseStored %v, time.ParseInLocation %v %v", s, got, want, err)
		}
		if !ok && err == nil {
			t.Logf("%q: refused by parseStored, read by time.Parse (parseTimeText falls back)", s)
		}
	}
	const tmpl = "2024-02-29 23:59:59.999999"
	for _, at := range []int{5, 8, 11, 14, 17} {
		for v := range 100 {
			b := []byte(tmpl)
			b[at], b[at+1] = byte('0'+v/10), byte('0'+v%10)
			check(string(b))
		}
	}
	for y := range 10000 {
		for _, d := range []string{"28", "29", "30"} {
			check(string([]byte{byte('0' + y/1000), byte('0' + y/100%10), byte('0' + y/10%10), byte('0' + y%10)}) + "-02-" + d + " 00:00:00.000000")
		}
	}
}
