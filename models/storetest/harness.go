// Package storetest is the conformance suite of models.Store drivers, in the
// manner of River's riverdrivertest: one set of tests, written against the
// interfaces only, that every driver runs from its own tests with a Harness
// that knows its dialect:
//
//	func TestConformance(t *testing.T) { storetest.Run(t, harness) }
//
// The suite creates its tables through the Harness, adds the refresh
// columns with the driver's own Migrate, and checks everything else
// through models.Store (its Inspector part included) and models.Tx.
// Statements it runs through Env.Exec are written to be
// valid in MySQL, MariaDB, PostgreSQL and SQLite alike: unquoted lower-case
// names, no parameters, string literals without backslashes, times as
// 'YYYY-MM-DD HH:MM:SS.ffffff' in UTC.
package storetest

import (
	"testing"

	"github.com/refresher/refresher/models"
)

// Harness adapts the suite to one driver.
type Harness struct {
	// New returns an Env on a fresh, empty database of the driver's server,
	// cleaned up when the test ends. It is called once per test, from
	// parallel tests.
	New func(t *testing.T) Env
	// ZeroDate, when set, inserts into table a row with key key whose
	// refresh_at is a zero date ('0000-00-00', MySQL only); the tests of
	// zero dates are skipped when nil.
	ZeroDate func(t *testing.T, env Env, table, key string)
	// Skip names tests of the suite (as Run names them) that the driver is
	// known to fail, with the reason, which the test's skip message shows.
	// Keep it empty: it is for a behaviour being fixed elsewhere.
	Skip map[string]string
}

// Env is one test's database.
type Env struct {
	// Store is a store on the database, closed when the test ends.
	Store models.Store
	// Exec runs one statement of the driver's dialect on the database, with
	// the session's time zone UTC, and fails the test on error.
	Exec func(t *testing.T, sql string)
	// CreateItemsTable creates table name with an auto-increment integer
	// primary key "id", a nullable key column "k" of type key with a
	// single-column unique index, and the payload columns "input_url"
	// (varchar(255)) and "size" (integer), in a character set that holds any
	// text (utf8mb4 on MySQL) for every column but an OddKeyType key. It
	// has no refresh columns.
	CreateItemsTable func(t *testing.T, name string, key KeyType)
}

// KeyType is the type of the items table's key column.
type KeyType int

const (
	// KeyString is a varchar(64) key.
	KeyString KeyType = iota
	// KeyInt is an integer key (INT or bigint).
	KeyInt
	// KeyNarrow is a text key in a narrow character set (latin1 on MySQL);
	// drivers whose text holds anything may make it the same as KeyString.
	KeyNarrow
)
