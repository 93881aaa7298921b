package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/refresher/refresher/models"
)

// TestTxWaitsForTheStoresWriterInProcess: while one of the Store's
// transactions runs, another waits in the process, holding no connection,
// and starts once the first ends, not when SQLite's busy handler next
// wakes up; a canceled wait returns the context's error.
func TestTxWaitsForTheStoresWriterInProcess(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := harnesses[0].open(t)
	exec(t, s, "CREATE TABLE x (a INTEGER)")
	inFirst, endFirst := make(chan struct{}), make(chan struct{})
	firstDone := make(chan error, 1)
	go func() {
		firstDone <- s.Tx(ctx, func(tx models.Tx) error {
			close(inFirst)
			<-endFirst
			_, err := tx.(*Tx).tx.Exec("INSERT INTO x VALUES (1)")
			return err
		})
	}()
	<-inFirst

	began := make(chan time.Time, 1)
	secondDone := make(chan error, 1)
	go func() {
		secondDone <- s.Tx(ctx, func(tx models.Tx) error {
			began <- time.Now()
			_, err := tx.(*Tx).tx.Exec("INSERT INTO x VALUES (2)")
			return err
		})
	}()
	// The second waits without taking a connection: it would hold one in
	// BEGIN IMMEDIATE if it waited on SQLite's lock.
	for deadline := time.Now().Add(100 * time.Millisecond); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if n := s.DB().Stats().InUse; n != 1 {
			t.Fatalf("%d connections in use while the first transaction runs, want 1: the second waits on SQLite's lock", n)
		}
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	err := s.Tx(canceled, func(models.Tx) error { t.Error("ran with a canceled context"); return nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a canceled wait: got %v, want context.Canceled", err)
	}

	close(endFirst)
	must(t, <-firstDone)
	ended := time.Now()
	must(t, <-secondDone)
	if wait := (<-began).Sub(ended); wait > time.Second {
		t.Fatalf("the second transaction began %v after the first ended", wait)
	}
	var n int
	must(t, s.DB().QueryRow("SELECT COUNT(*) FROM x").Scan(&n))
	eq(t, n, 2, "rows written by the two transactions")
}

// BenchmarkTxHandover: a transaction begun while another holds SQLite's
// write lock, through Store.Tx (handed over in the process) and through
// the database alone (BEGIN IMMEDIATE and SQLite's busy handler, as
// Store.Tx was before writeLock). It reports how long after the first's
// commit the second began, on average.
//
//	go test ./models/sqlitestore -run '^$' -bench TxHandover -benchtime 40x
func BenchmarkTxHandover(b *testing.B) {
	ctx := context.Background()
	s := harnesses[0].open(b)
	exec(b, s, "CREATE TABLE x (a INTEGER)")
	for _, how := range []string{"store", "sqlite-busy"} {
		b.Run(how, func(b *testing.B) {
			begin := func(fn func(models.Tx) error) error {
				if how == "store" {
					return s.Tx(ctx, fn)
				}
				return models.InSQLTx(ctx, s.DB(), nil, func(tx *sql.Tx) error { return fn(&Tx{s: s, tx: tx}) })
			}
			var late time.Duration
			for i := 0; b.Loop(); i++ {
				hold := time.Duration(2+i%10) * time.Millisecond
				inFirst, committed := make(chan struct{}), make(chan time.Time, 1)
				go func() {
					must(b, begin(func(models.Tx) error { close(inFirst); time.Sleep(hold); return nil }))
					committed <- time.Now()
				}()
				<-inFirst
				var began time.Time
				must(b, begin(func(models.Tx) error { began = time.Now(); return nil }))
				late += began.Sub(<-committed)
			}
			b.ReportMetric(float64(late.Microseconds())/float64(b.N), "µs-after-commit")
		})
	}
}
