package sqlitestore

import (
	"context"
	"github.com/refresher/refresher/models/storetest"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/refresher/refresher/models"
)

// The tests below take a harness: a fresh Store and a way to run raw SQL
// on it, so that they can move to a shared conformance suite. Each runs on
// a database file and in memory.

type harness struct {
	name string
	open func(t testing.TB) *Store
}

var harnesses = []harness{
	{"file", func(t testing.TB) *Store {
		s, err := Open(context.Background(), filepath.Join(t.TempDir(), "app.db"))
		must(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}},
	{"memory", openMemory},
}

// openMemory opens an in-memory Store, closed when t ends.
func openMemory(t testing.TB) *Store {
	s, err := Open(context.Background(), Memory)
	must(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// each runs f once per harness, in parallel subtests.
func each(t *testing.T, f func(t *testing.T, h harness)) {
	t.Parallel()
	for _, h := range harnesses {
		t.Run(h.name, func(t *testing.T) {
			t.Parallel()
			f(t, h)
		})
	}
}

func exec(t testing.TB, s *Store, query string, args ...any) {
	t.Helper()
	if _, err := s.DB().Exec(query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// base is a fixed instant with microseconds, for tests that control time.
var base = storetest.Base

// itemsTable creates table "items" with a key column of keyType plus some
// payload columns, migrates it, and returns its models.Table.
func itemsTable(t testing.TB, s *Store, keyType string) models.Table {
	t.Helper()
	exec(t, s, "CREATE TABLE items (id INTEGER PRIMARY KEY, k "+keyType+" NOT NULL UNIQUE, "+
		"input_url VARCHAR(255) NULL, size INT NULL, price DECIMAL(10,2) NULL, ratio DOUBLE NULL, "+
		"created DATETIME(6) NULL, day DATE NULL, raw BLOB NULL)")
	_, err := s.Migrate(context.Background(), []string{"items"}, io.Discard, false)
	must(t, err)
	return models.Table{Name: "items", Key: "k", Payload: []string{"input_url", "size", "price", "ratio", "created", "day", "raw"}}
}

// fullState sets every column, with microseconds.

func insertItem(t testing.TB, s *Store, key any, refreshAt time.Time) {
	t.Helper()
	exec(t, s, "INSERT INTO items (k, refresh_at) VALUES (?, ?)", key, dbTime(refreshAt))
}

// insertItems inserts rows with keys 1..n and refresh_at = base.
func insertItems(t testing.TB, s *Store, n int) {
	t.Helper()
	exec(t, s, "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM c WHERE i < ?) INSERT INTO items (k, refresh_at) SELECT i, ? FROM c", n, dbTime(base))
}

// The assertions are the conformance suite's (see storetest).
var (
	must        = storetest.Must
	eq          = storetest.Eq
	errContains = storetest.ErrContains
	keysOf      = storetest.KeysOf
	fullState   = storetest.FullState
	lockAll     = storetest.Lock
	claim       = storetest.Claim
)
