package sqlitestore

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/refresher/refresher/models"
)

// scanCounts is what Counts gave before the indexed counts: one scan of
// the table (countsByScan, the query of a table without the indexes).
func scanCounts(t *testing.T, s *Store, table string, now time.Time, lateAfter time.Duration) models.Counts {
	t.Helper()
	var c models.Counts
	var due, late, running, failing, disabled, maxNo *int64
	var oldest any
	must(t, s.DB().QueryRow(countsByScan+quoteName(table), dbTime(now), dbTime(now.Add(-lateAfter))).
		Scan(&c.Total, &due, &late, &running, &failing, &disabled, &oldest, &maxNo))
	for _, p := range []struct {
		from *int64
		to   *int64
	}{{due, &c.Due}, {late, &c.Late}, {running, &c.Running}, {failing, &c.Failing}, {disabled, &c.Disabled}} {
		if p.from != nil {
			*p.to = *p.from
		}
	}
	if maxNo != nil {
		c.MaxAttemptNo = int(*maxNo)
	}
	var err error
	c.OldestDue, err = mustParseTime(oldest, "oldest")
	must(t, err)
	return c
}

// fillStates inserts rows of table (key column key, keys made by key(i))
// in every state Counts tells apart.
func fillStates(t *testing.T, s *Store, table, key string, keyOf func(i int) any) {
	t.Helper()
	now := base
	at := func(d time.Duration) any { return dbTime(now.Add(d)) }
	for i, r := range []struct{ refreshAt, uid, disabled, failing, no any }{
		{at(-30 * time.Minute), nil, nil, nil, 0},
		{at(-2 * time.Hour), nil, nil, nil, 0},
		{at(-time.Hour), "u1", nil, at(-time.Hour), 2}, // running, due, failing
		{at(0), nil, nil, at(-time.Minute), 1},
		{at(time.Second), "u2", nil, nil, 7}, // running, not due
		{nil, nil, at(0), at(-time.Hour), 3}, // disabled with failing_since
		{nil, nil, at(0), nil, 0},            // disabled without
		{at(-time.Hour), nil, at(0), nil, 0}, // disabled and due
		{nil, nil, nil, nil, 0},              // refresh_at NULL
	} {
		exec(t, s, fmt.Sprintf(`INSERT INTO %s (%s, refresh_at, refresh_attempt_uid, refresh_disabled_until_update, refresh_failing_since, refresh_attempt_no) VALUES (?, ?, ?, ?, ?, ?)`, quoteName(table), quoteName(key)),
			keyOf(i), r.refreshAt, r.uid, r.disabled, r.failing, r.no)
	}
}

// TestCountsReviewIndexShapes (review14): Counts equals the old scan on
// tables whose state indexes are not the migrations' plain ones: created
// by the application before `refresher migrate` (which then skips its
// own, "an index on exactly these columns, whatever its name"), or added
// beside them with a name that sorts first (indexLedBy takes the first by
// name). A partial index holds only some rows: INDEXED BY it either
// cannot answer the state's condition ("no query solution") or must not
// be used.
func TestCountsReviewIndexShapes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, ddl string }{
		{"partial disabled index", `CREATE INDEX a_disabled ON items (refresh_disabled_until_update, refresh_failing_since) WHERE refresh_disabled_until_update IS NOT NULL`},
		{"partial failing index", `CREATE INDEX a_disabled ON items (refresh_disabled_until_update, refresh_failing_since) WHERE refresh_failing_since IS NOT NULL`},
		{"partial running index", `CREATE INDEX a_uid ON items (refresh_attempt_uid) WHERE refresh_attempt_uid IS NOT NULL`},
		{"partial uid index of idle rows", `CREATE INDEX a_uid ON items (refresh_attempt_uid) WHERE refresh_attempt_uid IS NULL`},
		{"partial refresh_at index", `CREATE INDEX a_refresh ON items (refresh_at) WHERE refresh_attempt_uid IS NULL`},
		{"index name to quote", `CREATE INDEX "a""uid] [x" ON items (refresh_attempt_uid)`},
		{"nocase uid index", `CREATE INDEX a_uid ON items (refresh_attempt_uid COLLATE NOCASE)`},
		{"descending disabled index", `CREATE INDEX a_disabled ON items (refresh_disabled_until_update DESC, refresh_failing_since DESC)`},
		{"wider disabled index", `CREATE INDEX a_disabled ON items (refresh_disabled_until_update, refresh_failing_since, k)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := openMemory(t)
			tbl := itemsTable(t, s, "TEXT")
			exec(t, s, tc.ddl)
			fillStates(t, s, "items", "k", func(i int) any { return fmt.Sprint(i) })
			for _, late := range []time.Duration{0, time.Hour} {
				c, err := s.Counts(ctx, tbl, base, late)
				if err != nil {
					t.Fatalf("late after %s: %v (the old scan: %+v)", late, err, scanCounts(t, s, "items", base, late))
				}
				eq(t, c, scanCounts(t, s, "items", base, late), fmt.Sprintf("late after %s", late))
			}
		})
	}
}

// TestCountsReviewKeyShapes (review14): Counts equals the old scan on
// tables of other key shapes: TEXT key WITHOUT ROWID, composite primary
// key, INTEGER PRIMARY KEY.
func TestCountsReviewKeyShapes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, create, key string }{
		{"text key without rowid", `CREATE TABLE kinds (code TEXT NOT NULL PRIMARY KEY, v INT) WITHOUT ROWID`, "code"},
		{"composite key", `CREATE TABLE kinds (a TEXT NOT NULL DEFAULT 'x', code TEXT NOT NULL, PRIMARY KEY (a, code))`, "code"},
		{"integer primary key", `CREATE TABLE kinds (code INTEGER PRIMARY KEY, v INT)`, "code"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := openMemory(t)
			exec(t, s, tc.create)
			_, err := s.Migrate(ctx, []string{"kinds"}, io.Discard, false)
			must(t, err)
			fillStates(t, s, "kinds", tc.key, func(i int) any { return i + 1 })
			q, err := s.compile(ctx, s.DB(), models.Table{Name: "kinds", Key: tc.key})
			must(t, err)
			if q.meta.attemptUIDIndex == "" || q.meta.disabledIndex == "" {
				t.Fatalf("no state indexes: %+v", q.meta)
			}
			for _, late := range []time.Duration{0, time.Hour, 3 * time.Hour} {
				c, err := s.Counts(ctx, models.Table{Name: "kinds", Key: tc.key}, base, late)
				must(t, err)
				eq(t, c, scanCounts(t, s, "kinds", base, late), fmt.Sprintf("late after %s", late))
			}
		})
	}
}

// TestCountsReviewIndexDroppedWhileRunning (review14): an index the
// migrations created for the counts, dropped (or renamed: dropped and
// created again under another name) while the Store runs. Before the
// indexed counts, Counts read no index name and kept counting; the
// claim does not use these two indexes, so the service keeps running
// while the operator's gauges and dashboard fail until a restart.
func TestCountsReviewIndexDroppedWhileRunning(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, ddl string }{
		{"attempt uid index dropped", `DROP INDEX idx_refresh_attempt_uid`},
		{"disabled index renamed", `DROP INDEX idx_refresh_disabled; CREATE INDEX idx_refresh_disabled2 ON items (refresh_disabled_until_update, refresh_failing_since)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := openMemory(t)
			tbl := itemsTable(t, s, "TEXT")
			fillStates(t, s, "items", "k", func(i int) any { return fmt.Sprint(i) })
			_, err := s.Counts(ctx, tbl, base, time.Hour)
			must(t, err)
			exec(t, s, tc.ddl)
			c, err := s.Counts(ctx, tbl, base, time.Hour)
			if err != nil {
				t.Fatalf("after %s: %v", tc.ddl, err)
			}
			eq(t, c, scanCounts(t, s, "items", base, time.Hour))
		})
	}
}

// TestCountsReviewOlderSchema (review14): a table migrated up to 0002
// only (no state indexes) counts by the scan, and still does after
// `refresher migrate` adds 0003 while the Store runs (the metadata is
// cached once migrated): the figures stay right, only slower.
func TestCountsReviewOlderSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openMemory(t)
	tbl := itemsTable(t, s, "TEXT")
	for _, idx := range []string{"idx_refresh_attempt_uid", "idx_refresh_disabled", "idx_refresh_failing_since", "idx_refresh_attempt_no"} {
		exec(t, s, "DROP INDEX "+idx)
	}
	exec(t, s, `DELETE FROM "`+MigrationsTable+`" WHERE version >= 3`)
	fillStates(t, s, "items", "k", func(i int) any { return fmt.Sprint(i) })
	c, err := s.Counts(ctx, tbl, base, time.Hour)
	must(t, err)
	eq(t, c, scanCounts(t, s, "items", base, time.Hour), "0002 only")
	_, err = s.Migrate(ctx, []string{"items"}, io.Discard, false)
	must(t, err)
	c, err = s.Counts(ctx, tbl, base, time.Hour)
	must(t, err)
	eq(t, c, scanCounts(t, s, "items", base, time.Hour), "0003 added while running")
}

// TestClaimReviewPartialRefreshIndex (review14): the claim and NextDue on
// a table with a partial index led by refresh_at that sorts before the
// migration's: they named it with INDEXED BY and SQLite refused them ("no
// query solution"); since indexLedBy skips partial indexes they use the
// migration's.
func TestClaimReviewPartialRefreshIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openMemory(t)
	tbl := itemsTable(t, s, "INTEGER")
	exec(t, s, `CREATE INDEX a_refresh ON items (refresh_at) WHERE refresh_attempt_uid IS NULL`)
	for k := 1; k <= 3; k++ {
		insertItem(t, s, k, base.Add(-time.Duration(k)*time.Minute))
	}
	next, ok, err := s.NextDue(ctx, tbl)
	must(t, err)
	eq(t, ok, true)
	eq(t, next, base.Add(-3*time.Minute))
	eq(t, keysOf(claim(t, s, tbl, base, time.Time{}, 10)), []string{"3", "2", "1"})
}
