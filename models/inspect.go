package models

import (
	"context"
	"time"
)

// Inspector answers an operator's questions about a kind's table: the
// counts by state and the rows in one state. Every driver implements it next
// to its Store. Queries take `now` from the caller, like the Store's.
type Inspector interface {
	// Counts counts the rows of t by state at now. A row counts in every
	// state it is in (a running row that has been failing is both).
	Counts(ctx context.Context, t Table, now time.Time, lateAfter time.Duration) (Counts, error)
	// List returns up to q.Limit rows of t in q.State, ordered by key,
	// starting after the key q.After ("" from the start), without Payload.
	List(ctx context.Context, t Table, q ListQuery) ([]Row, error)
}

// Counts is a kind's table by state at one instant; see Inspector.Counts.
type Counts struct {
	// Total is the number of rows.
	Total int64
	// Due rows have refresh_at <= now (a due row with an attempt is one whose
	// attempt timed out).
	Due int64
	// Late rows have been due for longer than lateAfter: refresh_at <=
	// now - lateAfter.
	Late int64
	// Running rows have an attempt (refresh_attempt_uid set).
	Running int64
	// Failing rows are not disabled and have failed since their last success
	// (refresh_failing_since set).
	Failing int64
	// Disabled rows have refresh_disabled_until_update set.
	Disabled int64
	// OldestDue is the earliest refresh_at <= now; zero when nothing is due.
	OldestDue time.Time
	// MaxAttemptNo is the highest refresh_attempt_no.
	MaxAttemptNo int
}

// RowState names a state for Inspector.List.
type RowState string

// The states of Inspector.List; see Counts for their definitions.
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
}
