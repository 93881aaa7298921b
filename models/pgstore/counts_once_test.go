package pgstore

import (
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/refresher/refresher/models"
)

// TestCountsReadABacklogOnce: on a table whose rows are all due (and late)
// and were just updated, so that an index-only count visits the table for
// every entry, Counts reads the rows once for the total, the due and the
// late counts, not once for the total and again for each state on
// refresh_at; the counts are the rows'.
func TestCountsReadABacklogOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := testStore(t)
	const rows = 5000
	exec(t, s, `CREATE TABLE backlog (k bigint PRIMARY KEY)`)
	_, err := s.Migrate(ctx, []string{"backlog"}, io.Discard, false)
	must(t, err)
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	exec(t, s, `INSERT INTO backlog (k, refresh_at) SELECT g, $1::timestamptz FROM generate_series(1, $2::int) g`, now.Add(-time.Hour), rows)
	exec(t, s, `VACUUM ANALYZE backlog`)
	exec(t, s, `UPDATE backlog SET refresh_at = refresh_at + interval '1 second'`)

	tbl := models.Table{Name: "backlog", Key: "k"}
	c, err := s.Counts(ctx, tbl, now, time.Minute)
	must(t, err)
	eq(t, [3]int64{c.Total, c.Due, c.Late}, [3]int64{rows, rows, rows}, "total, due, late")

	q, err := s.compile(ctx, tbl)
	must(t, err)
	var doc []byte
	must(t, pgx.BeginFunc(ctx, s.Pool(), func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL max_parallel_workers_per_gather = 0"); err != nil {
			return err
		}
		return tx.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+countsQuery(q.table, true), now, now.Add(-time.Minute)).Scan(&doc)
	}))
	var plan []map[string]any
	must(t, json.Unmarshal(doc, &plan))
	// Old: the total's pass, then the due and the late rows again.
	if read := rowsRead(plan[0]["Plan"].(map[string]any)); read > 1.5*rows {
		t.Errorf("the counts read %.0f rows of %d, want each once\n%s", read, rows, doc)
	}
}
