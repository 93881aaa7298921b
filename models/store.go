package models

import (
	"context"
	"io"
	"strings"
	"time"

	"github.com/refresher/refresher/internal/payload"
	"github.com/refresher/refresher/policy"
)

// Table names one kind's table and the columns the service reads besides the
// refresh columns.
type Table struct {
	// Name is the application's table.
	Name string
	// Key is a unique column of the table; its value is sent to workers as
	// "uid" and comes back in results. Any type (INT, CHAR, ...): keys
	// travel as strings, formatted as the database returns them ("42").
	Key string
	// Payload lists the columns copied into each job's payload.
	Payload []string
	// Priority is the kind's priority: the level of the rows whose priority
	// columns are NULL (see ClaimByPriority). Lower runs first.
	Priority int
}

// CacheKey identifies t among the tables a driver compiles statements
// for: its name, key and payload columns.
func (t Table) CacheKey() string {
	return t.Name + "\x00" + t.Key + "\x00" + strings.Join(t.Payload, "\x00")
}

// Row is one model as the service sees it.
type Row struct {
	// Key is the key column's value as a string.
	Key string
	// Rule is refresh_rrule; "" when NULL (the kind's default schedule).
	// The service reads it and never writes it: Save leaves the column alone.
	Rule string
	// State holds the other 11 refresh columns.
	State policy.State
	// Payload holds each payload column, in the order of Table.Payload,
	// with a JSON-friendly value: nil for NULL, int64 or float64 for
	// numbers, string for text, DECIMAL and binary columns (bytes as they
	// are), RFC 3339 UTC text for DATE, DATETIME and TIMESTAMP. Nil when
	// the Table has no payload columns or the read leaves them out.
	Payload payload.Fields
	// Priority is the priority ClaimDue claimed the row at; zero for rows
	// read otherwise.
	Priority Priority
	// Loaded is what the driver read. ClaimDue and LockByKeys set it so that
	// Save writes only the columns that changed since, by the row's primary
	// key. Callers copy rows whole and leave it alone; a Row built by hand
	// has none and is written in full, by Key.
	Loaded Loaded
}

// Loaded is a row as a driver read it; see Row.Loaded.
type Loaded struct {
	// ID is the row's single-column primary key when it is not the Key
	// column; "" otherwise.
	ID string
	// State is Row.State as read.
	State policy.State
	// OK is set when State holds what was read (not for a row built by
	// hand, nor one whose stored values cannot be compared, such as a
	// zero date, which is then written in full).
	OK bool
	// Unread are the state columns the read left out (ClaimDue leaves out
	// ClaimRest of rows that are not running): their fields in State and
	// in Loaded.State are zero, not the row's. Save writes such a column
	// only when State sets it (a value other than zero), and never clears
	// it: to clear one, read the row whole first (LockByKeys). Zero for
	// rows read whole and rows built by hand.
	Unread ColumnSet
}

// Store is the service's view of one database that holds the kinds'
// tables. Each driver (models/mysqlstore, ...) implements it and translates
// its own errors (see Classify); package refresher talks to no database but
// through it. Implementations are safe for concurrent use.
//
// Every query that compares with the current time takes `now` from the
// caller: drivers never read the database's clock, so tests control the
// service's idea of time. All times are UTC.
//
// Every Store is an Inspector too: the operator's dashboard, API and gauges
// need its counts and lists, and a driver without them would leave them
// blank.
type Store interface {
	Inspector
	// Tx runs fn in a transaction that sees committed data and locks only
	// the rows it returns (READ COMMITTED or the driver's equivalent). It
	// commits when fn returns nil; otherwise, or when fn panics, it rolls
	// back and returns fn's error.
	Tx(ctx context.Context, fn func(tx Tx) error) error
	// SaveIfAttempt writes rows like Tx.Save, in its own statements outside
	// any transaction, but only those whose refresh_attempt_uid still equals
	// attemptUIDs[i] ("" means NULL). It returns how many rows it wrote. The
	// dispatcher undoes attempts whose push failed with it. A row whose
	// Priority is of source PriorityOnce (claimed by its one-shot priority,
	// which the claim cleared) also gets refresh_priority_once set back to
	// its Priority.Level, in the same transaction and under the same guard,
	// unless the column holds a value (a newer trigger wins); tables
	// without the priority columns are written as before.
	SaveIfAttempt(ctx context.Context, t Table, rows []Row, attemptUIDs []string) (int, error)
	// NextDue returns the earliest refresh_at of rows with a key; ok is
	// false when there is none. It may be in the past and does not lock.
	// Its cost must not grow with the table.
	NextDue(ctx context.Context, t Table) (next time.Time, ok bool, err error)
	// NextDueMany is NextDue for many tables in one round trip per
	// NextDueChunk tables: next[i] answers tables[i]. The dispatchers of
	// idle kinds share it, so that 200 idle kinds cost one query per
	// MaxSleep, not 200. An error of one table (dropped, not readable)
	// fails the whole call.
	NextDueMany(ctx context.Context, tables []Table) (next []Next, err error)
	// UrgentDue reports whether a row more urgent than the kind's (of a
	// priority level below t.Priority) is due at now, without a
	// transaction: a few index lookups (see AnyUrgentDue). False for a
	// table without the priority columns. The urgent dispatcher asks it
	// before it claims.
	UrgentDue(ctx context.Context, t Table, now time.Time) (bool, error)
	// Check verifies that t's table has its key column (with a unique
	// index), its payload columns and every refresh column. The error names
	// everything missing and how to fix it.
	Check(ctx context.Context, t Table) error
	// Migrate adds the refresh columns and the refresh_at index to each
	// table, idempotently, reporting progress to w; with dryRun it changes
	// nothing and writes the SQL it would run to w.
	Migrate(ctx context.Context, tables []string, w io.Writer, dryRun bool) (MigrateReport, error)
	// Classify says what an error returned by this Store means for the
	// batch that got it.
	Classify(err error) ErrorClass
	// Ping checks that the database answers.
	Ping(ctx context.Context) error
	// Close closes the connections.
	Close() error
}

// Tx is one transaction of a Store; see Store.Tx. It is used by one
// goroutine.
type Tx interface {
	// ClaimDue locks and returns up to limit rows whose refresh_at <= now,
	// by priority, then earliest first (see ClaimByPriority; a table
	// without the priority columns by refresh_at alone), skipping rows
	// another transaction holds (SKIP LOCKED), so several dispatchers share
	// the work without waiting for each other or claiming a row twice. Each
	// row's Priority says the scan it came from. from is a cursor the
	// caller resets regularly (see Cursor, CursorAfter). Rows claimed by a
	// one-shot priority have it cleared. Rows whose key is NULL are never
	// returned. Of rows that are not running it leaves ClaimRest unread
	// (Loaded.Unread): what starting an attempt needs is read, the rest
	// only where a timeout needs it.
	ClaimDue(ctx context.Context, t Table, now time.Time, from Cursor, limit int) ([]Row, error)
	// SetPriorityOnce sets refresh_priority_once of the rows with these keys
	// to level, or to NULL when level is nil: the operator's trigger gives
	// the next attempt a priority with it. Keys naming no row are ignored.
	// It fails on a table without the priority columns.
	SetPriorityOnce(ctx context.Context, t Table, keys []string, level *int) error
	// LockByKeys locks (waiting for other transactions) and returns the rows
	// with the given keys, by the key as the database returns it, without
	// their Payload. Duplicate keys are fine. Keys naming no row are absent,
	// and so are keys the key column cannot hold (a character its
	// character set lacks, text that is no integer for an integer column):
	// they fail nothing, so that a poller dead-letters their results as
	// unknown models and applies the rest of the batch.
	LockByKeys(ctx context.Context, t Table, keys []string) (map[string]Row, error)
	// Save writes the 11 state columns of rows (never refresh_rrule nor
	// any other column). Of rows that ClaimDue or LockByKeys returned it
	// writes only what changed since, and of a column the read left out
	// (Loaded.Unread) only a value State sets. Keys naming no row, or that the key
	// column cannot hold (see LockByKeys), are ignored; when a key occurs
	// twice the last row wins. Texts longer than their column are cut by
	// Truncate's rule.
	Save(ctx context.Context, t Table, rows []Row) error
	// SaveSuccesses writes what a success does to each row of rows without
	// reading it first: the SuccessColumns of its State (policy.Succeeded),
	// in one statement per up to MaxSaveBatch rows, to the row whose key
	// is Key exactly as the database returns it, and only when that row
	// is the one policy.Apply would apply the result to as a success with
	// the kind's schedule: refresh_attempt_uid equals AttemptUID,
	// refresh_rrule is NULL (the row has no rule of its own) and
	// refresh_timeout_at is NULL or after now (the result is not late).
	// written[i] says whether rows[i] was written; the rest are left alone
	// for the caller to lock, read and decide (LockByKeys). Keys must be
	// distinct. A driver that cannot tell which rows matched returns
	// ErrUnmatched when some did not, having possibly written the others:
	// the caller rolls the transaction back.
	SaveSuccesses(ctx context.Context, t Table, now time.Time, rows []Success) (written []bool, err error)
}

// Next is one table's answer of Store.NextDueMany: At is the earliest
// refresh_at of its rows with a key; OK is false when it has none.
type Next struct {
	At time.Time
	OK bool
}

// NextDueChunk is how many tables one statement of Store.NextDueMany asks
// about at most: SQLite allows 500 terms in a compound SELECT, and a
// statement over a few hundred tables is long enough.
const NextDueChunk = 100

// ErrorClass is what an error from a Store means for the batch that got it.
type ErrorClass int

const (
	// Transient: a passing condition (lost connection, deadlock, lock wait
	// timeout, server shutting down, too many connections). The same batch
	// is tried again later.
	Transient ErrorClass = iota
	// ValueRefused: the database refused a value of this batch (a text its
	// column's character set cannot hold, a value a trigger rejects). The
	// result that carries it goes to the dead letters; the others apply.
	ValueRefused
	// TableRefused: the table cannot be written at all (missing table or
	// column, missing privilege, read-only server). The batch waits in
	// Redis until an operator fixes it; the error says how.
	TableRefused
)

func (c ErrorClass) String() string {
	switch c {
	case Transient:
		return "transient"
	case ValueRefused:
		return "value refused"
	case TableRefused:
		return "table refused"
	}
	return "unknown"
}
