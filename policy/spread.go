package policy

import "time"

// Spread is a kind's load spreading (docs/schedules.md, "Load
// spreading"): rows that share a rule do not all fall due in the same second.
// Each row gets a stable offset in [0, Window) and its occurrences are the
// rule's occurrences plus that offset. The zero value spreads nothing.
type Spread struct {
	// Window is the span the offsets cover, e.g. 10m. Offsets have a
	// resolution of 1 s, so a Window under 1s spreads nothing. Default 0:
	// no spreading.
	Window time.Duration
	// SkipOwnRules leaves rows with a refresh_rrule of their own unspread
	// (the kind's `spread_own_rules: false`). Default false: a row's own
	// rule is spread the same way as the kind's.
	SkipOwnRules bool
}

// Offset is the offset of the row with the given key in a table of kind
// (ownRule: the row has a refresh_rrule of its own): SpreadOffset(kind,
// key, Window), or 0 when the row is not spread.
func (s Spread) Offset(kind, key string, ownRule bool) time.Duration {
	if ownRule && s.SkipOwnRules {
		return 0
	}
	return SpreadOffset(kind, key, s.Window)
}

// SpreadOffset is the stable offset of one row within window: the 64-bit
// FNV-1a hash of kind, a NUL byte and key, modulo the window's whole
// seconds, in seconds. It is in [0, window) and depends on nothing else, so
// every instance and every restart computes the same offset; renaming the
// kind, or changing the window, moves the row's offset. A window under 1s
// gives 0.
func SpreadOffset(kind, key string, window time.Duration) time.Duration {
	secs := uint64(window / time.Second)
	if secs <= 1 {
		return 0
	}
	// FNV-1a, inline so that the dispatcher's hot path does not allocate
	// (hash/fnv gives the same sums; see the tests).
	h := uint64(fnvOffset64)
	for i := 0; i < len(kind); i++ {
		h = (h ^ uint64(kind[i])) * fnvPrime64
	}
	h *= fnvPrime64 // the NUL byte: h ^ 0 == h
	for i := 0; i < len(key); i++ {
		h = (h ^ uint64(key[i])) * fnvPrime64
	}
	return time.Duration(h%secs) * time.Second
}

// The FNV-1a 64-bit parameters.
const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

// Spreaded returns base with every occurrence moved later by offset:
// Next(after) = base.Next(after - offset) + offset, and the zero time when
// base has no occurrence left. The shift is a fixed duration on instants,
// so it keeps the base rule's time-zone reading: a daily 02:30
// Europe/Berlin rule with a 7m offset runs at 03:37 CEST on the day clocks
// spring forward (the rule's 03:30, plus 7m). An offset of 0 returns base
// itself.
func Spreaded(base Nexter, offset time.Duration) Nexter {
	if offset == 0 {
		return base
	}
	return spreadNexter{base: base, offset: offset}
}

type spreadNexter struct {
	base   Nexter
	offset time.Duration
}

func (s spreadNexter) Next(after time.Time) time.Time {
	t, _ := s.NextChecked(after)
	return t
}

// NextChecked passes on the base's error (see CheckedNexter).
func (s spreadNexter) NextChecked(after time.Time) (time.Time, error) {
	t, err := nextChecked(s.base, after.Add(-s.offset))
	if t.IsZero() {
		return t, err
	}
	return t.Add(s.offset), err
}
