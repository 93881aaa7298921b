package models

import (
	"strconv"
	"testing"
)

// TestProbeSuccessRowsKeys: SuccessRows refuses a repeated key wherever it
// comes in a batch (first and last of a thousand included), merges no
// distinct keys that look alike (separators, NUL, case, padding, numbers
// as text), and a refused batch leaves nothing behind in the pooled index
// for the next batch.
func TestProbeSuccessRowsKeys(t *testing.T) {
	alike := []string{"1", "01", "1 ", " 1", "a,b", "a", "b", "a\x00b", "a\x00", "\x00b", "A,B", "", "a|b", "ab", "é", "e\u0301"}
	var succ []Success
	for i, k := range alike {
		succ = append(succ, Success{Key: k, AttemptUID: "u" + strconv.Itoa(i)})
	}
	rows, guard, err := SuccessRows(Table{Name: "t"}, succ)
	if err != nil || len(rows) != len(alike) {
		t.Fatalf("distinct keys that look alike: %v, %d rows", err, len(rows))
	}
	for i := range rows {
		if rows[i].Key != alike[i] || guard[i] != succ[i].AttemptUID {
			t.Errorf("row %d: %q %q, want %q %q", i, rows[i].Key, guard[i], alike[i], succ[i].AttemptUID)
		}
	}
	ReleaseRows(rows)
	big := make([]Success, 1000)
	for i := range big {
		big[i] = Success{Key: strconv.Itoa(i), AttemptUID: "u"}
	}
	for _, dup := range []int{1, 500, 999} {
		b := append([]Success(nil), big...)
		b[dup].Key = b[0].Key
		if _, _, err := SuccessRows(Table{Name: "t"}, b); err == nil {
			t.Errorf("key of row 0 repeated at %d: no error", dup)
		}
		b[dup].Key = b[dup-1].Key
		if _, _, err := SuccessRows(Table{Name: "t"}, b); err == nil {
			t.Errorf("key of row %d repeated at %d: no error", dup-1, dup)
		}
		// The refused batch's keys are not remembered.
		rows, _, err := SuccessRows(Table{Name: "t"}, big)
		if err != nil {
			t.Fatalf("after a refused batch: %v", err)
		}
		ReleaseRows(rows)
	}
}
