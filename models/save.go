package models

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/refresher/refresher/internal/jsontext"
	"github.com/refresher/refresher/policy"
)

// NumStateColumns is the number of StateColumns (11); a ColumnSet has a bit
// for each. A test checks it against StateColumns.
const NumStateColumns = 11

// ColumnSet is a set of state columns: bit c stands for StateColumns[c].
// The drivers' bulk writes use it to write only the columns that changed.
type ColumnSet uint16

// AllColumns holds every state column.
const AllColumns ColumnSet = 1<<NumStateColumns - 1

// Has reports whether column c of StateColumns is in s.
func (s ColumnSet) Has(c int) bool { return s&(1<<c) != 0 }

// Changed returns the state columns whose value in r.State differs from the
// one read (r.Loaded.State), as the columns store them (Column.Same); all of
// them for a row that was not read from the database. A column the read
// left out (Loaded.Unread) counts as changed when State sets it, and never
// when it is still zero (see Unknown). It does not allocate.
func Changed(r *Row) ColumnSet { return changed(r, Unknown(r)) }

// changed is Changed given unknown, the row's Unknown columns (GroupByID
// has them already).
func changed(r *Row, unknown ColumnSet) ColumnSet {
	if !r.Loaded.OK {
		return AllColumns &^ unknown
	}
	var s ColumnSet
	for c := range StateColumns {
		if unknown.Has(c) {
			continue
		}
		if r.Loaded.Unread.Has(c) || !StateColumns[c].Same(&r.Loaded.State, &r.State) {
			s |= 1 << c
		}
	}
	return s
}

// Uniform returns the columns of cols that hold one value in every row
// (as Column.Same compares them): a bulk write sets those from one
// argument instead of one value per row. rows must not be empty.
func Uniform(cols ColumnSet, rows []*Row) ColumnSet {
	u, first := cols, &rows[0].State
	for _, r := range rows[1:] {
		if u == 0 {
			break
		}
		if r.State == *first {
			continue // every column the same: one comparison, not one per column
		}
		for c := range StateColumns {
			if u.Has(c) && !StateColumns[c].Same(first, &r.State) {
				u &^= 1 << c
			}
		}
	}
	return u
}

// LastWins drops all but the last occurrence of each key, keeping order, and
// keeps guard (nil, or one entry per row) aligned with rows. It returns rows
// and guard themselves when no key repeats.
func LastWins(rows []Row, guard []string) ([]Row, []string) {
	if len(rows) < 2 {
		return rows, guard
	}
	last := borrowKeyIndex()
	defer returnKeyIndex(last)
	for i := range rows {
		last[rows[i].Key] = i
	}
	if len(last) == len(rows) {
		return rows, guard
	}
	outRows := make([]Row, 0, len(last))
	var outGuard []string
	for i := range rows {
		if last[rows[i].Key] != i {
			continue
		}
		outRows = append(outRows, rows[i])
		if guard != nil {
			outGuard = append(outGuard, guard[i])
		}
	}
	return outRows, outGuard
}

// SaveGroup is rows that one bulk UPDATE writes by one column: by the
// primary key or rowid the row was read with (ByID), or by Key.
type SaveGroup struct {
	// ByID: IDs are Row.Loaded.ID values; otherwise they are Row.Key.
	ByID bool
	// Cols are the columns that changed in any of the rows.
	Cols ColumnSet
	IDs  []string
	Rows []*Row
	// Guard holds the attempt UID each row must still have; nil without a
	// guard (Save), never nil with one (SaveIfAttempt).
	Guard []string
}

// GroupByID splits rows into those written by the ID they were read with
// (when byID allows it and Loaded.ID is set) and the others (by Key), and
// each of those by the columns their State does not know (Unknown: a bulk
// write sets every column of its group in every row of it), dropping
// empty groups; the by-ID groups come first. Unless all, it leaves out
// rows that did not change since they were read; with all, a row's group
// writes every column it knows. valid, when not nil, drops rows whose id
// cannot name a row (an id that is not of the column's type). guard, when
// not nil, holds one attempt UID per row.
func GroupByID(rows []Row, guard []string, all, byID bool, valid func(byID bool, id string) bool) []SaveGroup {
	var groups []SaveGroup
	var unknowns []ColumnSet // of groups[i]
	for i := range rows {
		r := &rows[i]
		unknown := Unknown(r)
		cols := AllColumns &^ unknown
		if !all {
			if cols = changed(r, unknown); cols == 0 {
				continue
			}
		}
		id, viaID := r.Key, byID && r.Loaded.ID != ""
		if viaID {
			id = r.Loaded.ID
		}
		if valid != nil && !valid(viaID, id) {
			continue // names no row
		}
		gi := -1
		for j := range groups {
			if groups[j].ByID == viaID && unknowns[j] == unknown {
				gi = j
				break
			}
		}
		if gi < 0 {
			gi = len(groups)
			groups = append(groups, SaveGroup{ByID: viaID, IDs: make([]string, 0, len(rows)-i), Rows: make([]*Row, 0, len(rows)-i)})
			unknowns = append(unknowns, unknown)
			if guard != nil {
				groups[gi].Guard = make([]string, 0, len(rows)-i)
			}
		}
		g := &groups[gi]
		g.Cols |= cols
		g.IDs = append(g.IDs, id)
		g.Rows = append(g.Rows, r)
		if guard != nil {
			g.Guard = append(g.Guard, guard[i])
		}
	}
	// By ID first, each side in the order of its first row.
	slices.SortStableFunc(groups, func(a, b SaveGroup) int {
		switch {
		case a.ByID == b.ByID:
			return 0
		case a.ByID:
			return -1
		}
		return 1
	})
	return groups
}

// StateColumn returns the column of StateColumns named name, or nil.
func StateColumn(name string) *Column {
	for i := range StateColumns {
		if StateColumns[i].Name == name {
			return &StateColumns[i]
		}
	}
	return nil
}

// jsonMember are the JSON member prefixes `,"c0":` .. `,"c10":` of
// AppendJSONState.
var jsonMember = func() (f [NumStateColumns]string) {
	for c := range f {
		f[c] = `,"c` + strconv.Itoa(c) + `":`
	}
	return f
}()

// AppendJSONState appends to doc the JSON members "c0".."c10" (c for
// StateColumns[c]) of s that are in cols, each preceded by a comma, for the
// drivers that send a batch as one JSON document (MySQL's JSON_TABLE,
// SQLite's json_each). NULLs (zero times, empty texts) are left out; times
// are strings in timeLayout of StoredTime; texts are Column.Fit; integers
// are numbers. It does not allocate beyond growing doc (this runs for every
// row of every batch); s must already live on the heap (the accessors are
// called through func values).
func AppendJSONState(doc []byte, s *policy.State, cols ColumnSet, timeLayout string) []byte {
	for c := range StateColumns {
		if !cols.Has(c) {
			continue
		}
		col := &StateColumns[c]
		switch col.Kind {
		case TimeColumn:
			t := *col.Time(s)
			if t.IsZero() {
				continue
			}
			doc = append(doc, jsonMember[c]...)
			doc = append(doc, '"')
			doc = StoredTime(t).AppendFormat(doc, timeLayout)
			doc = append(doc, '"')
		case TextColumn:
			v := *col.Text(s)
			if v == "" {
				continue
			}
			doc = append(doc, jsonMember[c]...)
			doc = jsontext.AppendString(doc, col.Fit(v))
		case IntColumn:
			doc = append(doc, jsonMember[c]...)
			doc = strconv.AppendInt(doc, int64(*col.Int(s)), 10)
		}
	}
	return doc
}

// MaxSaveBatch is the most rows one bulk UPDATE writes; larger groups are
// split. 1000 rows make a statement of about 600 kB (a JSON document, or
// PostgreSQL's arrays), well below every server's packet limit
// (max_allowed_packet: 16 MB on MariaDB, 64 MB on MySQL 8).
const MaxSaveBatch = 1000

// SaveBatches calls write for each batch of groups, in order: the rows of
// one group, at most MaxSaveBatch of them, with their IDs and guards. It
// returns the sum of the rows write says it wrote, and stops at the first
// error, which it wraps with the batch's size and the table's name
// ("save 3 rows of items if attempt: ..." for a guarded batch).
func SaveBatches(table string, groups []SaveGroup, write func(b SaveGroup) (int, error)) (int, error) {
	written := 0
	for _, g := range groups {
		for start := 0; start < len(g.Rows); start += MaxSaveBatch {
			end := min(start+MaxSaveBatch, len(g.Rows))
			b := SaveGroup{ByID: g.ByID, Cols: g.Cols, IDs: g.IDs[start:end], Rows: g.Rows[start:end]}
			what := ""
			if g.Guard != nil {
				b.Guard, what = g.Guard[start:end], " if attempt"
			}
			n, err := write(b)
			written += n
			if err != nil {
				return written, fmt.Errorf("save %d rows of %s%s: %w", end-start, table, what, err)
			}
		}
	}
	return written, nil
}

// CheckAttemptUIDs checks SaveIfAttempt's arguments: one attempt UID per
// row.
func CheckAttemptUIDs(t Table, rows []Row, attemptUIDs []string) error {
	if len(rows) != len(attemptUIDs) {
		return fmt.Errorf("save rows of %s if attempt: %d rows but %d attempt UIDs", t.Name, len(rows), len(attemptUIDs))
	}
	return nil
}
