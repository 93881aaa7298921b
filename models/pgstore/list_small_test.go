package pgstore

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/models"
)

// recorder is a pgx tracer that keeps every query a pool sends.
type recorder struct {
	mu      sync.Mutex
	queries []pgx.TraceQueryStartData
}

func (r *recorder) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queries = append(r.queries, d)
	return ctx
}

func (r *recorder) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// rowsRead sums, over a plan's nodes (EXPLAIN ANALYZE, FORMAT JSON), the
// rows each scan returned and those its filter removed.
func rowsRead(node map[string]any) float64 {
	n := 0.0
	if typ, _ := node["Node Type"].(string); typ == "Index Scan" || typ == "Index Only Scan" || typ == "Seq Scan" || typ == "Bitmap Heap Scan" {
		rows, _ := node["Actual Rows"].(float64)
		loops, _ := node["Actual Loops"].(float64)
		removed, _ := node["Rows Removed by Filter"].(float64)
		n += rows*loops + removed
	}
	plans, _ := node["Plans"].([]any)
	for _, p := range plans {
		if m, ok := p.(map[string]any); ok {
			n += rowsRead(m)
		}
	}
	return n
}

// The due and late lists of a state with few rows read those rows, not
// the table, also when the table's statistics say that a third of it is
// due: the refresh cycle makes them stale within seconds, and with them
// PostgreSQL walks the key's index and filters, which on a state of no or
// few rows reads every row (seconds on 10M rows).
func TestListSmallStateReadsLittle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testenv.PostgresURL(t)
	s, err := Open(ctx, url, 2)
	must(t, err)
	defer s.Close()
	exec(t, s, `CREATE TABLE walk (k bigint PRIMARY KEY) WITH (autovacuum_enabled = false)`)
	_, err = s.Migrate(ctx, []string{"walk"}, io.Discard, false)
	must(t, err)
	base := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	exec(t, s, `INSERT INTO walk (k, refresh_at) SELECT g, CASE WHEN g % 3 = 0 THEN $1::timestamptz - interval '1 hour' ELSE $1::timestamptz + interval '1 day' END
		FROM generate_series(1, 20000) g`, base)
	exec(t, s, `VACUUM ANALYZE walk`)
	// The cycle refreshes them all but the last three; the statistics
	// still say a third of the table is due and late.
	exec(t, s, `UPDATE walk SET refresh_at = CASE WHEN k > 19997 THEN $1::timestamptz - interval '1 hour' ELSE $1::timestamptz + interval '1 day' END
		WHERE k % 3 = 0 OR k > 19997`, base)

	cfg, err := pgxpool.ParseConfig(url)
	must(t, err)
	cfg.ConnConfig.RuntimeParams["timezone"] = "UTC"
	rec := &recorder{}
	cfg.ConnConfig.Tracer = rec
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	must(t, err)
	defer pool.Close()
	st := New(pool)
	tbl := models.Table{Name: "walk", Key: "k"}

	for _, state := range []models.RowState{models.StateLate, models.StateDue} {
		rec.mu.Lock()
		rec.queries = nil
		rec.mu.Unlock()
		page, err := st.List(ctx, tbl, models.ListQuery{State: state, Now: base, LateAfter: time.Minute, Limit: 2})
		must(t, err)
		var keys []string
		for _, r := range page.Rows {
			keys = append(keys, r.Key)
		}
		eq(t, [2]any{keys, page.Next}, [2]any{[]string{"19998", "19999"}, "19999"}, string(state)+": first page")
		page, err = st.List(ctx, tbl, models.ListQuery{State: state, Now: base, LateAfter: time.Minute, Limit: 2, After: "19999"})
		must(t, err)
		eq(t, [3]any{len(page.Rows), page.Rows[0].Key, page.Next}, [3]any{1, "20000", ""}, string(state)+": second page")

		rec.mu.Lock()
		queries := rec.queries
		rec.mu.Unlock()
		read := 0.0
		for _, q := range queries {
			if !strings.Contains(q.SQL, `FROM "walk"`) {
				continue // the catalog's, read once
			}
			var plan []map[string]any
			must(t, pool.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+q.SQL, q.Args...).Scan(&plan))
			read += rowsRead(plan[0]["Plan"].(map[string]any))
		}
		if read > 100 {
			b, _ := json.Marshal(queries)
			t.Fatalf("%s: two pages of a state of 3 rows read %.0f rows of 20000: %s", state, read, b)
		}
	}
}
