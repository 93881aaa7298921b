package models

import (
	"strings"
	"time"

	"github.com/refresher/refresher/policy"
)

// Schema describes the 12 refresh columns once, in the README's order: their
// names, what they mean, their type in each database, the longest text they
// hold and where their value lives in policy.State. Everything else is
// driven by it or checked against it: the MySQL migration
// (migrations/0001_refresh_columns.sql, compared by a test), the drivers'
// bulk writes, `refresher migrate --print`, the README's column table and
// the GORM tags of Refresh (both compared by tests).
//
// Only refresh_rrule has no accessor: it belongs to the application and
// the service never writes it (see StateColumns).
var Schema = []Column{
	{Name: ColRefreshAt, Kind: TimeColumn, Type: timeTypes, Indexed: true, Time: func(s *policy.State) *time.Time { return &s.RefreshAt },
		Meaning: "when the service must act next: start a refresh, or declare the running attempt timed out. NULL: nothing planned (disabled, or the rule has no more occurrences)"},
	{Name: ColAttemptUID, Kind: TextColumn, Type: SQLTypes{MySQL: "CHAR(20)", Postgres: "CHAR(20)", SQLite: "TEXT"}, MaxLen: 20, Text: func(s *policy.State) *string { return &s.AttemptUID },
		Meaning: "id of the running attempt; NULL when none runs"},
	{Name: ColAttemptAt, Kind: TimeColumn, Type: timeTypes, Time: func(s *policy.State) *time.Time { return &s.AttemptAt },
		Meaning: "when the last attempt started"},
	{Name: ColAttemptNo, Kind: IntColumn, Type: SQLTypes{MySQL: "INT", Postgres: "INTEGER", SQLite: "INTEGER"}, Int: func(s *policy.State) *int { return &s.AttemptNo },
		Meaning: "+1 at each start, 0 after a success"},
	{Name: ColTimeoutAt, Kind: TimeColumn, Type: timeTypes, Time: func(s *policy.State) *time.Time { return &s.TimeoutAt },
		Meaning: "when the running attempt times out"},
	{Name: ColDisabledUntil, Kind: TimeColumn, Type: timeTypes, Time: func(s *policy.State) *time.Time { return &s.DisabledAt },
		Meaning: "set: refresh is off since then, until the user updates the row"},
	{Name: ColDisabledReason, Kind: TextColumn, Type: SQLTypes{MySQL: "VARCHAR(1024)", Postgres: "VARCHAR(1024)", SQLite: "TEXT"}, MaxLen: policy.MaxDisabledReasonLen, Text: func(s *policy.State) *string { return &s.DisabledReason },
		Meaning: "why, in words for your UI"},
	{Name: ColRRule, Kind: TextColumn, Type: SQLTypes{MySQL: "TEXT", Postgres: "TEXT", SQLite: "TEXT"},
		Meaning: "this row's own schedule; NULL: the kind's"},
	{Name: ColFailingSince, Kind: TimeColumn, Type: timeTypes, Time: func(s *policy.State) *time.Time { return &s.FailingSince },
		Meaning: "start of the current run of failures"},
	{Name: ColLastSuccessAt, Kind: TimeColumn, Type: timeTypes, Time: func(s *policy.State) *time.Time { return &s.LastSuccessAt },
		Meaning: "end of the last successful refresh"},
	{Name: ColLastError, Kind: TextColumn, Type: SQLTypes{MySQL: "VARCHAR(1024)", Postgres: "VARCHAR(1024)", SQLite: "TEXT"}, MaxLen: policy.MaxLastErrorLen, Text: func(s *policy.State) *string { return &s.LastError },
		Meaning: "last failure's technical reason, for operators"},
	{Name: ColStatus, Kind: TextColumn, Type: SQLTypes{MySQL: "VARCHAR(255)", Postgres: "VARCHAR(255)", SQLite: "TEXT"}, MaxLen: policy.MaxStatusLen, Text: func(s *policy.State) *string { return &s.Status },
		Meaning: "status text of the latest attempt, for your UI: its last progress report while it runs, its final result's after (e.g. `fetched 1234 bytes`); NULL when it gave none"},
}

// timeTypes hold a UTC time to the microsecond: DATETIME(6) has no time
// zone, like PostgreSQL's TIMESTAMP; SQLite stores the text
// "2006-01-02 15:04:05.000000".
var timeTypes = SQLTypes{MySQL: "DATETIME(6)", Postgres: "TIMESTAMP(6)", SQLite: "TEXT"}

// StateColumns are the 11 columns of Schema that hold policy.State, in
// Schema's order: all but refresh_rrule. The service writes these and no
// other column; bit i of a driver's column set can stand for StateColumns[i].
var StateColumns = func() []Column {
	var out []Column
	for _, c := range Schema {
		if c.InState() {
			out = append(out, c)
		}
	}
	return out
}()

// Columns lists the 12 refresh column names in Schema's order.
var Columns = func() []string {
	out := make([]string, len(Schema))
	for i, c := range Schema {
		out[i] = c.Name
	}
	return out
}()

// ColumnKind is what a refresh column holds, and so how it is compared,
// written and read.
type ColumnKind int

const (
	// TimeColumn holds a UTC time to the microsecond; the zero time is NULL.
	TimeColumn ColumnKind = iota
	// TextColumn holds UTF-8 text of at most MaxLen characters; "" is NULL.
	TextColumn
	// IntColumn holds an integer, NOT NULL DEFAULT 0.
	IntColumn
)

// SQLTypes is a column's type in each database refresher supports.
type SQLTypes struct {
	MySQL, Postgres, SQLite string
}

// Column is one refresh column; see Schema.
type Column struct {
	// Name is the column's name, e.g. "refresh_at".
	Name string
	// Kind says which accessor is set and how the value is stored.
	Kind ColumnKind
	// Type is the column's type per database, without NULL or default.
	Type SQLTypes
	// MaxLen is the most characters a TextColumn holds (as MySQL counts
	// VARCHAR: code points); 0 for no limit (TEXT) and other kinds.
	MaxLen int
	// Indexed: the migration adds an index on this column alone.
	Indexed bool
	// Meaning is what the column holds, as the README's table says it.
	Meaning string
	// Time, Text and Int return the field of a policy.State the column
	// stores; only the one of Kind is set, and none for refresh_rrule. They
	// return pointers so that one function reads and writes, and they do
	// not allocate (pass a pointer that already lives on the heap, such as
	// &rows[i].State, in hot loops: calls through a func value escape).
	Time func(*policy.State) *time.Time
	Text func(*policy.State) *string
	Int  func(*policy.State) *int
}

// InState reports whether the column holds a field of policy.State (all
// but refresh_rrule).
func (c *Column) InState() bool { return c.Time != nil || c.Text != nil || c.Int != nil }

// Same reports whether a and b store the same value in the column: times
// are compared to the microsecond they are stored with. The column must be
// in state.
func (c *Column) Same(a, b *policy.State) bool {
	switch c.Kind {
	case TimeColumn:
		// Equal values (the same time copied, the common case) first:
		// SameTime decodes both.
		ta, tb := c.Time(a), c.Time(b)
		return *ta == *tb || SameTime(*ta, *tb)
	case TextColumn:
		return *c.Text(a) == *c.Text(b)
	}
	return *c.Int(a) == *c.Int(b)
}

// IsZero reports whether s holds NULL in the column (the zero time, ""), or
// 0 for an integer column. The column must be in state.
func (c *Column) IsZero(s *policy.State) bool {
	switch c.Kind {
	case TimeColumn:
		return c.Time(s).IsZero()
	case TextColumn:
		return *c.Text(s) == ""
	}
	return *c.Int(s) == 0
}

// Fit returns s as the column stores it: valid UTF-8 (invalid bytes become
// U+FFFD) of at most MaxLen characters, cut by policy.Truncate's rule (the
// last kept character becomes "…"). The policy functions already store
// texts that fit, so this only matters for rows built by other code; it
// does not allocate when s fits.
func (c *Column) Fit(s string) string {
	if c.MaxLen > 0 {
		return policy.Truncate(s, c.MaxLen)
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// SameTime reports whether a and b are stored as the same time: both zero
// (NULL), or equal once truncated to microseconds.
func SameTime(a, b time.Time) bool {
	if a.IsZero() || b.IsZero() {
		return a.IsZero() == b.IsZero()
	}
	// The second and the microsecond within it: what Truncate keeps (a
	// second is a whole number of microseconds), without its division
	// loop; Save compares every column of every row.
	return a.Unix() == b.Unix() && a.Nanosecond()/1000 == b.Nanosecond()/1000
}

// StoredTime is t as a refresh column stores it: UTC, truncated (not
// rounded) to microseconds; the zero time stays zero (NULL).
func StoredTime(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC().Truncate(time.Microsecond)
}
