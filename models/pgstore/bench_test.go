package pgstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/models/storetest"
	"github.com/refresher/refresher/policy"
)

// benchTable creates and migrates table items with n rows, keys 1..n, all
// due at base.
func benchTable(b *testing.B, s *Store, keyType string, n int) models.Table {
	b.Helper()
	exec(b, s, "CREATE TABLE items (id bigserial PRIMARY KEY, k "+keyType+" NOT NULL UNIQUE, input_url varchar(255), size integer)")
	_, err := s.Migrate(context.Background(), []string{"items"}, nil, false)
	must(b, err)
	exec(b, s, "INSERT INTO items (k, refresh_at, input_url, size) SELECT g::text::"+keyType+", $1, 'https://example.com/' || g, g FROM generate_series(1, $2::int) g", base, n)
	exec(b, s, "ANALYZE items")
	return models.Table{Name: "items", Key: "k", Payload: []string{"input_url", "size"}}
}

var base = time.Date(2026, 3, 4, 5, 6, 7, 123456000, time.UTC)

func benchState(i, it int) policy.State {
	at := base.Add(time.Duration(i) * time.Second)
	return policy.State{
		RefreshAt: at, AttemptUID: fmt.Sprintf("d1v5bqh6n88c%08d", i), AttemptAt: at, AttemptNo: it,
		TimeoutAt: at.Add(time.Hour), FailingSince: at, LastSuccessAt: at,
		LastError: "HTTP 500 after 3 retries", Status: fmt.Sprintf("step %d", i),
	}
}

// BenchmarkSave writes the refresh state of 1000 rows per iteration, in
// one statement and transaction: "full" rows built by hand (every column,
// by key; pgx's native pool, and the same statement through database/sql
// over pgx/stdlib for comparison), and "start" rows as ClaimDue returned
// them with an attempt started (5 columns change, 4 of them the same in
// every row).
//
//	go test ./models/pgstore -run '^$' -bench BenchmarkSave -benchtime 30x
func BenchmarkSave(b *testing.B) {
	const n = 1000
	for _, keyType := range []string{"bigint", "varchar(20)"} {
		b.Run("full/pgxpool/"+keyType, func(b *testing.B) {
			ctx := context.Background()
			s := testStore(b)
			tbl := benchTable(b, s, keyType, n)
			rows := make([]models.Row, n)
			for i := range rows {
				rows[i] = models.Row{Key: fmt.Sprint(i + 1)}
			}
			for it := 0; b.Loop(); it++ {
				for i := range rows {
					rows[i].State = benchState(i, it)
				}
				must(b, s.Tx(ctx, func(tx models.Tx) error { return tx.Save(ctx, tbl, rows) }))
			}
		})
		b.Run("full/stdlib/"+keyType, func(b *testing.B) {
			ctx := context.Background()
			s := testStore(b)
			tbl := benchTable(b, s, keyType, n)
			db := stdlib.OpenDBFromPool(s.Pool())
			defer db.Close()
			q, err := s.compile(ctx, tbl)
			must(b, err)
			rows := make([]models.Row, n)
			for i := range rows {
				rows[i] = models.Row{Key: fmt.Sprint(i + 1)}
			}
			for it := 0; b.Loop(); it++ {
				for i := range rows {
					rows[i].State = benchState(i, it)
				}
				g := groupByID(q, rows, nil, false)[0]
				query, args := unnestUpdate(q, g, nil)
				tx, err := db.BeginTx(ctx, nil)
				must(b, err)
				res, err := tx.ExecContext(ctx, query, args...)
				must(b, err)
				if m, _ := res.RowsAffected(); m != n {
					b.Fatalf("updated %d rows", m)
				}
				must(b, tx.Commit())
			}
		})
	}
	b.Run("start/pgxpool/bigint", func(b *testing.B) {
		ctx := context.Background()
		s := testStore(b)
		tbl := benchTable(b, s, "bigint", n)
		var claimed []models.Row
		must(b, s.Tx(ctx, func(tx models.Tx) (err error) {
			claimed, err = tx.ClaimDue(ctx, tbl, base, models.Cursor{}, n)
			return err
		}))
		rows := make([]models.Row, n)
		for it := 0; b.Loop(); it++ {
			copy(rows, claimed)
			now := base.Add(time.Duration(it+1) * time.Second)
			for i := range rows {
				st := &rows[i].State
				st.AttemptUID, st.AttemptAt, st.AttemptNo, st.TimeoutAt = fmt.Sprintf("d1v5bqh6n88c%08d", i), now, it+1, now.Add(time.Hour)
				st.RefreshAt = now.Add(time.Hour)
			}
			must(b, s.Tx(ctx, func(tx models.Tx) error { return tx.Save(ctx, tbl, rows) }))
		}
	})
}

// BenchmarkClaim claims 1000 of 20000 due rows (with their payload) per
// iteration and rolls back, so the same rows stay due.
//
//	go test ./models/pgstore -run '^$' -bench BenchmarkClaim -benchtime 30x
func BenchmarkClaim(b *testing.B) {
	const n, limit = 20000, 1000
	ctx := context.Background()
	s := testStore(b)
	tbl := benchTable(b, s, "bigint", n)
	rollback := fmt.Errorf("roll back")
	for b.Loop() {
		err := s.Tx(ctx, func(tx models.Tx) error {
			rows, err := tx.ClaimDue(ctx, tbl, base, models.Cursor{}, limit)
			if err != nil {
				return err
			}
			if len(rows) != limit {
				return fmt.Errorf("claimed %d rows", len(rows))
			}
			return rollback
		})
		if err != rollback {
			b.Fatal(err)
		}
	}
}

// BenchmarkApplySuccesses compares a poller's two ways of applying 1000
// successes (storetest.BenchApplySuccesses).
func BenchmarkApplySuccesses(b *testing.B) {
	const n = 1000
	s := testStore(b)
	tbl := benchTable(b, s, "bigint", n)
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprint(i + 1)
	}
	storetest.BenchApplySuccesses(b, s, tbl, keys)
}
