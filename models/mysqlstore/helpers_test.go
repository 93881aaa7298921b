package mysqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/refresher/refresher/internal/testenv"
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
var base = time.Date(2026, 3, 4, 5, 6, 7, 123456000, time.UTC)
