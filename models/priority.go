package models

import (
	"database/sql"
	"fmt"
	"slices"
	"time"
)

// The priority columns (migration 0004), outside Schema: the service never
// writes refresh_priority, and writes refresh_priority_once only to clear it
// (ClaimByPriority) or, for the operator's trigger, to set it. A table
// without them is claimed by refresh_at alone, as before the migration.
const (
	// ColPriority is the row's own priority: lower runs first; NULL means
	// the kind's (Table.Priority).
	ColPriority = "refresh_priority"
	// ColPriorityOnce is a priority for the row's next attempt only, set by
	// "refresh now"; the claim that picks the row up clears it.
	ColPriorityOnce = "refresh_priority_once"
)

// PrioritySource says which column gave a claimed row its priority.
type PrioritySource uint8

const (
	// PriorityKind: both priority columns are NULL, the row has the kind's
	// priority (Table.Priority).
	PriorityKind PrioritySource = iota
	// PriorityRow: refresh_priority, with refresh_priority_once NULL.
	PriorityRow
	// PriorityOnce: refresh_priority_once, a one-shot priority.
	PriorityOnce
)

// Priority is the priority a row was claimed at (Level, lower runs first)
// and the column it came from. It also names one index range the claim
// walks: the rows whose Source column equals Level (for PriorityKind, the
// rows whose priority columns are both NULL).
type Priority struct {
	Level  int
	Source PrioritySource
}

// Filter is the start of a WHERE clause, ending in " AND ", that picks the
// rows of p's range, and its arguments (the level, when the filter takes
// one): quote writes a column name in the driver's dialect and ph the
// level's placeholder. A claim takes each row at one level only, so for a
// claim the row and kind ranges leave out the rows a one-shot priority
// moves; a backlog count (claim false) counts a triggered row at both its
// levels until it is claimed. Every driver's claim, count and urgent probe
// use it, so that they agree on which rows a level holds.
func (p Priority) Filter(quote func(col string) string, ph string, claim bool) (string, []any) {
	once, own := quote(ColPriorityOnce), quote(ColPriority)
	rest := ""
	if claim {
		rest = once + " IS NULL AND "
	}
	switch p.Source {
	case PriorityOnce:
		return once + " = " + ph + " AND ", []any{p.Level}
	case PriorityRow:
		return own + " = " + ph + " AND " + rest, []any{p.Level}
	}
	return own + " IS NULL AND " + rest, nil
}

// before orders the claim's scans: by level, then once, row, kind.
func (p Priority) before(q Priority) bool {
	if p.Level != q.Level {
		return p.Level < q.Level
	}
	return p.Source > q.Source
}

// Cursor is where a claim starts (see Tx.ClaimDue): in the scan At.Scan,
// at refresh_at >= At; every other scan starts at its beginning. The zero
// Cursor starts every scan at its beginning.
//
// UrgentOnly stops the claim before the kind's level (Table.Priority): it
// claims only rows more urgent than the kind's, and nothing from a table
// without the priority columns. The dispatcher claims so while the input
// list is full, so that "refresh now" at a high priority does not wait for
// the backlog to drain.
type Cursor struct {
	Scan       Priority
	At         time.Time
	UrgentOnly bool
}

// CursorAfter is the cursor after a full batch whose last row is last.
func CursorAfter(last Row) Cursor {
	return Cursor{Scan: last.Priority, At: last.State.RefreshAt}
}

// PriorityScans is what a driver gives ClaimByPriority: its SQL for the
// claim's three statements on one table.
type PriorityScans struct {
	// Probe returns the smallest value of column col (ColPriority or
	// ColPriorityOnce) greater than after (any value when first), with ok
	// false when there is none: one index lookup.
	Probe func(col string, after int, first bool) (level int, ok bool, err error)
	// First is Probe of both columns with first set, in one statement (see
	// FirstLevelsQuery): the claim asks it before every batch.
	First func() (FirstLevels, error)
	// Claim locks and returns up to limit due rows of scan s, earliest
	// refresh_at first, from refresh_at >= from when from is not zero: one
	// index range scan. For PriorityRow it leaves out rows whose
	// refresh_priority_once is set (the once scans take them).
	Claim func(s Priority, from time.Time, limit int) ([]Row, error)
	// ClearOnce sets refresh_priority_once to NULL on the rows with these
	// keys (already locked by Claim).
	ClearOnce func(keys []string) error
}

// FirstLevels are the smallest values of the two priority columns:
// PriorityScans.First's answer. OnceOK (RowOK) is false when no row has
// refresh_priority_once (refresh_priority) set.
type FirstLevels struct {
	Once, Row     int
	OnceOK, RowOK bool
}

// FirstLevelsQuery is the statement of PriorityScans.First on table (quoted)
// in every dialect, quote quoting a column name: two scalar subqueries,
// each Probe's first lookup in its column's index, so that a claim asks
// both in one round trip. Each answer is NULL when its column holds none.
func FirstLevelsQuery(table string, quote func(col string) string) string {
	probe := func(col string) string {
		c := quote(col)
		return "(SELECT " + c + " FROM " + table + " WHERE " + c + " IS NOT NULL ORDER BY " + c + " LIMIT 1)"
	}
	return "SELECT " + probe(ColPriorityOnce) + ", " + probe(ColPriority)
}

// ScanFirstLevels reads the answer of FirstLevelsQuery from row, for the
// drivers over database/sql.
func ScanFirstLevels(row *sql.Row) (FirstLevels, error) {
	var once, own sql.NullInt64
	if err := row.Scan(&once, &own); err != nil {
		return FirstLevels{}, fmt.Errorf("find the first priority levels: %w", err)
	}
	return FirstLevels{Once: int(once.Int64), OnceOK: once.Valid, Row: int(own.Int64), RowOK: own.Valid}, nil
}

// ClaimByPriority claims up to limit due rows by priority, then refresh_at:
// scan by scan in the order of their level (lower first; within one level
// the one-shot priorities, then the rows' own, then the rows without any,
// which have level def), until limit rows are claimed or no scan is left.
// The levels present are found by index lookups (First, then Probe), so a
// pass costs two lookups per distinct level up to the one that fills the
// batch (the first two in one statement), and
// each scan is an index range scan from its cursor: nothing grows with the
// table or the backlog. The one-shot priority of every row claimed by it is
// cleared in the same transaction: it served this attempt.
func ClaimByPriority(def int, from Cursor, limit int, sc PriorityScans) ([]Row, error) {
	var out []Row
	first, err := sc.First()
	if err != nil {
		return nil, err
	}
	onceLevel, onceOK, rowLevel, rowOK := first.Once, first.OnceOK, first.Row, first.RowOK
	kindDone := false
	var once []string // cleared after the last scan: a later scan would see the row again
	for len(out) < limit {
		var s Priority
		found := false
		for _, c := range []struct {
			ok bool
			p  Priority
		}{{onceOK, Priority{onceLevel, PriorityOnce}}, {rowOK, Priority{rowLevel, PriorityRow}}, {!kindDone, Priority{def, PriorityKind}}} {
			if c.ok && (!found || c.p.before(s)) {
				s, found = c.p, true
			}
		}
		if !found || (from.UrgentOnly && s.Level >= def) {
			break
		}
		var start time.Time
		if from.Scan == s && !from.At.IsZero() {
			start = from.At
		}
		rows, err := sc.Claim(s, start, limit-len(out))
		if err != nil {
			return nil, err
		}
		for i := range rows {
			rows[i].Priority = s
		}
		if s.Source == PriorityOnce {
			for i := range rows {
				once = append(once, rows[i].Key)
			}
		}
		if out == nil {
			out = rows // most claims are one scan: no copy of the batch
		} else {
			out = append(out, rows...)
		}
		switch s.Source {
		case PriorityOnce:
			onceLevel, onceOK, err = sc.Probe(ColPriorityOnce, s.Level, false)
		case PriorityRow:
			rowLevel, rowOK, err = sc.Probe(ColPriority, s.Level, false)
		default:
			kindDone = true
		}
		if err != nil {
			return nil, err
		}
	}
	if len(once) > 0 {
		if err := sc.ClearOnce(once); err != nil {
			return nil, fmt.Errorf("clear %s: %w", ColPriorityOnce, err)
		}
	}
	return out, nil
}

// LevelCount is how many due rows one priority level holds.
type LevelCount struct {
	Level int   `json:"level"`
	Due   int64 `json:"due"`
}

// LevelCounts is what a driver gives CountByPriority: its SQL on one
// table.
type LevelCounts struct {
	// Prioritized says the table has the priority columns and their
	// indexes (migration 0004); without them every row has the kind's
	// level, and only Count is called, once, with no filter.
	Prioritized bool
	// Quote and Placeholder write Filter's column names and its level's
	// placeholder in the driver's dialect.
	Quote       func(col string) string
	Placeholder string
	// Probe is PriorityScans.Probe.
	Probe func(col string, after int, first bool) (level int, ok bool, err error)
	// Count counts the due rows of scan s: those that filter (the start of
	// a WHERE clause ending in " AND ", or "") picks, with its args.
	Count func(s Priority, filter string, args []any) (int64, error)
	// KnownDue, when not nil, is the table's exact count of due rows at the
	// same time (Counts.Due): when no row has a refresh_priority of its own,
	// every due row is at the kind's level, and CountByPriority takes it
	// instead of counting those rows again.
	KnownDue *int64
}

// CountByPriority counts the due rows of each priority level for
// Inspector.Backlog: each scan's count is of Filter with claim false, the
// rows of PriorityRow without regard to refresh_priority_once, so that each
// count is an index-only range count (a row triggered at a one-shot
// priority thus counts at both levels until its claim). The levels come
// from Probe, as in ClaimByPriority. The kind's level def is always in the
// result; other levels only with due rows. Sorted by level. With
// sc.KnownDue and no row at a refresh_priority of its own, the kind's
// level is sc.KnownDue, not counted.
func CountByPriority(def int, sc LevelCounts) ([]LevelCount, error) {
	if !sc.Prioritized {
		if sc.KnownDue != nil {
			return []LevelCount{{Level: def, Due: *sc.KnownDue}}, nil
		}
		n, err := sc.Count(Priority{Level: def, Source: PriorityKind}, "", nil)
		if err != nil {
			return nil, err
		}
		return []LevelCount{{Level: def, Due: n}}, nil
	}
	count := func(s Priority) (int64, error) {
		filter, args := s.Filter(sc.Quote, sc.Placeholder, false)
		return sc.Count(s, filter, args)
	}
	// The rows' own levels are probed first: without any, the kind's level
	// holds every due row.
	firstRow, anyRow, err := sc.Probe(ColPriority, 0, true)
	if err != nil {
		return nil, err
	}
	due := map[int]int64{}
	if !anyRow && sc.KnownDue != nil {
		due[def] = *sc.KnownDue
	} else if due[def], err = count(Priority{Level: def, Source: PriorityKind}); err != nil {
		return nil, err
	}
	// walk counts the levels of col from the probe that found level (ok:
	// one was found) on.
	walk := func(col string, src PrioritySource, level int, ok bool) error {
		var err error
		for ; ok && err == nil; level, ok, err = sc.Probe(col, level, false) {
			var n int64
			if n, err = count(Priority{Level: level, Source: src}); err != nil {
				return err
			}
			due[level] += n
		}
		return err
	}
	firstOnce, anyOnce, err := sc.Probe(ColPriorityOnce, 0, true)
	if err == nil {
		err = walk(ColPriorityOnce, PriorityOnce, firstOnce, anyOnce)
	}
	if err == nil {
		err = walk(ColPriority, PriorityRow, firstRow, anyRow)
	}
	if err != nil {
		return nil, err
	}
	out := make([]LevelCount, 0, len(due))
	for level, n := range due {
		if n > 0 || level == def {
			out = append(out, LevelCount{Level: level, Due: n})
		}
	}
	slices.SortFunc(out, func(a, b LevelCount) int { return a.Level - b.Level })
	return out, nil
}

// AnyUrgentDue reports whether a row of a level below def (more urgent
// than the kind's) is due, for Store.UrgentDue: it probes the levels of
// both priority columns below def in order and asks due(s) of each (one
// index lookup each). With no such level it costs two index lookups.
func AnyUrgentDue(def int, probe func(col string, after int, first bool) (int, bool, error), due func(s Priority) (bool, error)) (bool, error) {
	for _, c := range []struct {
		col string
		src PrioritySource
	}{{ColPriorityOnce, PriorityOnce}, {ColPriority, PriorityRow}} {
		level, ok, err := probe(c.col, 0, true)
		for ; ok && err == nil && level < def; level, ok, err = probe(c.col, level, false) {
			var yes bool
			if yes, err = due(Priority{Level: level, Source: c.src}); err != nil || yes {
				return yes, err
			}
		}
		if err != nil {
			return false, err
		}
	}
	return false, nil
}

// LevelAlert is what the alerts by priority read of one level
// (Inspector.AlertsByLevel).
type LevelAlert struct {
	Level int `json:"level"`
	// OldestDue is the earliest refresh_at <= now among the level's rows;
	// zero when none is due.
	OldestDue time.Time `json:"oldest_due,omitzero"`
	// MaxAttemptNo is the highest refresh_attempt_no among the level's
	// rows.
	MaxAttemptNo int `json:"max_attempt_no"`
}

// LevelScans is what a driver gives AlertsByPriority: its SQL on one
// table, each function one index lookup (for a PriorityOnce scan, a read
// of the few rows triggered at that level).
type LevelScans struct {
	// Prioritized is LevelCounts.Prioritized: without the priority
	// columns only Unprioritized is called.
	Prioritized bool
	// Unprioritized returns the table's counts (Inspector.Counts, whose
	// OldestDue and MaxAttemptNo are then the kind's level's).
	Unprioritized func() (Counts, error)
	// Probe is PriorityScans.Probe.
	Probe func(col string, after int, first bool) (level int, ok bool, err error)
	// Oldest returns the earliest refresh_at <= now of scan s (with
	// Filter's claim false), ok false when none is due.
	Oldest func(s Priority) (at time.Time, ok bool, err error)
	// MaxAttempt returns the highest refresh_attempt_no of scan s (with
	// Filter's claim false), 0 when it has no row.
	MaxAttempt func(s Priority) (int, error)
}

// AlertsByPriority computes Inspector.AlertsByLevel: for the kind's level
// def and every level a row's priority column holds, whether or not it has
// due rows (a failing row waits for its retry without being due), the
// oldest due refresh_at and the highest attempt number. A level's rows are
// those Filter(claim false) picks, as in CountByPriority: a row triggered
// at a one-shot priority counts at both its levels until its claim. The
// levels come from Probe; each level costs two index lookups per column
// that holds it, so the cost does not grow with the table. Sorted by level.
// A table without the priority columns has one level, the kind's, with
// Counts' figures.
func AlertsByPriority(def int, sc LevelScans) ([]LevelAlert, error) {
	if !sc.Prioritized {
		c, err := sc.Unprioritized()
		if err != nil {
			return nil, err
		}
		return []LevelAlert{{Level: def, OldestDue: c.OldestDue, MaxAttemptNo: c.MaxAttemptNo}}, nil
	}
	byLevel := map[int]*LevelAlert{}
	add := func(s Priority) error {
		a := byLevel[s.Level]
		if a == nil {
			a = &LevelAlert{Level: s.Level}
			byLevel[s.Level] = a
		}
		at, ok, err := sc.Oldest(s)
		if err != nil {
			return err
		}
		if ok && (a.OldestDue.IsZero() || at.Before(a.OldestDue)) {
			a.OldestDue = at
		}
		n, err := sc.MaxAttempt(s)
		if err != nil {
			return err
		}
		a.MaxAttemptNo = max(a.MaxAttemptNo, n)
		return nil
	}
	if err := add(Priority{Level: def, Source: PriorityKind}); err != nil {
		return nil, err
	}
	for _, c := range []struct {
		col string
		src PrioritySource
	}{{ColPriorityOnce, PriorityOnce}, {ColPriority, PriorityRow}} {
		level, ok, err := sc.Probe(c.col, 0, true)
		for ; ok && err == nil; level, ok, err = sc.Probe(c.col, level, false) {
			if err = add(Priority{Level: level, Source: c.src}); err != nil {
				break
			}
		}
		if err != nil {
			return nil, err
		}
	}
	out := make([]LevelAlert, 0, len(byLevel))
	for _, a := range byLevel {
		out = append(out, *a)
	}
	slices.SortFunc(out, func(a, b LevelAlert) int { return a.Level - b.Level })
	return out, nil
}

// RestoresOnce reports whether a SaveIfAttempt batch holds a row whose
// one-shot priority its claim cleared (Priority of source PriorityOnce,
// see Store.SaveIfAttempt): only then do the drivers add the statements
// that set it back.
func RestoresOnce(rows []*Row) bool {
	for _, r := range rows {
		if r.Priority.Source == PriorityOnce {
			return true
		}
	}
	return false
}
