package models

import (
	"context"
	"slices"
	"time"
)

// Inspector answers an operator's questions about a kind's table: the
// counts by state and the rows in one state. It is part of Store; a test
// double may implement it alone. Queries take `now` from the caller, like
// the Store's.
type Inspector interface {
	// Counts counts the rows of t by state at now. A row counts in every
	// state it is in (a running row that has been failing is both).
	Counts(ctx context.Context, t Table, now time.Time, lateAfter time.Duration) (Counts, error)
	// List returns up to q.Limit rows of t in q.State, ordered by key,
	// starting after the key q.After ("" from the start), without Payload.
	// With q.Search it examines at most q.Budget() rows of the table and
	// says where to go on (ListPage.Next); see ListQuery.ScanBudget.
	List(ctx context.Context, t Table, q ListQuery) (ListPage, error)
	// Get reads the row of t with key, with its Payload (t.Payload: pass
	// only the columns needed), without locking: the last committed state,
	// for an operator's view of one model. ok is false when no row has
	// that key.
	Get(ctx context.Context, t Table, key string) (row Row, ok bool, err error)
	// Backlog counts the due rows of t at now by priority level (see
	// CountByPriority): the kind's level (t.Priority) always, the others
	// with due rows, by level. A table without the priority columns has
	// all its due rows at the kind's level. knownDue, when not nil, is
	// t's exact count of due rows at now (Counts.Due): when no row has a
	// refresh_priority of its own it is the kind's level, not counted
	// again (LevelCounts.KnownDue).
	Backlog(ctx context.Context, t Table, now time.Time, knownDue *int64) ([]LevelCount, error)
	// AlertsByLevel returns, for the kind's level (t.Priority) and every
	// level a row of t has, the oldest due refresh_at at now and the
	// highest attempt number (see AlertsByPriority): the gauges behind the
	// alerts by priority, a few index lookups per level. A table without
	// the priority columns has all its rows at the kind's level.
	AlertsByLevel(ctx context.Context, t Table, now time.Time) ([]LevelAlert, error)
}

// DefaultScanBudget is ListQuery.ScanBudget's default: the rows a search
// examines per request. A substring search cannot use an index, so its cost
// is bounded by the rows it reads rather than by the matches it finds.
const DefaultScanBudget = 5000

// ListPage is a page of Inspector.List.
type ListPage struct {
	// Rows are the rows found, in key order.
	Rows []Row
	// Next is the After of the next request, "" when no row remains to be
	// examined. Without a search it is the last row's key when the page is
	// full. With a search it is the last match's key when the page is full,
	// else the last key examined when the scan budget ran out with rows
	// left (the page may then have fewer rows than the limit, or none).
	Next string
	// ScannedTo is set when a search stopped at its scan budget: the last
	// key it examined (then equal to Next). Matches after it have not been
	// looked for yet.
	ScannedTo string
}

// Complete reports whether the list has ended: following Next would find
// nothing more.
func (p ListPage) Complete() bool { return p.Next == "" }

// Counts is a kind's table by state at one instant; see Inspector.Counts.
// RowState.Has defines the states; the SQL of each driver agrees with it.
type Counts struct {
	// Total is the number of rows; when TotalEstimated, the database's
	// estimate of it (see ExactTotalUpTo).
	Total int64
	// TotalEstimated says that Total is the database's estimate from its
	// table statistics, not a count: the table has more than ExactTotalUpTo
	// rows by that estimate.
	TotalEstimated bool
	// Estimated are the states whose count is the database's estimate,
	// not a count: each has more than ExactStateUpTo rows (see it). The
	// states not in it are counted exactly.
	Estimated []RowState
	// Due rows have refresh_at <= now (a due row with an attempt is one whose
	// attempt timed out).
	Due int64
	// Late rows have been due for at least lateAfter.
	Late int64
	// Running rows have an attempt.
	Running int64
	// Failing rows have failed since their last success and are not
	// disabled.
	Failing int64
	// Disabled rows wait for their user to update them.
	Disabled int64
	// OldestDue is the earliest refresh_at <= now; zero when nothing is due.
	OldestDue time.Time
	// MaxAttemptNo is the highest refresh_attempt_no.
	MaxAttemptNo int
}

// ExactTotalUpTo is the largest table, in rows by the database's own
// estimate, whose Counts.Total MariaDB/MySQL and PostgreSQL count exactly.
// An exact total reads a whole index (about 100 ms per million rows on a
// quiet machine, seconds at ten million), so beyond it Total is the
// estimate from the table's statistics and Counts.TotalEstimated is set;
// the states' counts read only their own rows, exactly up to
// ExactStateUpTo each (see it). SQLite has no
// such estimate and always counts.
const ExactTotalUpTo = 1_000_000

// ExactStateUpTo is the largest count of a state (due, late, running,
// failing, disabled) that Counts gives exactly on MariaDB/MySQL and
// PostgreSQL for a table of more than ExactTotalUpTo rows (a smaller
// table's states are always counted: under 200 ms at a million rows):
// each state's count reads at most ExactStateUpTo+1 of its index entries,
// and a state with more is the planner's estimate of its rows, at least
// ExactStateUpTo+1, listed in Counts.Estimated. The bound
// keeps a count under the read calls' 200 ms budget at ten million rows:
// on PostgreSQL, right after a burst of refreshes spread over the table,
// an index-only count visits the table for many entries (the visibility
// map no longer marks their pages all-visible) and reads index pages the
// burst pushed out of shared_buffers. Counting the 350,000 running,
// failing and disabled rows of a 10M-row table then took 0.85-2.15 s; the
// first count after a burst of 50,000 updates took 94 ms (median of 5,
// 42-355 ms) with at most 1,001 entries per state, 148 ms (57-220) with
// 2,001, 273 ms (110-554) with 5,001 and 358 ms (143-507) with 10,001, on
// 2 busy cores (docs/performance.md, "Ten million rows"). SQLite counts
// every state in one scan of the table and stays exact.
const ExactStateUpTo = 2_000

// IsEstimated reports whether the count of state is an estimate;
// StateAll is the total (TotalEstimated).
func (c Counts) IsEstimated(state RowState) bool {
	if state == StateAll {
		return c.TotalEstimated
	}
	return slices.Contains(c.Estimated, state)
}

// RowState names a state for Inspector.List.
type RowState string

// The states of Inspector.List and Counts; RowState.Has defines them.
const (
	StateDue      RowState = "due"
	StateLate     RowState = "late"
	StateRunning  RowState = "running"
	StateFailing  RowState = "failing"
	StateDisabled RowState = "disabled"
	// StateAll lists every row.
	StateAll RowState = "all"
)

// ListQuery selects rows for Inspector.List.
type ListQuery struct {
	State RowState
	// Now and LateAfter define due and late.
	Now       time.Time
	LateAfter time.Duration
	// Search, when not empty, keeps rows whose key contains it, or whose
	// disabled reason or last error does (case-insensitive where the
	// database's collation is).
	Search string
	// After is the last key of the previous page; "" for the first page.
	// Keys are compared as the database orders the key column.
	After string
	// Limit is the page size; at most 1000, default 50.
	Limit int
	// ScanBudget bounds a search's cost: it examines at most this many rows
	// of the table, in key order after After along the key's index, keeps
	// those in State that match, and stops there even with fewer matches
	// than Limit (see ListPage.Next). Default DefaultScanBudget; ignored
	// without Search.
	ScanBudget int
}

// Budget is q.ScanBudget or its default.
func (q ListQuery) Budget() int {
	if q.ScanBudget > 0 {
		return q.ScanBudget
	}
	return DefaultScanBudget
}
