package pgstore

import (
	"context"
	"fmt"
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

// TestKindClaimWalksItsIndex: the claim of the kind's level in a table
// with the priority columns walks the (refresh_priority, refresh_at) index
// in order and stops after its limit, even when the statistics say almost
// nothing is due (a backlog that built up since the last ANALYZE, as in the
// bench's first drain). Otherwise PostgreSQL may walk the refresh_at index
// over every due row, filter on the level and sort them all for the LIMIT:
// in a drain of 100,000 rows, 3 million index entries read instead of
// 0.1 million.
func TestKindClaimWalksItsIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(testenv.PostgresURL(t))
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
	// The statistics were gathered on an earlier backlog; the rows came
	// due again later, and some are running (refresh_at an hour on).
	base := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	exec(t, s, `INSERT INTO items (k, refresh_at) SELECT g, $1::timestamptz + g * interval '10 microseconds' FROM generate_series(1, 50000) g`, base)
	exec(t, s, `VACUUM ANALYZE items`)
	base = base.Add(3 * time.Second)
	exec(t, s, `UPDATE items SET refresh_at = $1::timestamptz + k * interval '10 microseconds'`, base)
	exec(t, s, `UPDATE items SET refresh_at = $1::timestamptz + interval '1 hour' WHERE k <= 2000`, base)
	tbl := models.Table{Name: "items", Key: "k", Priority: 10}
	now := base.Add(5 * time.Second)

	kind := models.Priority{Level: 10, Source: models.PriorityKind}
	for _, from := range []models.Cursor{{}, {Scan: kind, At: base.Add(30 * time.Millisecond)}} {
		rec.mu.Lock()
		rec.seen = nil
		rec.mu.Unlock()
		var plan []string
		must(t, s.Tx(ctx, func(tx models.Tx) error {
			rows, err := tx.ClaimDue(ctx, tbl, now, from, 1000)
			if err != nil {
				return err
			}
			eq(t, len(rows), 1000, "claimed")
			rec.mu.Lock()
			seen := rec.seen
			rec.mu.Unlock()
			for _, st := range seen {
				if !strings.Contains(st.sql, "FOR UPDATE SKIP LOCKED") {
					continue
				}
				// In the claim's transaction, with its settings.
				res, err := tx.(*Tx).tx.Query(ctx, "EXPLAIN "+st.sql, st.args...)
				if err != nil {
					return err
				}
				for res.Next() {
					var line string
					if err := res.Scan(&line); err != nil {
						return err
					}
					plan = append(plan, line)
				}
				if err := res.Err(); err != nil {
					return err
				}
			}
			return nil
		}))
		p := strings.Join(plan, "\n")
		if !strings.Contains(p, "items_refresh_priority_refresh_at_idx") || strings.Contains(p, "Sort") {
			t.Errorf("the kind's claim (cursor %v) does not walk the (refresh_priority, refresh_at) index in order:\n%s", from.At, p)
		}
	}
}

// TestClaimSaveLooksUpItsKeys: the Save of a claim's started attempts,
// in the claim's transaction, finds its rows by index, from the first
// batch on a connection. Planned for each batch's 1000 keys, PostgreSQL
// joined them to the whole table by hash (a sequential scan of it, 150-450
// ms on the bench's 100,000 rows) until it settled on the generic plan
// after five executions. pg_stat_xact_user_tables counts the transaction's
// own scans, and also those of the connection's earlier statements that the
// server has not flushed to its statistics yet (Migrate's index builds, at
// times): the count at the transaction's start is subtracted.
func TestClaimSaveLooksUpItsKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := testStore(t)
	exec(t, s, `CREATE TABLE items (k bigint PRIMARY KEY, input_url text)`)
	_, err := s.Migrate(ctx, []string{"items"}, io.Discard, false)
	must(t, err)
	base := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	exec(t, s, `INSERT INTO items (k, input_url, refresh_at) SELECT g, 'https://example.com/' || g, $1::timestamptz + g * interval '10 microseconds' FROM generate_series(1, 50000) g`, base)
	exec(t, s, `VACUUM ANALYZE items`)
	tbl := models.Table{Name: "items", Key: "k", Payload: []string{"input_url"}, Priority: 10}
	now := base.Add(time.Hour)

	seqScans := func(tx models.Tx) (n int64, err error) {
		err = tx.(*Tx).tx.QueryRow(ctx, `SELECT coalesce(sum(seq_scan), 0) FROM pg_stat_xact_user_tables WHERE relname = 'items'`).Scan(&n)
		return n, err
	}
	for batch := range 2 {
		must(t, s.Tx(ctx, func(tx models.Tx) error {
			before, err := seqScans(tx)
			if err != nil {
				return err
			}
			rows, err := tx.ClaimDue(ctx, tbl, now, models.Cursor{}, 1000)
			if err != nil {
				return err
			}
			eq(t, len(rows), 1000, "claimed")
			for i := range rows {
				rows[i].State.AttemptUID = fmt.Sprintf("u%019d", i)
				rows[i].State.AttemptAt = now
				rows[i].State.AttemptNo = 1
				rows[i].State.TimeoutAt = now.Add(time.Hour)
				rows[i].State.RefreshAt = now.Add(time.Hour)
			}
			if err := tx.Save(ctx, tbl, rows); err != nil {
				return err
			}
			seq, err := seqScans(tx)
			if err != nil {
				return err
			}
			eq(t, seq-before, int64(0), "sequential scans of the table in claim ", batch)
			return nil
		}))
	}
}

// roundTrips counts the statements and pipelines a pool sends.
type roundTrips struct {
	mu               sync.Mutex
	queries, batches int
}

func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queries++
	return ctx
}

func (r *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (r *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.batches++
	return ctx
}

func (r *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (r *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// count returns the round trips since the last call.
func (r *roundTrips) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.queries + r.batches
	r.queries, r.batches = 0, 0
	return n
}

// TestKindClaimInOneRoundTrip: a claim of the kind's level in a table with
// the priority columns sends the first levels' lookup and the kind's scan
// in one round trip (kindAhead), from the start of the index and from a
// cursor; with a more urgent row it claims that row first, as before, and
// leaves nothing locked that it did not return.
func TestKindClaimInOneRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(testenv.PostgresURL(t))
	must(t, err)
	cfg.ConnConfig.RuntimeParams["timezone"] = "UTC"
	rt := &roundTrips{}
	cfg.ConnConfig.Tracer = rt
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	must(t, err)
	s := New(pool)
	t.Cleanup(func() { _ = s.Close() })

	base := twentyDueItems(t, s)
	tbl := models.Table{Name: "items", Key: "k", Payload: []string{"input_url"}, Priority: 10}
	now := base.Add(time.Hour)
	kind := models.Priority{Level: 10, Source: models.PriorityKind}

	claim := func(from models.Cursor, limit int) (keys []string, trips int) {
		t.Helper()
		must(t, s.Tx(ctx, func(tx models.Tx) error {
			rt.count()
			rows, err := tx.ClaimDue(ctx, tbl, now, from, limit)
			trips = rt.count()
			for _, r := range rows {
				keys = append(keys, r.Key+":"+r.Payload.Get("input_url").(string))
			}
			return err
		}))
		return keys, trips
	}
	claim(models.Cursor{}, 1) // reads the table's metadata
	keys, trips := claim(models.Cursor{}, 3)
	eq(t, keys, []string{"1:u1", "2:u2", "3:u3"}, "the kind's claim")
	eq(t, trips, 1, "round trips of the kind's claim")
	keys, trips = claim(models.Cursor{Scan: kind, At: base.Add(5 * time.Second)}, 2)
	eq(t, keys, []string{"5:u5", "6:u6"}, "the kind's claim from a cursor")
	eq(t, trips, 1, "round trips of the kind's claim from a cursor")

	// A row triggered at a level more urgent than the kind's, and one of
	// its own at a less urgent level: the guard lets the kind's scan ahead
	// claim nothing, and the claim scans level by level.
	exec(t, s, `UPDATE items SET refresh_priority_once = 0 WHERE k = 9`)
	exec(t, s, `UPDATE items SET refresh_priority = 20 WHERE k = 1`)
	keys, _ = claim(models.Cursor{}, 4)
	eq(t, keys, []string{"9:u9", "2:u2", "3:u3", "4:u4"}, "the urgent row first, then the kind's")
	// Nothing else stays locked after the commit: another transaction
	// claims the rest (TestKindAheadLocksOnlyWhatItReturns checks the locks
	// while the claim's transaction is open).
	keys, _ = claim(models.Cursor{}, 30)
	eq(t, len(keys), 20, "rows claimed after the claims committed")
	var locked []string
	must(t, s.Tx(ctx, func(tx models.Tx) error {
		rows, err := tx.ClaimDue(ctx, tbl, now, models.Cursor{}, 30)
		for _, r := range rows {
			locked = append(locked, r.Key)
		}
		return err
	}))
	eq(t, len(locked), 20, "every row claimable")
}

// TestKindAheadLocksOnlyWhatItReturns: with a row more urgent than the
// kind's level, the kind's scan sent ahead (kindAhead) is guarded in SQL
// and locks nothing; the claim locks only the rows it returns, seen from
// another connection (SKIP LOCKED) while its transaction is open.
func TestKindAheadLocksOnlyWhatItReturns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := testStore(t)
	base := twentyDueItems(t, s)
	exec(t, s, `UPDATE items SET refresh_priority_once = 0 WHERE k = 9`)
	exec(t, s, `UPDATE items SET refresh_priority = 20 WHERE k = 1`)
	tbl := models.Table{Name: "items", Key: "k", Payload: []string{"input_url"}, Priority: 10}
	must(t, s.Tx(ctx, func(tx models.Tx) error {
		rows, err := tx.ClaimDue(ctx, tbl, base.Add(time.Hour), models.Cursor{}, 4)
		if err != nil {
			return err
		}
		var free int
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT k FROM items FOR UPDATE SKIP LOCKED) x`).Scan(&free); err != nil {
			return err
		}
		eq(t, 20-free, len(rows), "rows locked by the claim, against the rows it returned")
		return nil
	}))
}

// twentyDueItems creates the migrated table items (k bigint, input_url)
// with rows 1..20, row g due at base + g seconds, and returns base.
func twentyDueItems(t *testing.T, s *Store) time.Time {
	t.Helper()
	exec(t, s, `CREATE TABLE items (k bigint PRIMARY KEY, input_url text)`)
	_, err := s.Migrate(context.Background(), []string{"items"}, io.Discard, false)
	must(t, err)
	base := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	exec(t, s, `INSERT INTO items (k, input_url, refresh_at) SELECT g, 'u' || g, $1::timestamptz + g * interval '1 second' FROM generate_series(1, 20) g`, base)
	return base
}
