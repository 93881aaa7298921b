package sqlitestore

import (
	"context"
	"testing"
	"time"

	"github.com/refresher/refresher/models"
)

// TestIndexGoneWhileRunning: the claim, NextDue, NextDueMany and
// AlertsByLevel name indexes from the cached schema (INDEXED BY). When
// such an index is dropped and made again under another name, or under
// its own name as a partial index, while the Store runs, the call that
// meets it fails, and the next one works from the schema as it is now
// (before, each kept failing with "no such index" or "no query solution"
// until a restart).
func TestIndexGoneWhileRunning(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := base.Add(time.Hour)
	calls := []struct {
		name string
		call func(s *Store, tbl models.Table) error
	}{
		{"claim", func(s *Store, tbl models.Table) error {
			return s.Tx(ctx, func(tx models.Tx) error {
				_, err := tx.ClaimDue(ctx, tbl, now, models.Cursor{}, 10)
				return err
			})
		}},
		{"NextDue", func(s *Store, tbl models.Table) error {
			_, _, err := s.NextDue(ctx, tbl)
			return err
		}},
		{"NextDueMany", func(s *Store, tbl models.Table) error {
			_, err := s.NextDueMany(ctx, []models.Table{tbl})
			return err
		}},
		{"AlertsByLevel", func(s *Store, tbl models.Table) error {
			_, err := s.AlertsByLevel(ctx, tbl, now)
			return err
		}},
	}
	remakes := []struct {
		name   string
		remake func(index string) string // the DDL after the index is dropped
	}{
		{"renamed", func(n string) string { return "CREATE INDEX " + quoteName(n+"_renamed") + ` ON items ("refresh_at")` }},
		{"made partial", func(n string) string {
			return "CREATE INDEX " + quoteName(n) + ` ON items ("refresh_at") WHERE "refresh_attempt_uid" IS NULL`
		}},
	}
	for _, c := range calls {
		for _, r := range remakes {
			t.Run(c.name+"/"+r.name, func(t *testing.T) {
				t.Parallel()
				s := openMemory(t)
				tbl := itemsTable(t, s, "TEXT")
				insertItem(t, s, "a", base)
				must(t, c.call(s, tbl)) // compiles and caches the schema
				var names []string
				rows, err := s.DB().QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'items' AND name LIKE 'idx_refresh%'`)
				must(t, err)
				for rows.Next() {
					var n string
					must(t, rows.Scan(&n))
					names = append(names, n)
				}
				must(t, rows.Err())
				rows.Close()
				if len(names) == 0 {
					t.Fatal("the migrated table has no idx_refresh indexes")
				}
				for _, n := range names {
					exec(t, s, "DROP INDEX "+quoteName(n))
					exec(t, s, r.remake(n))
				}
				_ = c.call(s, tbl) // may fail: it met the gone index
				if err := c.call(s, tbl); err != nil {
					t.Fatalf("the call after the one that met the gone indexes: %v", err)
				}
			})
		}
	}
}
