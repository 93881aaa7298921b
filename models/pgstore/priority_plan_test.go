package pgstore

import (
	"context"
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

// statements records the SQL and arguments of every query of a pool.
type statements struct {
	mu   sync.Mutex
	seen []traced
}

type traced struct {
	sql  string
	args []any
}

func (s *statements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen, traced{d.SQL, d.Args})
	return ctx
}

func (s *statements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// The statements of a batch (a pipeline) are recorded too.
func (s *statements) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (s *statements) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen, traced{d.SQL, d.Args})
}

func (s *statements) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// TestOneShotScansWalkTheirIndex: the claim's scan of a one-shot level
// (refresh_priority_once), the urgent probe, the backlog's count and the
// alerts of such a level read that column's index, never another index
// (refresh_at's, refresh_attempt_no's) filtered on the level. With refresh_at usable
// as an index condition, PostgreSQL walks the refresh_at index whenever it
// prefers a plan without a sort (forced here with enable_sort off; in a
// drain, statistics that say little is due do it), and then reads every
// due row of the backlog to find the triggered one (issue 22: the drain
// with triggers at 0.88x of the plain one on 1,000,000 rows).
func TestOneShotScansWalkTheirIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testenv.PostgresURL(t)
	cfg, err := pgxpool.ParseConfig(url)
	must(t, err)
	cfg.ConnConfig.RuntimeParams["timezone"] = "UTC"
	rec := &statements{}
	cfg.ConnConfig.Tracer = rec
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	must(t, err)
	s := New(pool)
	t.Cleanup(func() { _ = s.Close() })

	exec(t, s, `CREATE TABLE items (k bigint PRIMARY KEY)`)
	_, err = s.Migrate(ctx, []string{"items"}, io.Discard, false)
	must(t, err)
	base := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	exec(t, s, `INSERT INTO items (k, refresh_at) SELECT g, $1::timestamptz + g * interval '1 second' FROM generate_series(1, 2000) g`, base)
	exec(t, s, `UPDATE items SET refresh_priority_once = 0 WHERE k = 1999`)
	exec(t, s, `ANALYZE items`)
	tbl := models.Table{Name: "items", Key: "k", Priority: 10}
	now := base.Add(time.Hour)

	due, err := s.UrgentDue(ctx, tbl, now)
	must(t, err)
	eq(t, due, true, "the triggered row is urgent and due")
	var keys []string
	must(t, s.Tx(ctx, func(tx models.Tx) error {
		rows, err := tx.ClaimDue(ctx, tbl, now, models.Cursor{UrgentOnly: true}, 1000)
		for _, r := range rows {
			keys = append(keys, r.Key)
		}
		return err
	}))
	eq(t, keys, []string{"1999"}, "the urgent claim takes the triggered row")
	exec(t, s, `UPDATE items SET refresh_priority_once = 0, refresh_attempt_no = 3 WHERE k = 1998`)
	_, err = s.Backlog(ctx, tbl, now, nil)
	must(t, err)
	alerts, err := s.AlertsByLevel(ctx, tbl, now)
	must(t, err)
	eq(t, alerts[0].MaxAttemptNo, 3, "the one-shot level's highest attempt")

	conn, err := pgx.Connect(ctx, url)
	must(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "SET enable_sort = off")
	must(t, err)
	rec.mu.Lock()
	seen := rec.seen
	rec.mu.Unlock()
	checked := 0
	for _, st := range seen {
		if !strings.Contains(st.sql, `"refresh_priority_once" = $1`) || strings.HasPrefix(st.sql, "UPDATE") {
			continue
		}
		checked++
		rows, err := conn.Query(ctx, "EXPLAIN "+st.sql, st.args...)
		must(t, err)
		var plan []string
		for rows.Next() {
			var line string
			must(t, rows.Scan(&line))
			plan = append(plan, line)
		}
		must(t, rows.Err())
		if p := strings.Join(plan, "\n"); !strings.Contains(p, "items_refresh_priority_once_idx") {
			t.Errorf("a one-shot scan walks another index than refresh_priority_once's:\n%s\n%s", st.sql, p)
		}
	}
	if checked < 5 {
		t.Fatalf("%d one-shot statements seen, want the probe's, the claim's, the count's and the alerts' two", checked)
	}
}
