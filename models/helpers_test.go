package models_test

import (
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/models/storetest"
	"github.com/refresher/refresher/policy"
)

// The assertions are the conformance suite's (see storetest).
var (
	must        = storetest.Must
	eq          = storetest.Eq
	errContains = storetest.ErrContains
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

// base is a fixed instant with microseconds, for tests that control time.
var base = time.Date(2026, 3, 4, 5, 6, 7, 123456000, time.UTC)

// fullState sets every column, with microseconds.
func fullState(i int) policy.State {
	at := base.Add(time.Duration(i) * time.Minute)
	return policy.State{
		RefreshAt:      at,
		AttemptUID:     fmt.Sprintf("d1v5bqh6n88c7389%04d", i),
		AttemptAt:      at.Add(-time.Hour + time.Microsecond),
		AttemptNo:      i + 3,
		TimeoutAt:      at.Add(2 * time.Hour),
		DisabledAt:     at.Add(3 * time.Microsecond),
		DisabledReason: "Provided URL is invalid: https://example.com/ünï",
		FailingSince:   at.Add(-48 * time.Hour),
		LastSuccessAt:  at.Add(-72*time.Hour + 999999*time.Microsecond),
		LastError:      "HTTP 500 'quoted' \\ back",
		Status:         "importing 5/10",
	}
}
