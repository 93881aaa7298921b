package models

import (
	"testing"
	"time"

	"github.com/refresher/refresher/policy"
)

// TestSuccessColumnsAreWhatASuccessWrites checks SuccessColumns against
// policy.WithSuccess: a column in the set takes the success's value, any
// other keeps the row's.
func TestSuccessColumnsAreWhatASuccessWrites(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	state := func(i int) policy.State {
		d := time.Duration(i) * time.Hour
		return policy.State{RefreshAt: at.Add(d), AttemptUID: "u" + string(rune('0'+i)), AttemptAt: at.Add(2 * d),
			AttemptNo: i, TimeoutAt: at.Add(3 * d), DisabledAt: at.Add(4 * d), DisabledReason: "r" + string(rune('0'+i)),
			FailingSince: at.Add(5 * d), LastSuccessAt: at.Add(6 * d), LastError: "e" + string(rune('0'+i)), Status: "s" + string(rune('0'+i))}
	}
	row, success := state(1), state(2)
	got := policy.WithSuccess(row, success)
	for c := range StateColumns {
		col := &StateColumns[c]
		from, other := &row, &success
		if SuccessColumns.Has(c) {
			from, other = &success, &row
		}
		if !col.Same(&got, from) || col.Same(&got, other) {
			t.Errorf("%s: SuccessColumns has it: %v, but WithSuccess takes it from the other state", col.Name, SuccessColumns.Has(c))
		}
	}
}

func TestCanonicalInt(t *testing.T) {
	for key, want := range map[string]bool{
		"42": true, "-7": true, "0": true, "18446744073709551615": true, "-9223372036854775808": true,
		"042": false, "+42": false, " 42": false, "42 ": false, "42.0": false, "-0": false, "": false, "abc": false,
		"18446744073709551616": false, "-": false, "00": false, "-042": false, "1-2": false, "4a": false,
		"9223372036854775808": true, "-9223372036854775809": false,
	} {
		if got := CanonicalInt(key); got != want {
			t.Errorf("CanonicalInt(%q) = %v, want %v", key, got, want)
		}
	}
}
