package sqlitestore

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/refresher/refresher/models/storetest"
)

// conformance runs the conformance suite on a fresh database file per test.
var conformance = storetest.Harness{
	New: func(t *testing.T) storetest.Env {
		s, err := Open(context.Background(), filepath.Join(t.TempDir(), "app.db"))
		must(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return storetest.Env{
			Store: s,
			Exec:  func(t *testing.T, sql string) { exec(t, s, sql) },
			CreateItemsTable: func(t *testing.T, name string, key storetest.KeyType) {
				typ := "VARCHAR(64)"
				if key == storetest.KeyInt {
					typ = "INTEGER"
				}
				exec(t, s, "CREATE TABLE "+name+" (id INTEGER PRIMARY KEY AUTOINCREMENT, k "+typ+" NULL UNIQUE, input_url VARCHAR(255) NULL, size INTEGER NULL)")
			},
		}
	},
	Skip: map[string]string{
		// One writer at a time: Tx is BEGIN IMMEDIATE, so a second
		// transaction waits for the first to end instead of claiming other
		// rows beside it, and the test's two transactions, each holding its
		// rows until the other has claimed too, would wait forever. SKIP
		// LOCKED has nothing to skip on one instance with one writer;
		// ConcurrentClaimersNeverShareARow checks the guarantee that
		// matters (no row claimed twice).
		"ClaimDueSkipsLockedRows": "SQLite has one writer: concurrent claims are serialized, not skipped past each other",
	},
}

func TestConformance(t *testing.T) { storetest.Run(t, conformance) }
