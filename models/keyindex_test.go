package models

import (
	"testing"

	"github.com/refresher/refresher/policy"
)

// TestSuccessRowsReusesReleasedRows: the rows of SuccessRows, released,
// are those of the next call (a poller's batch allocates no rows), and
// they hold what they are given.
func TestSuccessRowsReusesReleasedRows(t *testing.T) {
	succ := make([]Success, 200)
	for i := range succ {
		succ[i] = Success{Key: string(rune('a'+i%26)) + string(rune('A'+i/26)), AttemptUID: "u", State: policy.State{AttemptNo: i}}
	}
	rows, guard, err := SuccessRows(Table{Name: "t"}, succ)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(succ) || len(guard) != len(succ) || rows[7].Key != succ[7].Key || rows[7].State.AttemptNo != 7 || guard[7] != "u" {
		t.Fatalf("rows %d, guard %d, row 7 %+v", len(rows), len(guard), rows[7])
	}
	first := &rows[0]
	ReleaseRows(rows)
	again, _, err := SuccessRows(Table{Name: "t"}, succ[:100])
	if err != nil {
		t.Fatal(err)
	}
	if &again[0] != first {
		t.Error("SuccessRows allocated rows instead of reusing the released ones")
	}
	if again[99].Key != succ[99].Key || again[99].State.AttemptNo != 99 {
		t.Errorf("row 99: %+v", again[99])
	}
	ReleaseRows(again)
}

// TestLastWinsNoAllocation: LastWins's key map is borrowed, so a save of
// distinct keys allocates nothing (it did a map of the batch's size).
func TestLastWinsNoAllocation(t *testing.T) {
	rows := make([]Row, 1000)
	for i := range rows {
		rows[i].Key = string(rune(0x100 + i))
	}
	LastWins(rows, nil) // the pool's first map
	if raceEnabled {
		t.Log("race detector on: a sync.Pool drops what it is given at random; allocations not counted")
	} else if allocs := testing.AllocsPerRun(20, func() { LastWins(rows, nil) }); allocs != 0 {
		t.Errorf("LastWins of 1000 distinct keys: %v allocations, want 0", allocs)
	}
	got, _ := LastWins(append(rows[:3:3], Row{Key: rows[0].Key, Rule: "last"}), nil)
	if len(got) != 3 || got[2].Rule != "last" || got[0].Key != rows[1].Key {
		t.Errorf("LastWins with a repeated key: %+v", got)
	}
}

// TestSuccessRowsRefusesRepeatedKeys: SaveSuccesses's keys must be
// distinct (its statement could not say which of two results of one key it
// wrote) and name an attempt; SuccessRows refuses a batch that breaks
// either, with one hash per key.
func TestSuccessRowsRefusesRepeatedKeys(t *testing.T) {
	for _, succ := range [][]Success{
		{{Key: "1", AttemptUID: "a"}, {Key: "2", AttemptUID: "b"}, {Key: "1", AttemptUID: "c"}},
		{{Key: "1", AttemptUID: "a"}, {Key: "1", AttemptUID: "a"}},
		{{Key: "1", AttemptUID: "a"}, {Key: "2"}},
	} {
		if rows, _, err := SuccessRows(Table{Name: "t"}, succ); err == nil {
			t.Errorf("%+v: no error, rows %+v", succ, rows)
		}
	}
	rows, _, err := SuccessRows(Table{Name: "t"}, []Success{{Key: "1", AttemptUID: "a"}, {Key: "2", AttemptUID: "a"}})
	if err != nil || len(rows) != 2 {
		t.Fatalf("distinct keys: %v, %d rows", err, len(rows))
	}
	ReleaseRows(rows)
}
