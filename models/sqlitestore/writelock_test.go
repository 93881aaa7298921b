package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	execpkg "os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
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

	secondDone := make(chan error, 1)
	go func() {
		secondDone <- s.Tx(ctx, func(tx models.Tx) error {
			_, err := tx.(*Tx).tx.Exec("INSERT INTO x VALUES (2)")
			return err
		})
	}()
	// The second waits without taking a connection: it would hold one in
	// BEGIN IMMEDIATE if it waited on SQLite's lock.
	for i := 0; i < 20; i++ {
		if n := s.DB().Stats().InUse; n != 1 {
			t.Fatalf("%d connections in use while the first transaction runs, want 1: the second waits on SQLite's lock", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	err := s.Tx(canceled, func(models.Tx) error { t.Error("ran with a canceled context"); return nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a canceled wait: got %v, want context.Canceled", err)
	}

	close(endFirst)
	must(t, <-firstDone)
	must(t, <-secondDone)
	var n int
	must(t, s.DB().QueryRow("SELECT COUNT(*) FROM x").Scan(&n))
	eq(t, n, 2, "rows written by the two transactions")
}

// TestLedgerAppendWaitsInProcess: the Store's ledger entries written
// outside a row's transaction (AppendLedger) wait for the Store's running
// transaction in the process, as its other writers do, holding no
// connection: through SQLite's busy handler they would be an outside
// writer, left to the outside writers' turn during a backlog.
func TestLedgerAppendWaitsInProcess(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := harnesses[0].open(t)
	for _, ddl := range (dialect{}).LedgerDDL() {
		exec(t, s, ddl)
	}
	inFirst, endFirst := make(chan struct{}), make(chan struct{})
	firstDone := make(chan error, 1)
	go func() {
		firstDone <- s.Tx(ctx, func(tx models.Tx) error {
			close(inFirst)
			<-endFirst
			return tx.(*Tx).AppendLedger(ctx, []policy.Entry{{At: time.Now(), Kind: "k", Key: "1", Event: policy.EventUndone}})
		})
	}()
	<-inFirst
	appendDone := make(chan error, 1)
	go func() {
		appendDone <- s.AppendLedger(ctx, []policy.Entry{{At: time.Now(), Kind: "k", Key: "2", Event: policy.EventUndone}})
	}()
	for i := 0; i < 20; i++ {
		if n := s.DB().Stats().InUse; n != 1 {
			close(endFirst)
			<-firstDone
			<-appendDone
			t.Fatalf("%d connections in use while the Store's transaction runs, want 1: AppendLedger waits on SQLite's lock", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(endFirst)
	must(t, <-firstDone)
	must(t, <-appendDone)
	var n int
	must(t, s.DB().QueryRow(`SELECT COUNT(*) FROM "`+models.LedgerTable+`"`).Scan(&n))
	eq(t, n, 2, "ledger entries")
}

// fakeClock drives a writeLock's now and sleep.
type fakeClock struct {
	t      time.Time
	slept  []time.Duration
	cancel bool // sleep returns context.Canceled
}

func (c *fakeClock) now() time.Time { return c.t }

func (c *fakeClock) sleep(_ context.Context, d time.Duration) error {
	if c.cancel {
		return context.Canceled
	}
	c.slept = append(c.slept, d)
	c.t = c.t.Add(d)
	return nil
}

// TestWriteLockGivesOutsideWritersATurn: the Store's writers hand the lock
// over at once until a run has lasted TurnRun; the next one then waits
// until the lock has been free for TurnGap, and a new run begins. A lock
// left free that long anyway starts a new run without a wait.
func TestWriteLockGivesOutsideWritersATurn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := &fakeClock{t: base}
	l := newWriteLock()
	l.now, l.sleep = c.now, c.sleep
	// hold takes the lock, holds it for d, and releases it.
	hold := func(d time.Duration) {
		t.Helper()
		release, err := l.acquire(ctx)
		must(t, err)
		c.t = c.t.Add(d)
		release()
	}

	tx := 20 * time.Millisecond
	var held time.Duration
	for ; held < l.run; held += tx {
		hold(tx) // back to back: handed over
	}
	eq(t, len(c.slept), 0, "waits within a run: ", c.slept)
	hold(tx)
	eq(t, c.slept, []time.Duration{l.gap}, "the wait after a run of ", held)

	// The turn started a new run: handed over again until it has lasted TurnRun.
	c.slept = nil
	for held = tx; held < l.run; held += tx { // the hold after the turn was the run's first
		hold(tx)
	}
	eq(t, len(c.slept), 0, "waits within the second run: ", c.slept)
	// Already free for part of the gap: it waits for the rest.
	c.t = c.t.Add(l.gap / 3)
	hold(tx)
	eq(t, c.slept, []time.Duration{l.gap - l.gap/3}, "the wait after a run and a pause of a third of the gap")

	// Free for a whole gap: no wait, and a new run.
	c.slept = nil
	for held = 0; held < l.run-tx; held += tx {
		hold(tx)
	}
	c.t = c.t.Add(l.gap)
	for held = 0; held < l.run; held += tx {
		hold(tx)
	}
	eq(t, len(c.slept), 0, "waits after the lock was free for a gap: ", c.slept)

	// A context canceled during the turn: its error, and the lock is free.
	c.cancel = true
	_, err := l.acquire(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a turn canceled: got %v, want context.Canceled", err)
	}
	c.cancel = false
	hold(tx)
}

// TestOutsideWriterGetsInDuringBacklog: another process writes the file
// (autocommit INSERTs, busy_timeout 5 s, SQLite's default busy handler, as
// an application would) while two of the Store's writers keep SQLite's
// write lock busy, handing it over to each other. Each of its writes gets
// in: the Store leaves it a turn. Handed over without turns, the lock was
// almost never free when the outside writer's busy handler looked, and it
// failed with "database is locked".
func TestOutsideWriterGetsInDuringBacklog(t *testing.T) {
	if testing.Short() {
		t.Skip("a backlog of a few seconds")
	}
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "app.db")
	s, err := Open(ctx, path)
	must(t, err)
	t.Cleanup(func() { _ = s.Close() })
	exec(t, s, "CREATE TABLE work (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)")
	exec(t, s, "INSERT INTO work (id, n) VALUES (1, 0), (2, 0)")
	exec(t, s, "CREATE TABLE outside (id INTEGER PRIMARY KEY, at INTEGER)")

	// The backlog: two writers, each a transaction after the other that
	// holds the lock about 8 ms, as the dispatcher's and the poller's do.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var txs [2]int
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				err := s.Tx(ctx, func(tx models.Tx) error {
					_, err := tx.(*Tx).tx.Exec("UPDATE work SET n = n + 1 WHERE id = ?", w+1)
					time.Sleep(8 * time.Millisecond)
					return err
				})
				if err != nil {
					t.Errorf("the Store's writer %d: %v", w, err)
					return
				}
				txs[w]++
			}
		}()
	}
	time.Sleep(100 * time.Millisecond) // the backlog is under way

	cmd := execpkg.Command(os.Args[0], "-test.run=^TestHelperOutsideWriter$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "SQLITESTORE_OUTSIDE_DB="+path)
	out, err := cmd.CombinedOutput()
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("the outside writer failed: %v\n%s", err, out)
	}
	waits := parseWaits(t, string(out))
	eq(t, len(waits), outsideWrites, "outside writes")
	slices.Sort(waits)
	t.Logf("outside writes' waits during the backlog (the Store's writers committed %d and %d transactions): min %v, median %v, 90th %v, max %v",
		txs[0], txs[1], waits[0], waits[len(waits)/2], waits[len(waits)*9/10], waits[len(waits)-1])
	if txs[0] == 0 || txs[1] == 0 {
		t.Fatalf("the Store's writers committed %v transactions: no backlog", txs)
	}
}

// outsideWrites is how many writes TestHelperOutsideWriter makes.
const outsideWrites = 8

// TestHelperOutsideWriter is TestOutsideWriterGetsInDuringBacklog's
// outside writer: it inserts outsideWrites rows into $SQLITESTORE_OUTSIDE_DB,
// 30 ms apart, each in autocommit with busy_timeout 5 s, and prints each
// one's wait ("wait <µs>"); it fails at the first error.
func TestHelperOutsideWriter(t *testing.T) {
	path := os.Getenv("SQLITESTORE_OUTSIDE_DB")
	if path == "" {
		t.Skip("helper process only")
	}
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)")
	must(t, err)
	defer db.Close()
	for i := range outsideWrites {
		began := time.Now()
		if _, err := db.Exec("INSERT INTO outside (at) VALUES (?)", began.UnixMicro()); err != nil {
			t.Fatalf("write %d, after %v: %v", i, time.Since(began), err)
		}
		fmt.Printf("wait %d\n", time.Since(began).Microseconds())
		time.Sleep(30 * time.Millisecond)
	}
}

// parseWaits reads the "wait <µs>" lines of TestHelperOutsideWriter's output.
func parseWaits(t *testing.T, out string) []time.Duration {
	t.Helper()
	var waits []time.Duration
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "wait "); ok {
			us, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			must(t, err)
			waits = append(waits, time.Duration(us)*time.Microsecond)
		}
	}
	return waits
}

// BenchmarkTxHandover: a transaction begun while another holds SQLite's
// write lock, through Store.Tx (handed over in the process) and through
// the database alone (BEGIN IMMEDIATE and SQLite's busy handler, as
// Store.Tx was before writeLock). It reports how long after the first's
// commit the second began: the median and the 90th percentile (a turn for
// outside writers, every TurnRun of handovers, is a wait of TurnGap).
//
//	go test ./models/sqlitestore -run '^$' -bench TxHandover -benchtime 100x
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
			var late []time.Duration
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
				late = append(late, began.Sub(<-committed))
			}
			slices.Sort(late)
			b.ReportMetric(float64(late[len(late)/2].Microseconds()), "µs-median-after-commit")
			b.ReportMetric(float64(late[len(late)*9/10].Microseconds()), "µs-p90-after-commit")
		})
	}
}
