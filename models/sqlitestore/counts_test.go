package sqlitestore

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/refresher/refresher/models"
)

// TestCountsReadsIndexes: on a migrated table, whatever its statistics,
// Counts reads indexes only, never the table's rows (a full scan of a
// 100,000-row table cost the service's process about 0.1 s per count).
func TestCountsReadsIndexes(t *testing.T) {
	t.Parallel()
	for _, tc := range planTables {
		for _, stats := range []string{statsNone, statsFresh, statsStale, statsFailing} {
			t.Run(tc.name+"/"+stats, func(t *testing.T) {
				t.Parallel()
				s, q := planStore(t, tc, stats)
				p := explain(t, s, countsQuery(q), dbTime(base), dbTime(base))
				for _, st := range p {
					if strings.HasPrefix(st.detail, "SCAN plan") && !strings.Contains(st.detail, "COVERING INDEX") ||
						strings.HasPrefix(st.detail, "SEARCH plan") && !strings.Contains(st.detail, "COVERING INDEX") {
						t.Errorf("plan %s reads the table's rows", p)
					}
				}
			})
		}
	}
}

// TestCountsIndexedAsScan: the indexed counts equal those of one scan of
// the table (the query of a table without the indexes), on rows in every
// state, times written with and without the offset, and NULLs.
func TestCountsIndexedAsScan(t *testing.T) {
	each(t, func(t *testing.T, h harness) {
		ctx := context.Background()
		s := h.open(t)
		tbl := itemsTable(t, s, "TEXT")
		now := base
		at := func(d time.Duration) string { return dbTime(now.Add(d)).(string) }
		bare := func(d time.Duration) string { return strings.TrimSuffix(at(d), "+00:00") }
		for i, r := range []struct {
			refreshAt, uid, disabled, failing any
			no                                any
		}{
			{at(-30 * time.Minute), nil, nil, nil, 0},
			{bare(-2 * time.Hour), nil, nil, nil, 0},
			{at(-time.Hour), "u1", nil, at(-time.Hour), 2},
			{bare(0), nil, nil, at(-time.Minute), 1},
			{at(time.Second), "u2", nil, nil, 7},
			{nil, nil, at(0), at(-time.Hour), 3},
			{nil, nil, at(0), nil, 0},
			{at(-time.Hour), nil, at(0), nil, 0},
			{nil, nil, nil, nil, 0},
		} {
			exec(t, s, "INSERT INTO items (k, refresh_at, refresh_attempt_uid, refresh_disabled_until_update, refresh_failing_since, refresh_attempt_no) VALUES (?, ?, ?, ?, ?, ?)",
				fmt.Sprint(i), r.refreshAt, r.uid, r.disabled, r.failing, r.no)
		}
		q, err := s.compile(ctx, s.DB(), tbl)
		must(t, err)
		scan := q
		scan.meta.attemptUIDIndex = ""
		if countsQuery(scan) == countsQuery(q) {
			t.Fatal("the migrated table's counts are the scan's")
		}
		for _, late := range []time.Duration{0, time.Hour, 3 * time.Hour} {
			read := func(q compiled) []any {
				out := make([]any, 8)
				dest := make([]any, 8)
				for i := range out {
					dest[i] = &out[i]
				}
				must(t, s.DB().QueryRowContext(ctx, countsQuery(q), dbTime(now), dbTime(now.Add(-late))).Scan(dest...))
				return out
			}
			eq(t, fmt.Sprint(read(q)), fmt.Sprint(read(scan)), fmt.Sprintf("late after %s", late))
		}
		c, err := s.Counts(ctx, tbl, now, time.Hour)
		must(t, err)
		eq(t, c, models.Counts{Total: 9, Due: 5, Late: 3, Running: 2, Failing: 2, Disabled: 3, OldestDue: now.Add(-2 * time.Hour), MaxAttemptNo: 7})
	})
}

// BenchmarkCounts counts a table shaped like the bench's (100,000 rows,
// half of them running, the other half due), as the operator's gauges
// and dashboard do beside the service.
func BenchmarkCounts(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "app.db"))
	must(b, err)
	defer s.Close()
	exec(b, s, "CREATE TABLE bm (id INTEGER NOT NULL PRIMARY KEY, input_url VARCHAR(255) NOT NULL, name VARCHAR(64) NULL, updated_at DATETIME NULL)")
	_, err = s.Migrate(ctx, []string{"bm"}, io.Discard, false)
	must(b, err)
	exec(b, s, "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM c WHERE i < 100000) "+
		"INSERT INTO bm (id, input_url, name, refresh_at) SELECT i, 'https://example.com/exports/' || i || '.csv', 'model ' || i, ? FROM c", dbTime(base))
	exec(b, s, "UPDATE bm SET refresh_attempt_uid = 'd1v5bqh6n88c7389a' || id, refresh_attempt_no = 1, refresh_attempt_at = ?, refresh_timeout_at = ?, refresh_at = ? WHERE id <= 50000",
		dbTime(base), dbTime(base.Add(time.Hour)), dbTime(base.Add(time.Hour)))
	exec(b, s, "ANALYZE")
	tbl := models.Table{Name: "bm", Key: "id", Payload: []string{"input_url"}}
	for b.Loop() {
		c, err := s.Counts(ctx, tbl, base.Add(time.Minute), time.Minute)
		must(b, err)
		if c.Due != 50000 || c.Running != 50000 {
			b.Fatalf("counts %+v", c)
		}
	}
}
