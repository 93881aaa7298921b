package sqlitestore

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestParseStoredAsTimeParse: what parseStored reads, it reads as
// time.ParseInLocation(storedLayout, s, time.UTC) does; it refuses
// what that refuses, and a few texts time.Parse is lenient with (a
// one-digit hour after two spaces, a sign in the fraction), which
// parseTimeText then gives time.Parse: parseTimeText reads every text, with "+00:00" and
// without, as it did with time.ParseInLocation (parseTimeTextBefore). On
// valid times, the edges of every field, and random corruptions of them.
func TestParseStoredAsTimeParse(t *testing.T) {
	t.Parallel()
	texts := []string{
		"2026-03-04 05:06:08.123456", "0000-01-01 00:00:00.000000", "9999-12-31 23:59:59.999999",
		"2024-02-29 12:00:00.000001", "2025-02-29 12:00:00.000000", "2026-04-31 00:00:00.000000",
		"2026-13-01 00:00:00.000000", "2026-00-10 00:00:00.000000", "2026-01-00 00:00:00.000000",
		"2026-01-32 00:00:00.000000", "2026-01-01 24:00:00.000000", "2026-01-01 23:60:00.000000",
		"2026-01-01 23:59:60.000000", "2026-01-01T23:59:59.000000", "2026-01-01 23:59:59,000000",
		"2026-1-01 23:59:59.0000000", "+026-01-01 23:59:59.000000", "2026-01-01 23:59:59.00000a",
		"2026-01-01 23:59:59.000000 ", "2026-01-01 23:59:59.00000", "1900-02-29 00:00:00.000000",
		"2000-02-29 00:00:00.000000", "2026-06-31 00:00:00.000000", "2026-12-31 00:00:00.000000",
	}
	r := rand.New(rand.NewPCG(1, 2))
	const alphabet = "0123456789-: .T+a"
	for range 20000 {
		at := time.Unix(r.Int64N(1<<36)-(1<<35), r.Int64N(1e9)).UTC()
		b := []byte(at.Format(storedLayout))
		if at.Year() < 0 || at.Year() > 9999 {
			continue
		}
		texts = append(texts, string(b))
		for range 1 + r.IntN(2) {
			b[r.IntN(len(b))] = alphabet[r.IntN(len(alphabet))]
		}
		texts = append(texts, string(b))
	}
	for _, s := range texts {
		want, err := time.ParseInLocation(storedLayout, s, time.UTC)
		if got, ok := parseStored(s); ok && (err != nil || !got.Equal(want) || got.Location() != want.Location()) {
			t.Fatalf("%q: parseStored %v, time.ParseInLocation %v %v", s, got, want, err)
		}
		for _, text := range []string{s, s + "+00:00"} {
			got, ok := parseTimeText(text)
			want, wantOK := parseTimeTextBefore(text)
			if ok != wantOK || !got.Equal(want) || got.Location() != want.Location() {
				t.Fatalf("%q: parseTimeText %v %v, before %v %v", text, got, ok, want, wantOK)
			}
		}
	}
}

// parseTimeTextBefore is parseTimeText as it was before parseStored.
func parseTimeTextBefore(s string) (time.Time, bool) {
	if len(s) == len(TimeFormat) && strings.HasSuffix(s, "+00:00") {
		if t, err := time.ParseInLocation(storedLayout, s[:len(storedLayout)], time.UTC); err == nil {
			return t, true
		}
	}
	s = strings.TrimSpace(s)
	if i := strings.Index(s, " m="); i > 0 {
		s = s[:i]
	}
	for _, f := range readFormats {
		if t, err := time.ParseInLocation(f, s, time.UTC); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

func BenchmarkParseTime(b *testing.B) {
	for b.Loop() {
		if _, ok := parseTime("2026-03-04 05:06:08.123456+00:00"); !ok {
			b.Fatal("refused")
		}
	}
}
