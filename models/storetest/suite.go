package storetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
)

// Run runs the whole suite against the driver h adapts, each test in
// parallel on its own database.
func Run(t *testing.T, h Harness) {
	tests := []struct {
		name string
		fn   func(t *testing.T, h Harness)
	}{
		{"CheckNamesWhatIsMissing", testCheck},
		{"ClaimDueOrderLimitAndNullKeys", testClaimDue},
		{"ClaimDueCursor", testClaimDueCursor},
		{"ClaimDueSkipsLockedRows", testClaimDueSkipLocked},
		{"ConcurrentClaimersNeverShareARow", testConcurrentClaimers},
		{"SaveEveryColumnRoundTrip", testSaveRoundTrip},
		{"SaveLimitsAndDuplicates", testSaveLimits},
		{"SaveWritesOnlyWhatChanged", testSaveOnlyChanged},
		{"SaveManyRows", testSaveMany},
		{"SaveIfAttempt", testSaveIfAttempt},
		{"LockByKeys", testLockByKeys},
		{"LockByKeysWaits", testLockByKeysWaits},
		{"TxRollsBack", testTxRollsBack},
		{"NextDue", testNextDue},
		{"NextDueMany", testNextDueMany},
		{"ClassifyValueRefusedAndTableRefused", testClassify},
		{"MigrateTwice", testMigrateTwice},
		{"MigrateOntoSomeColumns", testMigrateExisting},
		{"MigrateDryRunChangesNothing", testMigrateDryRun},
		{"MigrateMissingTable", testMigrateMissingTable},
		{"OddKeyFindsNothing", testOddKey},
		{"ZeroDate", testZeroDate},
		{"InspectorCounts", testCounts},
		{"InspectorListPages", testList},
		{"InspectorGet", testGet},
		{"InspectorSearchBoundedScan", testSearchBudget},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if why, ok := h.Skip[tc.name]; ok {
				t.Skip("known failure: " + why)
			}
			tc.fn(t, h)
		})
	}
}

// base is a fixed instant with microseconds.
var base = Base

var (
	must      = Must
	eq        = Eq
	claim     = Claim
	lock      = Lock
	keysOf    = KeysOf
	fullState = FullState
)

// sqlTime is t as a literal every dialect reads as that UTC time.
func sqlTime(t time.Time) string { return "'" + t.UTC().Format("2006-01-02 15:04:05.000000") + "'" }

// items creates and migrates table "items" with a key of type key.
func items(t *testing.T, env Env, key KeyType) models.Table {
	t.Helper()
	env.CreateItemsTable(t, "items", key)
	_, err := env.Store.Migrate(context.Background(), []string{"items"}, io.Discard, false)
	must(t, err)
	tbl := models.Table{Name: "items", Key: "k", Payload: []string{"input_url", "size"}}
	must(t, env.Store.Check(context.Background(), tbl))
	return tbl
}

func insert(t *testing.T, env Env, key string, refreshAt time.Time) {
	t.Helper()
	at := "NULL"
	if !refreshAt.IsZero() {
		at = sqlTime(refreshAt)
	}
	k := "NULL"
	if key != "" {
		k = "'" + key + "'"
	}
	env.Exec(t, "INSERT INTO items (k, refresh_at, input_url, size) VALUES ("+k+", "+at+", 'https://example.com/"+key+"', 7)")
}

func save(s models.Store, tbl models.Table, rows ...models.Row) error {
	return s.Tx(context.Background(), func(tx models.Tx) error {
		return tx.Save(context.Background(), tbl, rows)
	})
}

func testCheck(t *testing.T, h Harness) {
	env := h.New(t)
	ctx := context.Background()
	tbl := models.Table{Name: "items", Key: "k", Payload: []string{"input_url", "size"}}
	err := env.Store.Check(ctx, tbl)
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("Check of a missing table: %v, want an error saying it does not exist", err)
	}
	env.CreateItemsTable(t, "items", KeyString)
	err = env.Store.Check(ctx, models.Table{Name: "items", Key: "input_url", Payload: []string{"nope", "size"}})
	for _, want := range []string{"refresher migrate", "refresh_at", "refresh_status", "unique", `"nope"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("Check of an unmigrated table: %v, want it to mention %q", err, want)
		}
	}
	_, err = env.Store.Migrate(ctx, []string{"items"}, io.Discard, false)
	must(t, err)
	must(t, env.Store.Check(ctx, tbl))
	err = env.Store.Check(ctx, models.Table{Name: "items", Key: "missing"})
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("Check with a missing key column: %v", err)
	}
}

func testClaimDue(t *testing.T, h Harness) {
	env := h.New(t)
	tbl := items(t, env, KeyString)
	insert(t, env, "late", base.Add(-time.Hour))
	insert(t, env, "now", base)
	insert(t, env, "early", base.Add(-2*time.Hour))
	insert(t, env, "future", base.Add(time.Microsecond))
	insert(t, env, "never", time.Time{})
	insert(t, env, "", base.Add(-3*time.Hour)) // NULL key: never claimed

	rows := claim(t, env.Store, tbl, base, time.Time{}, 10)
	eq(t, keysOf(rows), []string{"early", "late", "now"}, "due rows, earliest first")
	eq(t, rows[0].State.RefreshAt, base.Add(-2*time.Hour), "refresh_at read back in UTC")
	eq(t, rows[0].Payload, map[string]any{"input_url": "https://example.com/early", "size": int64(7)}, "payload")
	eq(t, rows[0].Rule, "", "NULL refresh_rrule")
	eq(t, keysOf(claim(t, env.Store, tbl, base, time.Time{}, 2)), []string{"early", "late"}, "limit")

	var err error
	must(t, env.Store.Tx(context.Background(), func(tx models.Tx) error {
		_, err = tx.ClaimDue(context.Background(), tbl, base, time.Time{}, 0)
		return nil
	}))
	if err == nil {
		t.Fatal("ClaimDue with limit 0: no error")
	}
}

func testClaimDueCursor(t *testing.T, h Harness) {
	env := h.New(t)
	tbl := items(t, env, KeyInt)
	for i := range 5 {
		insert(t, env, fmt.Sprint(i+1), base.Add(time.Duration(i)*time.Minute))
	}
	now := base.Add(time.Hour)
	eq(t, keysOf(claim(t, env.Store, tbl, now, base.Add(2*time.Minute), 10)), []string{"3", "4", "5"}, "from is inclusive")
	eq(t, keysOf(claim(t, env.Store, tbl, now, time.Time{}, 10)), []string{"1", "2", "3", "4", "5"}, "zero from scans from the start")
	eq(t, keysOf(claim(t, env.Store, tbl, base.Add(3*time.Minute), base.Add(time.Minute), 10)), []string{"2", "3", "4"}, "from and now")
}

func testClaimDueSkipLocked(t *testing.T, h Harness) {
	env := h.New(t)
	ctx := context.Background()
	tbl := items(t, env, KeyString)
	for i := range 40 {
		insert(t, env, fmt.Sprintf("m%02d", i), base.Add(-time.Duration(i)*time.Second))
	}
	var (
		claimed [2][]string
		both    sync.WaitGroup // both transactions hold their rows
		wg      sync.WaitGroup
		errs    = make(chan error, 2)
	)
	both.Add(2)
	for w := range 2 {
		wg.Go(func() {
			errs <- env.Store.Tx(ctx, func(tx models.Tx) error {
				rows, err := tx.ClaimDue(ctx, tbl, base, time.Time{}, 25)
				claimed[w] = keysOf(rows)
				both.Done()
				both.Wait() // keep the locks until the other has claimed too
				return err
			})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		must(t, err)
	}
	seen := map[string]int{}
	for _, ks := range claimed {
		for _, k := range ks {
			seen[k]++
		}
	}
	for k, n := range seen {
		if n != 1 {
			t.Fatalf("row %s claimed %d times: %v", k, n, claimed)
		}
	}
	eq(t, len(seen), 40, "rows claimed by both: ", claimed)
	// Which one gets more depends on how their scans interleave; neither
	// gets more than it asked for.
	eq(t, len(claimed[0]) <= 25 && len(claimed[1]) <= 25, true, "at most 25 each: ", claimed)
}

// testConcurrentClaimers runs claimers that each claim, move their rows'
// refresh_at an hour ahead and commit, until nothing is due: every row must
// be claimed exactly once.
func testConcurrentClaimers(t *testing.T, h Harness) {
	env := h.New(t)
	ctx := context.Background()
	tbl := items(t, env, KeyInt)
	const n = 200
	var vals []string
	for i := 1; i <= n; i++ {
		vals = append(vals, fmt.Sprintf("(%d, %s)", i, sqlTime(base.Add(-time.Duration(i)*time.Millisecond))))
	}
	env.Exec(t, "INSERT INTO items (k, refresh_at) VALUES "+strings.Join(vals, ", "))
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			for {
				var got int
				err := env.Store.Tx(ctx, func(tx models.Tx) error {
					rows, err := tx.ClaimDue(ctx, tbl, base, time.Time{}, 7)
					if err != nil {
						return err
					}
					got = len(rows)
					mu.Lock()
					for _, r := range rows {
						seen[r.Key]++
					}
					mu.Unlock()
					for i := range rows {
						rows[i].State.RefreshAt = base.Add(time.Hour)
					}
					return tx.Save(ctx, tbl, rows)
				})
				if err != nil {
					errs <- err
					return
				}
				if got == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		must(t, err)
	}
	eq(t, len(seen), n, "rows claimed")
	for k, c := range seen {
		if c != 1 {
			t.Fatalf("row %s claimed %d times", k, c)
		}
	}
}

func testSaveRoundTrip(t *testing.T, h Harness) {
	env := h.New(t)
	tbl := items(t, env, KeyString)
	for i, k := range []string{"a", "b", "c"} {
		insert(t, env, k, base.Add(time.Duration(i-3)*time.Second))
	}
	env.Exec(t, "UPDATE items SET refresh_rrule = 'FREQ=DAILY' WHERE k = 'a'")
	rows := claim(t, env.Store, tbl, base, time.Time{}, 10)
	eq(t, keysOf(rows), []string{"a", "b", "c"})
	eq(t, rows[0].Rule, "FREQ=DAILY", "refresh_rrule read")
	rows[0].State = fullState(1)
	rows[1].State = fullState(2)
	rows[1].State.AttemptUID, rows[1].State.DisabledAt, rows[1].State.DisabledReason = "", time.Time{}, "" // NULLs among values
	rows[2].State = policy.State{}                                                                         // every column NULL
	rows[2].Rule = "FREQ=HOURLY"                                                                           // Save never writes it
	must(t, save(env.Store, tbl, rows...))

	got := lock(t, env.Store, tbl, "a", "b", "c")
	eq(t, got["a"].State, fullState(1), "every column")
	eq(t, got["b"].State, rows[1].State, "some NULL")
	eq(t, got["c"].State, policy.State{}, "all NULL")
	eq(t, got["a"].Rule, "FREQ=DAILY", "rule untouched")
	eq(t, got["c"].Rule, "", "rule never written")
	eq(t, got["a"].Payload, map[string]any(nil), "LockByKeys reads no payload")

	// A row built by hand (no Loaded) is written in full, by key.
	must(t, save(env.Store, tbl, models.Row{Key: "c", State: fullState(3)}))
	eq(t, lock(t, env.Store, tbl, "c")["c"].State, fullState(3), "hand-built row")
}

func testSaveLimits(t *testing.T, h Harness) {
	env := h.New(t)
	tbl := items(t, env, KeyString)
	for _, k := range []string{"max", "long", "bad", "dup", "none"} {
		insert(t, env, k, base)
	}
	reason := strings.Repeat("é", 1024)
	status := strings.Repeat("💥", 255)
	maxState := policy.State{RefreshAt: base, DisabledReason: reason, LastError: reason, Status: status}
	longState := policy.State{RefreshAt: base, DisabledReason: reason + "tail", LastError: strings.Repeat("x", 5000), Status: status + "more"}
	badState := policy.State{RefreshAt: base, LastError: "bad \xff\xfe utf-8", Status: "ok"}
	must(t, save(env.Store, tbl,
		models.Row{Key: "max", State: maxState},
		models.Row{Key: "long", State: longState},
		models.Row{Key: "bad", State: badState},
		models.Row{Key: "dup", State: fullState(1)},
		models.Row{Key: "absent", State: fullState(9)}, // names no row: ignored
		models.Row{Key: "dup", State: fullState(2)},    // the last one wins
	))
	got := lock(t, env.Store, tbl, "max", "long", "bad", "dup", "absent")
	eq(t, len(got), 4, "rows found")
	eq(t, got["max"].State, maxState, "texts at their maximum length")
	want := longState
	want.DisabledReason = policy.Truncate(longState.DisabledReason, 1024)
	want.LastError = policy.Truncate(longState.LastError, 1024)
	want.Status = policy.Truncate(longState.Status, 255)
	eq(t, got["long"].State, want, "longer texts cut to 1024 and 255 characters by policy.Truncate")
	want = badState
	want.LastError = "bad \uFFFD utf-8"
	eq(t, got["bad"].State, want, "invalid UTF-8 replaced")
	eq(t, got["dup"].State, fullState(2), "the last row of a key wins")
	must(t, save(env.Store, tbl)) // no rows: nothing to do
}

func testSaveOnlyChanged(t *testing.T, h Harness) {
	env := h.New(t)
	ctx := context.Background()
	tbl := items(t, env, KeyInt)
	insert(t, env, "1", base)
	insert(t, env, "2", base)
	rows := claim(t, env.Store, tbl, base, time.Time{}, 10)
	// Meanwhile the application changes a column the service read but
	// does not change in this batch; Save must not write it back.
	env.Exec(t, "UPDATE items SET refresh_status = 'by app' WHERE k = 1")
	must(t, env.Store.Tx(ctx, func(tx models.Tx) error {
		rows[0].State.AttemptNo = 5
		rows[0].State.AttemptUID = "d1v5bqh6n88c73890001"
		return tx.Save(ctx, tbl, rows) // rows[1] unchanged: skipped
	}))
	got := lock(t, env.Store, tbl, "1", "2")
	eq(t, got["1"].State.Status, "by app", "a column that did not change is not written")
	eq(t, got["1"].State.AttemptNo, 5)
	eq(t, got["1"].State.AttemptUID, "d1v5bqh6n88c73890001")
	eq(t, got["2"].State, policy.State{RefreshAt: base})
}

func testSaveMany(t *testing.T, h Harness) {
	env := h.New(t)
	ctx := context.Background()
	tbl := items(t, env, KeyInt)
	const n = 2500 // more than one statement's worth
	for start := 1; start <= n; start += 500 {
		var vals []string
		for i := start; i < start+500; i++ {
			vals = append(vals, fmt.Sprintf("(%d, %s)", i, sqlTime(base)))
		}
		env.Exec(t, "INSERT INTO items (k, refresh_at) VALUES "+strings.Join(vals, ", "))
	}
	must(t, env.Store.Tx(ctx, func(tx models.Tx) error {
		rows, err := tx.ClaimDue(ctx, tbl, base, time.Time{}, n)
		if err != nil {
			return err
		}
		if len(rows) != n {
			return fmt.Errorf("claimed %d rows, want %d", len(rows), n)
		}
		for i := range rows {
			rows[i].State = fullState(i % 50)
			rows[i].State.AttemptUID = fmt.Sprintf("uid%017d", i)
		}
		return tx.Save(ctx, tbl, rows)
	}))
	next, ok, err := env.Store.NextDue(ctx, tbl)
	must(t, err)
	eq(t, ok, true)
	eq(t, next, fullState(0).RefreshAt, "next due after the save")
	got := lock(t, env.Store, tbl, "1", "2500")
	eq(t, got["2500"].State.AttemptUID, fmt.Sprintf("uid%017d", 2499), "last row of the last statement")
	eq(t, got["1"].State.AttemptUID, fmt.Sprintf("uid%017d", 0))
}

func testSaveIfAttempt(t *testing.T, h Harness) {
	env := h.New(t)
	ctx := context.Background()
	tbl := items(t, env, KeyString)
	for _, k := range []string{"a", "b", "c"} {
		insert(t, env, k, base)
	}
	started := fullState(1)
	must(t, save(env.Store, tbl, models.Row{Key: "a", State: started}, models.Row{Key: "b", State: started}))
	before := policy.State{RefreshAt: base}
	n, err := env.Store.SaveIfAttempt(ctx, tbl,
		[]models.Row{{Key: "a", State: before}, {Key: "b", State: before}, {Key: "c", State: fullState(3)}, {Key: "absent", State: before}},
		[]string{started.AttemptUID, "d1v5bqh6n88c7389zzzz", "", ""})
	must(t, err)
	eq(t, n, 2, "rows written: a (its attempt) and c (no attempt, NULL)")
	got := lock(t, env.Store, tbl, "a", "b", "c")
	eq(t, got["a"].State, before, "undone")
	eq(t, got["b"].State, started, "another attempt: left alone")
	eq(t, got["c"].State, fullState(3), "\"\" matches NULL")
	if _, err := env.Store.SaveIfAttempt(ctx, tbl, []models.Row{{Key: "a"}}, nil); err == nil {
		t.Fatal("SaveIfAttempt with mismatched lengths: no error")
	}
}

func testLockByKeys(t *testing.T, h Harness) {
	env := h.New(t)
	tbl := items(t, env, KeyInt)
	insert(t, env, "7", base)
	insert(t, env, "10", time.Time{})
	got := lock(t, env.Store, tbl, "10", "7", "7", "404")
	eq(t, slices.Sorted(mapsKeys(got)), []string{"10", "7"}, "found rows")
	eq(t, got["10"].State, policy.State{}, "NULL refresh_at")
	eq(t, got["7"].Key, "7")
	eq(t, len(lock(t, env.Store, tbl)), 0, "no keys")
}

func mapsKeys(m map[string]models.Row) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func testLockByKeysWaits(t *testing.T, h Harness) {
	env := h.New(t)
	ctx := context.Background()
	tbl := items(t, env, KeyString)
	insert(t, env, "a", base)
	held := make(chan struct{})
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- env.Store.Tx(ctx, func(tx models.Tx) error {
			if _, err := tx.ClaimDue(ctx, tbl, base, time.Time{}, 1); err != nil {
				return err
			}
			close(held)
			<-release
			return nil
		})
	}()
	<-held
	waited := make(chan map[string]models.Row, 1)
	go func() { waited <- lock(t, env.Store, tbl, "a") }()
	select {
	case <-waited:
		t.Fatal("LockByKeys did not wait for the row another transaction holds")
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	must(t, <-done)
	eq(t, len(<-waited), 1, "row locked once released")
}

func testTxRollsBack(t *testing.T, h Harness) {
	env := h.New(t)
	ctx := context.Background()
	tbl := items(t, env, KeyString)
	insert(t, env, "a", base)
	boom := errors.New("boom")
	err := env.Store.Tx(ctx, func(tx models.Tx) error {
		rows, err := tx.ClaimDue(ctx, tbl, base, time.Time{}, 1)
		if err != nil {
			return err
		}
		rows[0].State.Status = "lost"
		if err := tx.Save(ctx, tbl, rows); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Tx returned %v, want fn's error", err)
	}
	func() {
		defer func() { _ = recover() }()
		_ = env.Store.Tx(ctx, func(tx models.Tx) error {
			rows, _ := tx.ClaimDue(ctx, tbl, base, time.Time{}, 1)
			rows[0].State.Status = "lost"
			_ = tx.Save(ctx, tbl, rows)
			panic("boom")
		})
	}()
	eq(t, lock(t, env.Store, tbl, "a")["a"].State.Status, "", "rolled back")
}

func testNextDue(t *testing.T, h Harness) {
	env := h.New(t)
	ctx := context.Background()
	tbl := items(t, env, KeyString)
	_, ok, err := env.Store.NextDue(ctx, tbl)
	must(t, err)
	eq(t, ok, false, "empty table")
	insert(t, env, "", base.Add(-time.Hour)) // NULL key: does not count
	insert(t, env, "never", time.Time{})
	_, ok, err = env.Store.NextDue(ctx, tbl)
	must(t, err)
	eq(t, ok, false, "only a NULL key and a NULL refresh_at")
	insert(t, env, "b", base.Add(time.Minute))
	insert(t, env, "a", base)
	next, ok, err := env.Store.NextDue(ctx, tbl)
	must(t, err)
	eq(t, ok, true)
	eq(t, next, base, "earliest refresh_at")
}

// testNextDueMany: one answer per table, in order, the same as NextDue's,
// also past a chunk (the same tables asked many times).
func testNextDueMany(t *testing.T, h Harness) {
	env := h.New(t)
	ctx := context.Background()
	tbl := items(t, env, KeyString)
	env.CreateItemsTable(t, "empty", KeyString)
	_, err := env.Store.Migrate(ctx, []string{"empty"}, io.Discard, false)
	must(t, err)
	empty := models.Table{Name: "empty", Key: "k"}
	next, err := env.Store.NextDueMany(ctx, nil)
	must(t, err)
	eq(t, len(next), 0, "no tables")
	insert(t, env, "", base.Add(-time.Hour)) // NULL key: does not count
	insert(t, env, "b", base.Add(time.Minute))
	insert(t, env, "a", base)
	var tables []models.Table
	for range models.NextDueChunk + 10 {
		tables = append(tables, tbl, empty)
	}
	next, err = env.Store.NextDueMany(ctx, tables)
	must(t, err)
	eq(t, len(next), len(tables), "answers")
	for i := range tables {
		want := models.Next{At: base, OK: true}
		if i%2 == 1 {
			want = models.Next{}
		}
		eq(t, next[i], want, fmt.Sprintf("table %d (%s)", i, tables[i].Name))
	}
}

func testClassify(t *testing.T, h Harness) {
	env := h.New(t)
	ctx := context.Background()
	tbl := items(t, env, KeyString)
	insert(t, env, "a", base)
	insert(t, env, "b", base)
	s := env.Store
	eq(t, s.Classify(&net.OpError{Op: "read", Err: errors.New("connection reset by peer")}), models.Transient, "network error")
	eq(t, s.Classify(context.DeadlineExceeded), models.Transient, "deadline")

	env.Exec(t, "ALTER TABLE items ADD CONSTRAINT status_ok CHECK (refresh_status IS NULL OR refresh_status <> 'refuse me')")
	err := save(s, tbl, models.Row{Key: "a", State: policy.State{RefreshAt: base, Status: "refuse me"}})
	if err == nil {
		t.Fatal("a value the CHECK constraint refuses was saved")
	}
	eq(t, s.Classify(err), models.ValueRefused, "CHECK constraint: ", err)
	must(t, save(s, tbl, models.Row{Key: "b", State: policy.State{RefreshAt: base, Status: "fine"}}))

	env.Exec(t, "DROP TABLE items")
	err = save(s, tbl, models.Row{Key: "b", State: policy.State{RefreshAt: base}})
	if err == nil {
		t.Fatal("save into a dropped table: no error")
	}
	eq(t, s.Classify(err), models.TableRefused, "missing table on save: ", err)
	err = s.Tx(ctx, func(tx models.Tx) error {
		_, err := tx.ClaimDue(ctx, tbl, base, time.Time{}, 10)
		return err
	})
	eq(t, s.Classify(err), models.TableRefused, "missing table on claim: ", err)
	_, _, err = s.NextDue(ctx, tbl)
	eq(t, s.Classify(err), models.TableRefused, "missing table on next due: ", err)
	_, err = s.NextDueMany(ctx, []models.Table{tbl})
	eq(t, s.Classify(err), models.TableRefused, "missing table on next due of many: ", err)
	_, err = s.SaveIfAttempt(ctx, tbl, []models.Row{{Key: "b"}}, []string{""})
	eq(t, s.Classify(err), models.TableRefused, "missing table on save if attempt: ", err)

	// A missing column, on a table the store has not seen yet.
	env.CreateItemsTable(t, "other", KeyString)
	_, err = s.Migrate(ctx, []string{"other"}, io.Discard, false)
	must(t, err)
	env.Exec(t, "ALTER TABLE other DROP COLUMN refresh_status")
	other := models.Table{Name: "other", Key: "k"}
	err = save(s, other, models.Row{Key: "x", State: policy.State{Status: "s"}})
	if err == nil {
		t.Fatal("save into a table without refresh_status: no error")
	}
	eq(t, s.Classify(err), models.TableRefused, "missing column: ", err)
}

func testMigrateTwice(t *testing.T, h Harness) {
	env := h.New(t)
	ctx := context.Background()
	env.CreateItemsTable(t, "items", KeyString)
	env.CreateItemsTable(t, "more", KeyInt)
	r, err := env.Store.Migrate(ctx, []string{"items", "more"}, io.Discard, false)
	must(t, err)
	eq(t, len(r.Tables), 2)
	for _, tm := range r.Tables {
		eq(t, len(tm.Applied), 3, "migrations applied to ", tm.Table)
		eq(t, len(tm.Applied[0].Added), 12, "columns added to ", tm.Table, ": ", tm.Applied[0].Added)
		eq(t, len(tm.Applied[1].Added), 1, "index added to ", tm.Table)
		eq(t, len(tm.Applied[2].Added), 4, "count indexes added to ", tm.Table)
		eq(t, tm.Warnings, []string(nil))
	}
	for _, name := range []string{"items", "more"} {
		must(t, env.Store.Check(ctx, models.Table{Name: name, Key: "k"}))
	}
	var out strings.Builder
	r, err = env.Store.Migrate(ctx, []string{"items", "more"}, &out, false)
	must(t, err)
	for _, tm := range r.Tables {
		eq(t, tm.UpToDate(), true, "second run: ", tm)
	}
	eq(t, out.String(), "items: up to date\nmore: up to date\n")
}

func testMigrateExisting(t *testing.T, h Harness) {
	env := h.New(t)
	ctx := context.Background()
	env.CreateItemsTable(t, "items", KeyString)
	env.Exec(t, "ALTER TABLE items ADD COLUMN refresh_status VARCHAR(255) NULL")
	env.Exec(t, "ALTER TABLE items ADD COLUMN refresh_attempt_no INT NOT NULL DEFAULT 0")
	env.Exec(t, "INSERT INTO items (k, refresh_status) VALUES ('a', 'kept')")
	r, err := env.Store.Migrate(ctx, []string{"items"}, io.Discard, false)
	must(t, err)
	am := r.Tables[0].Applied[0]
	eq(t, len(am.Added), 10, "columns added: ", am.Added)
	eq(t, slices.Sorted(slices.Values(am.Existing)), []string{"column refresh_attempt_no", "column refresh_status"})
	tbl := models.Table{Name: "items", Key: "k"}
	must(t, env.Store.Check(ctx, tbl))
	eq(t, lock(t, env.Store, tbl, "a")["a"].State.Status, "kept", "existing data kept")
	r, err = env.Store.Migrate(ctx, []string{"items"}, io.Discard, false)
	must(t, err)
	eq(t, r.Tables[0].UpToDate(), true)
}

func testMigrateDryRun(t *testing.T, h Harness) {
	env := h.New(t)
	ctx := context.Background()
	env.CreateItemsTable(t, "items", KeyString)
	var out strings.Builder
	r, err := env.Store.Migrate(ctx, []string{"items"}, &out, true)
	must(t, err)
	eq(t, len(r.Tables[0].Applied), 3, "migrations it would apply")
	for _, want := range []string{"refresh_attempt_uid", "refresh_rrule", "refresher_schema_migrations"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("dry run output lacks %q:\n%s", want, out.String())
		}
	}
	if err := env.Store.Check(ctx, models.Table{Name: "items", Key: "k"}); err == nil {
		t.Fatal("the dry run added the columns")
	}
}

func testMigrateMissingTable(t *testing.T, h Harness) {
	env := h.New(t)
	env.CreateItemsTable(t, "items", KeyString)
	_, err := env.Store.Migrate(context.Background(), []string{"items", "nope"}, io.Discard, false)
	if err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("Migrate of a missing table: %v", err)
	}
	if err := env.Store.Check(context.Background(), models.Table{Name: "items", Key: "k"}); err == nil {
		t.Fatal("Migrate changed a table before finding that another is missing")
	}
}

// oddKeys are keys that some key columns cannot hold, by the key type they
// are tried with: a character latin1 lacks (MySQL's KeyNarrow), text no
// PostgreSQL column holds (a NUL, invalid UTF-8), and text that is no
// integer, or only starts like one, or is out of range (MySQL compares
// "1abc" with an integer column as 1). Each must name no row, like a key
// of no row: a poller dead-letters its result as an unknown model instead
// of failing its batch, or applying it to row 1.
var oddKeys = []struct {
	key string
	typ KeyType
}{
	{"💥", KeyNarrow},
	{"x\xff", KeyNarrow},
	{"a\x00b", KeyString},
	{"\xff", KeyString},
	{"abc", KeyInt},
	{"1abc", KeyInt},
	{"99999999999999999999", KeyInt},
}

func testOddKey(t *testing.T, h Harness) {
	for _, odd := range oddKeys {
		t.Run(fmt.Sprintf("%q", odd.key), func(t *testing.T) {
			t.Parallel()
			env := h.New(t)
			ctx := context.Background()
			tbl := items(t, env, odd.typ)
			insert(t, env, "1", base)
			locked := func(keys ...string) []string {
				t.Helper()
				var got map[string]models.Row
				must(t, env.Store.Tx(ctx, func(tx models.Tx) (err error) {
					got, err = tx.LockByKeys(ctx, tbl, keys)
					return err
				}))
				return slices.Sorted(mapsKeys(got))
			}
			eq(t, locked(odd.key), []string(nil), "the odd key alone finds nothing and fails nothing")
			eq(t, locked(odd.key, "1"), []string{"1"}, "the odd key beside another finds only the other")
			must(t, save(env.Store, tbl, models.Row{Key: "1", State: fullState(2)}))
			must(t, save(env.Store, tbl, models.Row{Key: odd.key, State: fullState(1)}))
			eq(t, lock(t, env.Store, tbl, "1")["1"].State, fullState(2), "saving by the odd key writes no row")
			must(t, save(env.Store, tbl, models.Row{Key: odd.key, State: fullState(1)}, models.Row{Key: "1", State: fullState(3)}))
			eq(t, lock(t, env.Store, tbl, "1")["1"].State, fullState(3), "the other row of the batch is saved")
			n, err := env.Store.SaveIfAttempt(ctx, tbl, []models.Row{{Key: odd.key, State: fullState(1)}}, []string{fullState(3).AttemptUID})
			must(t, err)
			eq(t, n, 0, "SaveIfAttempt by the odd key writes nothing")
			eq(t, lock(t, env.Store, tbl, "1")["1"].State, fullState(3), "SaveIfAttempt by the odd key writes no row")
		})
	}
	// A key a narrow column holds, that is not ASCII: found, so that the
	// check does not refuse more than the column does.
	env := h.New(t)
	tbl := items(t, env, KeyNarrow)
	insert(t, env, "é€", base)
	eq(t, slices.Sorted(mapsKeys(lock(t, env.Store, tbl, "é€", "💥"))), []string{"é€"}, "a key the narrow column holds is found")
	must(t, save(env.Store, tbl, models.Row{Key: "é€", State: fullState(4)}))
	eq(t, lock(t, env.Store, tbl, "é€")["é€"].State, fullState(4), "and saved by key")
}

func testZeroDate(t *testing.T, h Harness) {
	if h.ZeroDate == nil {
		t.Skip("no zero dates in this database")
	}
	env := h.New(t)
	ctx := context.Background()
	tbl := items(t, env, KeyInt)
	h.ZeroDate(t, env, "items", "1")
	var claimed []models.Row
	must(t, env.Store.Tx(ctx, func(tx models.Tx) (err error) {
		if claimed, err = tx.ClaimDue(ctx, tbl, base, time.Time{}, 10); err != nil {
			return err
		}
		return tx.Save(ctx, tbl, claimed) // unchanged: RefreshAt stays zero
	}))
	eq(t, len(claimed), 1, "zero date claimed")
	_, ok, err := env.Store.NextDue(ctx, tbl)
	must(t, err)
	eq(t, ok, false, "zero date replaced by NULL")
}

func testCounts(t *testing.T, h Harness) {
	env := h.New(t)
	in := env.Store
	ctx := context.Background()
	tbl := items(t, env, KeyInt)
	c, err := in.Counts(ctx, tbl, base, time.Hour)
	must(t, err)
	eq(t, c, models.Counts{}, "empty table")
	for i := 1; i <= 6; i++ {
		insert(t, env, fmt.Sprint(i), time.Time{})
	}
	must(t, save(env.Store, tbl,
		models.Row{Key: "1", State: policy.State{RefreshAt: base.Add(-2 * time.Hour)}},                                                 // due, late
		models.Row{Key: "2", State: policy.State{RefreshAt: base.Add(-time.Minute), AttemptUID: "d1v5bqh6n88c73890002", AttemptNo: 4}}, // due, running
		models.Row{Key: "3", State: policy.State{RefreshAt: base.Add(time.Hour), FailingSince: base, AttemptNo: 2}},                    // failing
		models.Row{Key: "4", State: policy.State{DisabledAt: base, FailingSince: base}},                                                // disabled, not failing
		models.Row{Key: "5", State: policy.State{RefreshAt: base}},                                                                     // due (now)
	))
	c, err = in.Counts(ctx, tbl, base, time.Hour)
	must(t, err)
	eq(t, c, models.Counts{Total: 6, Due: 3, Late: 1, Running: 1, Failing: 1, Disabled: 1, OldestDue: base.Add(-2 * time.Hour), MaxAttemptNo: 4})
}

func testList(t *testing.T, h Harness) {
	env := h.New(t)
	in := env.Store
	ctx := context.Background()
	tbl := items(t, env, KeyInt)
	// Keys 1..12: ordered as integers, 2 before 10.
	var rows []models.Row
	for i := 1; i <= 12; i++ {
		insert(t, env, fmt.Sprint(i), time.Time{})
		st := policy.State{RefreshAt: base.Add(time.Duration(i) * time.Hour)}
		if i%2 == 0 {
			st.RefreshAt = base.Add(-time.Duration(i) * time.Minute)
		}
		if i == 10 {
			st.DisabledAt, st.DisabledReason = base, "Invalid URL given"
		}
		rows = append(rows, models.Row{Key: fmt.Sprint(i), State: st})
	}
	must(t, save(env.Store, tbl, rows...))
	list := func(q models.ListQuery) []string {
		t.Helper()
		q.Now = base
		got, err := in.List(ctx, tbl, q)
		must(t, err)
		for _, r := range got.Rows {
			if r.Payload != nil {
				t.Fatalf("List returned a payload: %v", r.Payload)
			}
		}
		return keysOf(got.Rows)
	}
	eq(t, list(models.ListQuery{State: models.StateDue, Limit: 4}), []string{"2", "4", "6", "8"}, "first page, by key as an integer")
	eq(t, list(models.ListQuery{State: models.StateDue, Limit: 4, After: "8"}), []string{"10", "12"}, "second page")
	eq(t, list(models.ListQuery{State: models.StateDue, Limit: 4, After: "12"}), []string{}, "past the end")
	eq(t, list(models.ListQuery{State: models.StateAll, After: "9", Limit: 2}), []string{"10", "11"}, "all")
	eq(t, len(list(models.ListQuery{State: models.StateAll})), 12, "default limit")
	eq(t, list(models.ListQuery{State: models.StateDisabled}), []string{"10"}, "disabled")
	eq(t, list(models.ListQuery{State: models.StateAll, Search: "invalid url"}), []string{"10"}, "search in the reason, case-insensitive")
	eq(t, list(models.ListQuery{State: models.StateLate, LateAfter: 9 * time.Minute}), []string{"10", "12"}, "late")
	// A search within a state is read from the state's rows first: the page
	// is still ordered by key as the key's type orders it, and pages on.
	eq(t, list(models.ListQuery{State: models.StateDue, Search: "2"}), []string{"2", "12"}, "search within a state, by key as an integer")
	eq(t, list(models.ListQuery{State: models.StateDue, Search: "2", Limit: 1}), []string{"2"}, "search within a state, first page")
	eq(t, list(models.ListQuery{State: models.StateDue, Search: "2", Limit: 1, After: "2"}), []string{"12"}, "search within a state, second page")
	eq(t, list(models.ListQuery{State: models.StateDue, Search: "INVALID"}), []string{"10"}, "search in the reason within a state")
	eq(t, list(models.ListQuery{State: models.StateRunning, Search: "2"}), []string{}, "search within an empty state")
}

// testSearchBudget follows a search's continuation to the end with a small
// scan budget: every match is found once, in key order, pages with no match
// still go on, and the last page is complete, also when the budget ends on
// the table's last row.
func testSearchBudget(t *testing.T, h Harness) {
	env := h.New(t)
	in := env.Store
	ctx := context.Background()
	tbl := items(t, env, KeyInt)
	// Keys 1..30, ordered as integers; the even ones are due; "boom" is in
	// the last error of 3, 4, 5, 17, 18 and 29.
	var rows []models.Row
	for i := 1; i <= 30; i++ {
		insert(t, env, fmt.Sprint(i), time.Time{})
		st := policy.State{RefreshAt: base.Add(time.Duration(i) * time.Hour)}
		if i%2 == 0 {
			st.RefreshAt = base.Add(-time.Duration(i) * time.Minute)
		}
		switch i {
		case 3, 4, 5, 17, 18, 29:
			st.FailingSince, st.LastError = base, fmt.Sprintf("GET https://x/%d: BOOM", i)
		}
		rows = append(rows, models.Row{Key: fmt.Sprint(i), State: st})
	}
	must(t, save(env.Store, tbl, rows...))
	type page struct {
		Keys            []string
		Next, ScannedTo string
	}
	follow := func(q models.ListQuery) []page {
		t.Helper()
		q.Now, q.Search = base, "boom"
		var pages []page
		for len(pages) < 50 {
			got, err := in.List(ctx, tbl, q)
			must(t, err)
			pages = append(pages, page{keysOf(got.Rows), got.Next, got.ScannedTo})
			if got.Complete() {
				return pages
			}
			q.After = got.Next
		}
		t.Fatalf("the search did not end: %v", pages)
		return nil
	}
	eq(t, follow(models.ListQuery{State: models.StateAll, Limit: 2, ScanBudget: 5}), []page{
		{[]string{"3", "4"}, "4", ""}, // a full page goes on after its last match
		{[]string{"5"}, "9", "9"},     // the budget ran out at 9
		{[]string{}, "14", "14"},      // no match in 10..14, and more to search
		{[]string{"17", "18"}, "18", ""},
		{[]string{}, "23", "23"},
		{[]string{}, "28", "28"},
		{[]string{"29"}, "", ""}, // 29 and 30: the end
	}, "all, 2 a page, 5 rows a request")
	// Within a state the budget counts the table's rows in key order, the
	// state's and the others: 3, 5, 17 and 29 match the search but are not
	// due.
	eq(t, follow(models.ListQuery{State: models.StateDue, Limit: 5, ScanBudget: 6}), []page{
		{[]string{"4"}, "6", "6"}, // rows 1..6
		{[]string{}, "12", "12"},
		{[]string{"18"}, "18", "18"},
		{[]string{}, "24", "24"},
		{[]string{}, "", ""}, // 25..30: the budget ends on the table's last row
	}, "due, 5 a page, 6 rows a request")
	eq(t, follow(models.ListQuery{State: models.StateAll, Limit: 10}), []page{
		{[]string{"3", "4", "5", "17", "18", "29"}, "", ""},
	}, "default budget")
}
