package models_test

import (
	"database/sql"
	"testing"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/models/storetest"
)

// The assertions are the conformance suite's (see storetest).
var (
	must        = storetest.Must
	eq          = storetest.Eq
	errContains = storetest.ErrContains
	fullState   = storetest.FullState
)

// testDB opens a fresh MySQL database for the test (UTC, parseTime).
func testDB(t testing.TB) *sql.DB {
	t.Helper()
	db, _ := testenv.DB(t)
	return db
}

func exec(t testing.TB, db *sql.DB, query string, args ...any) {
	t.Helper()
	if _, err := db.Exec(query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// base is the instant of fullState.
var base = storetest.Base
