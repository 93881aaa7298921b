package mysqlstore

import (
	"context"
	"database/sql"
	"github.com/refresher/refresher/models/storetest"
	"testing"

	"github.com/refresher/refresher/internal/testenv"
)

// testDB opens a fresh database for the test through Open.
func testDB(t testing.TB) *sql.DB {
	t.Helper()
	db, err := Open(context.Background(), testenv.MySQLDSN(t))
	must(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func exec(t testing.TB, db *sql.DB, query string, args ...any) {
	t.Helper()
	if _, err := db.Exec(query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// base is a fixed instant with microseconds, for tests that control time.
var base = storetest.Base

// The assertions are the conformance suite's (see storetest).
var (
	must        = storetest.Must
	eq          = storetest.Eq
	errContains = storetest.ErrContains
	keysOf      = storetest.KeysOf
	fullState   = storetest.FullState
	lockAll     = storetest.Lock
)
