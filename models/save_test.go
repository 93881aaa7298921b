package models_test

import (
	. "github.com/refresher/refresher/models"
	"strconv"
	"testing"
	"time"
)

func TestNumStateColumns(t *testing.T) {
	t.Parallel()
	eq(t, len(StateColumns), NumStateColumns, "StateColumns")
	eq(t, StateColumn(ColAttemptUID).Name, ColAttemptUID)
	if StateColumn(ColRRule) != nil {
		t.Error("refresh_rrule is not a state column")
	}
}

func TestLastWins(t *testing.T) {
	t.Parallel()
	rows := []Row{{Key: "a", State: fullState(1)}, {Key: "b"}, {Key: "a", State: fullState(2)}}
	got, guard := LastWins(rows, []string{"g1", "g2", "g3"})
	eq(t, len(got), 2, "rows")
	eq(t, got[0].Key+got[1].Key, "ba", "order of last occurrences")
	eq(t, got[1].State.AttemptNo, fullState(2).AttemptNo, "the last a wins")
	eq(t, guard, []string{"g2", "g3"}, "guard stays aligned")
	same, _ := LastWins(rows[:2], nil)
	if &same[0] != &rows[0] {
		t.Error("no repeated key, yet LastWins copied the rows")
	}
}

func TestChangedAndUniform(t *testing.T) {
	t.Parallel()
	base := fullState(1)
	r := Row{Key: "a", State: base, Loaded: Loaded{OK: true, State: base}}
	eq(t, Changed(&r), ColumnSet(0), "unchanged")
	r.State.Status = "new"
	r.State.RefreshAt = r.State.RefreshAt.Add(time.Nanosecond) // below storage precision
	eq(t, Changed(&r), ColumnSet(1<<10), "only refresh_status (column 10)")
	eq(t, Changed(&Row{Key: "b"}), AllColumns, "a row not read")

	s := Row{State: base}
	s.State.AttemptNo++
	u := Uniform(AllColumns, []*Row{&r, &s})
	eq(t, u, AllColumns&^(1<<10|1<<3), "all but status and attempt_no hold one value")

	// Rows equal to the first skip the columns' comparisons; a later row
	// still drops the columns it differs in, and a time equal once stored
	// (here in another zone) is the same.
	same, other := r, r
	other.State.LastError = "later"
	other.State.AttemptAt = r.State.AttemptAt.In(time.FixedZone("X", 3600))
	eq(t, Uniform(AllColumns, []*Row{&r, &same, &same, &other, &same}), AllColumns&^(1<<9), "all but last_error (column 9)")
	eq(t, Uniform(1<<9|1<<10, []*Row{&r, &same}), ColumnSet(1<<9|1<<10), "only the columns asked")
	eq(t, Uniform(AllColumns, []*Row{&r}), AllColumns, "one row")
}

func TestGroupByID(t *testing.T) {
	t.Parallel()
	read := func(key, id string) Row {
		s := fullState(1)
		return Row{Key: key, State: s, Loaded: Loaded{OK: true, ID: id, State: s}}
	}
	rows := []Row{read("a", "1"), read("b", "2"), {Key: "c"}, read("d", "x")}
	rows[0].State.Status = "changed"
	gs := GroupByID(rows, []string{"u1", "u2", "u3", "u4"}, false, true, func(byID bool, id string) bool { return id != "x" })
	eq(t, len(gs), 2, "groups")
	eq(t, gs[0].ByID, true)
	eq(t, gs[0].IDs, []string{"1"}, "unchanged b left out; d invalid")
	eq(t, gs[0].Guard, []string{"u1"})
	eq(t, gs[0].Cols, ColumnSet(1<<10))
	eq(t, gs[1].IDs, []string{"c"})
	eq(t, gs[1].Cols, AllColumns)
	all := GroupByID(rows, nil, true, false, nil)
	eq(t, len(all), 1, "by key only")
	eq(t, all[0].IDs, []string{"a", "b", "c", "d"})
	if all[0].Guard != nil {
		t.Error("no guard given, but the group has one")
	}
}

func TestAppendJSONState(t *testing.T) {
	// Not parallel: AllocsPerRun.
	s := fullState(1)
	s.LastError = ""
	got := string(AppendJSONState(nil, &s, 1<<0|1<<3|1<<9|1<<10, "2006-01-02"))
	want := `,"c0":"` + StoredTime(s.RefreshAt).Format("2006-01-02") + `","c3":` + strconv.Itoa(s.AttemptNo) + `,"c10":"` + s.Status + `"`
	eq(t, got, want)
	if n := testing.AllocsPerRun(100, func() { AppendJSONState(make([]byte, 0, 1024), &s, AllColumns, "2006-01-02") }); n > 1 {
		t.Errorf("AppendJSONState allocates %v times, want only its buffer", n)
	}
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		am   AppliedMigration
		want string
	}{
		{AppliedMigration{Added: []string{"column a", "column b", "index i", "index j"}}, "added 2 columns and 2 indexes"},
		{AppliedMigration{Added: []string{"column a"}, Existing: []string{"column b", "index i"}}, "added column a; 1 column and 1 index already existed"},
		{AppliedMigration{SQL: []string{"x", "y"}}, "ran 2 statement(s)"},
	} {
		eq(t, c.am.Describe(), c.want, c.am)
	}
}

func TestIdentifiersQuoteName(t *testing.T) {
	t.Parallel()
	my := Identifiers{Quote: "`", MaxLen: 4, Limit: "4 characters"}
	got, err := my.QuoteName("a`bé")
	must(t, err)
	eq(t, got, "`a``bé`")
	pg := Identifiers{Quote: `"`, MaxLen: 4, MaxBytes: true, Limit: "4 bytes"}
	_, err = pg.QuoteName("abcé")
	errContains(t, err, "longer than 4 bytes")
	for name, want := range map[string]string{"": "empty", "\xff": "UTF-8", "a ": "space", "a\x00": "control"} {
		_, err := my.QuoteName(name)
		errContains(t, err, want)
	}
}

// TestGroupByIDUnread: a claimed row's unread columns (Loaded.Unread) are
// written only where its State sets them, and a bulk write never sets a
// column of a row that does not know it: such rows get groups of their own.
func TestGroupByIDUnread(t *testing.T) {
	t.Parallel()
	lean := func(key string) Row {
		s := fullState(1)
		for c := range StateColumns {
			if ClaimRest.Has(c) {
				col := &StateColumns[c]
				switch col.Kind {
				case TimeColumn:
					*col.Time(&s) = time.Time{}
				case TextColumn:
					*col.Text(&s) = ""
				}
			}
		}
		s.AttemptUID = ""
		rows := []Row{{Key: key, State: s, Loaded: Loaded{OK: true, State: s}}}
		MarkClaimed(rows)
		return rows[0]
	}
	whole := fullState(1)
	full := Row{Key: "full", State: whole, Loaded: Loaded{OK: true, State: whole}}
	full.State.LastError = "timed out"
	started := lean("started")
	started.State.AttemptUID, started.State.Status = "u", ""
	invalid := lean("invalid")
	invalid.State.DisabledReason, invalid.State.LastError = "bad rule", "bad rule"

	eq(t, started.Loaded.Unread, ClaimRest, "not running: the rest unread")
	eq(t, Unknown(&started), ClaimRest, "not set since")
	eq(t, Changed(&started), ColumnSet(1<<1|1<<10), "attempt uid and status; no unread column")
	eq(t, Unknown(&invalid), ClaimRest&^(1<<6|1<<9), "the reason and the error set")
	eq(t, Changed(&invalid), ColumnSet(1<<6|1<<9), "set unread columns are written")

	gs := GroupByID([]Row{started, full, invalid}, nil, false, false, nil)
	eq(t, len(gs), 3, "one group per set of unknown columns")
	eq(t, gs[0].IDs, []string{"started"})
	eq(t, gs[0].Cols, ColumnSet(1<<1|1<<10))
	eq(t, gs[1].IDs, []string{"full"})
	eq(t, gs[2].IDs, []string{"invalid"})

	all := GroupByID([]Row{started}, []string{"u"}, true, false, nil)
	eq(t, all[0].Cols, AllColumns&^ClaimRest, "with all, what the row knows")
	zero := started
	zero.Loaded.OK = false
	eq(t, Changed(&zero), AllColumns&^ClaimRest, "a row whose read cannot be compared: all it knows")
}
