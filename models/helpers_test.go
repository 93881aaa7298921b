package models

import (
	"database/sql"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/policy"
)

// Small assertion helpers: testify v1.12 needs go.yaml.in/yaml/v3, which
// go.sum does not list yet.

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

func eq(t testing.TB, got, want any, what ...any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s\n got: %#v\nwant: %#v", fmt.Sprint(what...), got, want)
	}
}

func errContains(t testing.TB, err error, subs ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one containing %q", subs)
	}
	for _, s := range subs {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("error %q does not contain %q", err, s)
		}
	}
}

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
