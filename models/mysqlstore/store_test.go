package mysqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/refresher/refresher/models"

	"github.com/refresher/refresher/policy"
)

// itemsTable creates table "items" with a key column of keyType plus some
// payload columns, migrates it, and returns its models.Table.
func itemsTable(t testing.TB, db *sql.DB, keyType string) models.Table {
	t.Helper()
	exec(t, db, "CREATE TABLE items (id BIGINT AUTO_INCREMENT PRIMARY KEY, k "+keyType+" NOT NULL, "+
		"input_url VARCHAR(255) NULL, size INT NULL, price DECIMAL(10,2) NULL, ratio DOUBLE NULL, "+
		"created DATETIME(6) NULL, day DATE NULL, raw VARBINARY(16) NULL, doc JSON NULL, UNIQUE KEY uk (k))")
	_, err := Migrate(context.Background(), db, []string{"items"}, io.Discard, false)
	must(t, err)
	return models.Table{Name: "items", Key: "k", Payload: []string{"input_url", "size", "price", "ratio", "created", "day", "raw", "doc"}}
}

// fullState sets every column, with microseconds.

func insertItem(t testing.TB, db *sql.DB, key any, refreshAt time.Time) {
	t.Helper()
	exec(t, db, "INSERT INTO items (k, refresh_at) VALUES (?, ?)", key, dbTime(refreshAt))
}

// insertItems inserts rows with keys 1..n and refresh_at = base.
func insertItems(t testing.TB, db *sql.DB, n int) {
	t.Helper()
	for start := 1; start <= n; start += 1000 {
		var vals []string
		for i := start; i <= min(n, start+999); i++ {
			vals = append(vals, fmt.Sprintf("(%d, '%s')", i, base.Format("2006-01-02 15:04:05.000000")))
		}
		exec(t, db, "INSERT INTO items (k, refresh_at) VALUES "+strings.Join(vals, ","))
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testDB(t)
	s := New(db)
	tbl := itemsTable(t, db, "CHAR(20)")
	must(t, s.Check(ctx, tbl))

	err := s.Check(ctx, models.Table{Name: "nope", Key: "k"})
	errContains(t, err, "table `nope` does not exist", "`table:`")

	err = s.Check(ctx, models.Table{Name: "items", Key: "kk", Payload: []string{"input_url", "url2", "size3"}})
	errContains(t, err, `no key column "kk"`, "`key:`", `no payload column(s) "url2", "size3"`, "`payload:`")

	err = s.Check(ctx, models.Table{Name: "items", Key: "input_url"})
	errContains(t, err, `key column "input_url" of table `+"`items`"+` has no unique index`)

	exec(t, db, "ALTER TABLE items DROP COLUMN refresh_status, DROP COLUMN refresh_rrule")
	err = s.Check(ctx, tbl)
	errContains(t, err, "lacks refresh column(s) refresh_rrule, refresh_status", "run `refresher migrate --config FILE`")

	exec(t, db, "CREATE TABLE bare (id INT PRIMARY KEY)")
	err = s.Check(ctx, models.Table{Name: "bare", Key: "id"})
	errContains(t, err, "lacks refresh column(s) refresh_at, refresh_attempt_uid,")

	err = s.Check(ctx, models.Table{Name: "items", Key: ""})
	errContains(t, err, "empty table or column name")
}

func TestClaimDue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testDB(t)
	s := New(db)
	tbl := itemsTable(t, db, "INT")
	now := base
	// Inserted out of order; 7 and 8 are not due, 9 has no refresh_at.
	for i, off := range map[int]time.Duration{
		1: -time.Hour, 2: -3 * time.Hour, 3: -time.Minute, 4: 0, 5: -2 * time.Hour, 6: -time.Microsecond,
		7: time.Microsecond, 8: time.Hour,
	} {
		insertItem(t, db, i, now.Add(off))
	}
	insertItem(t, db, 9, time.Time{})

	var got []models.Row
	must(t, s.Tx(ctx, func(tx models.Tx) (err error) {
		got, err = tx.ClaimDue(ctx, tbl, now, models.Cursor{}, 100)
		return err
	}))
	eq(t, keysOf(got), []string{"2", "5", "1", "3", "6", "4"}, "due rows by refresh_at")
	eq(t, got[0].State.RefreshAt, now.Add(-3*time.Hour))
	eq(t, got[4].State.RefreshAt, now.Add(-time.Microsecond), "microseconds")

	must(t, s.Tx(ctx, func(tx models.Tx) (err error) {
		got, err = tx.ClaimDue(ctx, tbl, now, models.Cursor{}, 2)
		return err
	}))
	eq(t, keysOf(got), []string{"2", "5"}, "limit")

	// The cursor starts the scan at from, inclusive.
	must(t, s.Tx(ctx, func(tx models.Tx) (err error) {
		got, err = tx.ClaimDue(ctx, tbl, now, models.Cursor{At: now.Add(-time.Hour)}, 3)
		return err
	}))
	eq(t, keysOf(got), []string{"1", "3", "6"}, "cursor")

	next, ok, err := s.NextDue(ctx, tbl)
	must(t, err)
	eq(t, ok, true)
	eq(t, next, now.Add(-3*time.Hour), "NextDue")

	must(t, s.Tx(ctx, func(tx models.Tx) error {
		_, err := tx.ClaimDue(ctx, tbl, now, models.Cursor{}, 0)
		errContains(t, err, "limit 0 must be positive")
		return nil
	}))
}

func TestNextDueEmpty(t *testing.T) {
	t.Parallel()
	db := testDB(t)
	s := New(db)
	tbl := itemsTable(t, db, "INT")
	insertItem(t, db, 1, time.Time{})
	_, ok, err := s.NextDue(context.Background(), tbl)
	must(t, err)
	eq(t, ok, false)
}

func TestSaveRoundTrip(t *testing.T) {
	t.Parallel()
	for _, keyType := range []string{"INT", "CHAR(20)", "VARCHAR(40) CHARACTER SET latin1", "VARCHAR(40) COLLATE utf8mb4_bin"} {
		t.Run(keyType, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := testDB(t)
			s := New(db)
			tbl := itemsTable(t, db, keyType)
			for i := 1; i <= 3; i++ {
				insertItem(t, db, i, base)
			}
			exec(t, db, "UPDATE items SET refresh_rrule = 'RRULE:FREQ=DAILY' WHERE k = 2")
			rows := []models.Row{
				{Key: "1", State: fullState(1), Rule: "ignored"},
				{Key: "2", State: policy.State{}}, // every NULL
				{Key: "3", State: fullState(3)},
				{Key: "404", State: fullState(4)}, // no such row: ignored
			}
			must(t, s.Tx(ctx, func(tx models.Tx) error { return tx.Save(ctx, tbl, rows) }))
			got := lockAll(t, s, tbl, "1", "2", "3", "404")
			eq(t, len(got), 3, "rows found")
			for _, r := range rows[:3] {
				eq(t, got[r.Key].State, r.State, "state of ", r.Key)
			}
			eq(t, got["1"].Rule, "", "Save does not write refresh_rrule")
			eq(t, got["2"].Rule, "RRULE:FREQ=DAILY")
			var n int
			must(t, db.QueryRow("SELECT COUNT(*) FROM items").Scan(&n))
			eq(t, n, 3, "Save inserted rows")
		})
	}
}

func TestSaveLimitsAndDuplicates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testDB(t)
	s := New(db)
	tbl := itemsTable(t, db, "CHAR(20)")
	insertItem(t, db, "a", base)
	long := strings.Repeat("é", 2000)
	st := policy.State{LastError: long, DisabledReason: "bad \xff byte", Status: long, AttemptNo: 1}
	must(t, s.Tx(ctx, func(tx models.Tx) error {
		return tx.Save(ctx, tbl, []models.Row{{Key: "a", State: policy.State{AttemptNo: 9}}, {Key: "a", State: st}})
	}))
	got := lockAll(t, s, tbl, "a")["a"].State
	eq(t, got.AttemptNo, 1, "last row wins")
	// One rule for every text: policy.Truncate's (the last character kept
	// becomes "…").
	eq(t, got.LastError, policy.Truncate(long, policy.MaxLastErrorLen))
	eq(t, got.LastError, strings.Repeat("é", 1023)+"…")
	eq(t, got.Status, strings.Repeat("é", 254)+"…")
	eq(t, got.DisabledReason, "bad \uFFFD byte")
}

func TestSaveBatches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testDB(t)
	s := New(db)
	tbl := itemsTable(t, db, "INT")
	insertItems(t, db, 2500)
	rows := make([]models.Row, 2500)
	for i := range rows {
		rows[i] = models.Row{Key: fmt.Sprint(i + 1), State: fullState(i)}
	}
	must(t, s.Tx(ctx, func(tx models.Tx) error { return tx.Save(ctx, tbl, rows) }))
	var n int
	must(t, db.QueryRow("SELECT COUNT(*) FROM items WHERE refresh_attempt_no = k + 2").Scan(&n))
	eq(t, n, 2500, "rows written across batches")
}

func TestSaveIfAttempt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testDB(t)
	s := New(db)
	tbl := itemsTable(t, db, "CHAR(20)")
	for _, k := range []string{"a", "b", "c", "d"} {
		insertItem(t, db, k, base)
	}
	started := map[string]policy.State{}
	for i, k := range []string{"a", "b", "c"} {
		st := fullState(i)
		st.AttemptUID = "attempt-" + k
		started[k] = st
	}
	must(t, s.Tx(ctx, func(tx models.Tx) error {
		return tx.Save(ctx, tbl, []models.Row{{Key: "a", State: started["a"]}, {Key: "b", State: started["b"]}, {Key: "c", State: started["c"]}})
	}))
	// Meanwhile b's attempt was replaced (say by an enable).
	exec(t, db, "UPDATE items SET refresh_attempt_uid = NULL, refresh_at = ? WHERE k = 'b'", dbTime(base.Add(time.Hour)))

	before := policy.State{RefreshAt: base, AttemptNo: 2, LastError: "was failing", FailingSince: base.Add(-time.Hour)}
	undo := []models.Row{{Key: "a", State: before}, {Key: "b", State: before}, {Key: "c", State: before}, {Key: "d", State: before}}
	n, err := s.SaveIfAttempt(ctx, tbl, undo, []string{"attempt-a", "attempt-b", "attempt-c", "attempt-d"})
	must(t, err)
	eq(t, n, 2, "rows undone")
	got := lockAll(t, s, tbl, "a", "b", "c", "d")
	eq(t, got["a"].State, before, "a undone")
	eq(t, got["c"].State, before, "c undone")
	eq(t, got["b"].State.AttemptUID, "", "b untouched")
	eq(t, got["b"].State.RefreshAt, base.Add(time.Hour), "b untouched")
	eq(t, got["d"].State, policy.State{RefreshAt: base}, "d untouched: its uid was NULL")

	// "" guards on NULL.
	n, err = s.SaveIfAttempt(ctx, tbl, []models.Row{{Key: "d", State: before}}, []string{""})
	must(t, err)
	eq(t, n, 1)
	eq(t, lockAll(t, s, tbl, "d")["d"].State, before)

	_, err = s.SaveIfAttempt(ctx, tbl, undo, nil)
	errContains(t, err, "4 rows but 0 attempt UIDs")
}

func TestLockByKeys(t *testing.T) {
	t.Parallel()
	for _, keyType := range []string{"BIGINT UNSIGNED", "CHAR(20) CHARACTER SET ascii"} {
		t.Run(keyType, func(t *testing.T) {
			t.Parallel()
			db := testDB(t)
			s := New(db)
			tbl := itemsTable(t, db, keyType)
			exec(t, db, "INSERT INTO items (k, input_url, size, price, ratio, created, day, raw, doc, refresh_rrule) VALUES "+
				"(18446744073709551615, 'https://example.com/x', 42, 12.50, 0.25, '2026-01-02 03:04:05.000006', '2026-01-02', X'00FF41', '{\"a\": [1, 2]}', 'RRULE:FREQ=HOURLY'), "+
				"(7, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)")
			got := lockAll(t, s, tbl, "18446744073709551615", "7", "7", "8", "nope")
			eq(t, len(got), 2, "found rows")
			big := got["18446744073709551615"]
			eq(t, big.Key, "18446744073709551615")
			eq(t, big.Rule, "RRULE:FREQ=HOURLY")
			eq(t, big.Payload.Map(), map[string]any(nil), "LockByKeys reads no payload")
			eq(t, got["7"].State, policy.State{})
			eq(t, len(lockAll(t, s, tbl)), 0, "no keys")

			// ClaimDue reads the payload, each type as jobs carry it.
			exec(t, db, "UPDATE items SET refresh_at = ?", dbTime(base))
			var claimed []models.Row
			must(t, s.Tx(context.Background(), func(tx models.Tx) (err error) {
				claimed, err = tx.ClaimDue(context.Background(), tbl, base, models.Cursor{}, 10)
				return err
			}))
			got = map[string]models.Row{}
			for _, r := range claimed {
				got[r.Key] = r
			}
			big = got["18446744073709551615"]
			eq(t, big.Payload.Map(), map[string]any{
				"input_url": "https://example.com/x", "size": int64(42), "price": "12.50", "ratio": 0.25,
				"created": "2026-01-02T03:04:05.000006Z", "day": "2026-01-02T00:00:00Z",
				"raw": "\x00\xffA", "doc": `{"a": [1, 2]}`,
			}, "payload")
			if _, err := json.Marshal(big.Payload.Map()); err != nil {
				t.Fatalf("payload is not JSON-friendly: %v", err)
			}
			eq(t, got["7"].Payload.Map(), map[string]any{"input_url": nil, "size": nil, "price": nil, "ratio": nil, "created": nil, "day": nil, "raw": nil, "doc": nil})
		})
	}
}

// TestLockByKeysWaits: a key locked by a claim is not skipped but waited for.
func TestLockByKeysWaits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testDB(t)
	s := New(db)
	tbl := itemsTable(t, db, "INT")
	insertItem(t, db, 1, base)

	claimed := make(chan struct{})
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.Tx(ctx, func(tx models.Tx) error {
			rows, err := tx.ClaimDue(ctx, tbl, base, models.Cursor{}, 10)
			if err == nil && len(rows) != 1 {
				err = fmt.Errorf("claimed %d rows", len(rows))
			}
			if err != nil {
				close(claimed)
				return err
			}
			st := rows[0].State
			st.AttemptUID = "attempt-1"
			close(claimed)
			<-release
			rows[0].State = st
			return tx.Save(ctx, tbl, rows)
		})
	}()
	<-claimed
	var got map[string]models.Row
	locked := make(chan error, 1)
	go func() {
		locked <- s.Tx(ctx, func(tx models.Tx) (err error) {
			got, err = tx.LockByKeys(ctx, tbl, []string{"1"})
			return err
		})
	}()
	select {
	case err := <-locked:
		t.Fatalf("LockByKeys did not wait for the claiming transaction (err %v)", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	// The claim's Save by primary key does not deadlock with LockByKeys,
	// which holds the key index entry and waits for the row.
	must(t, <-done)
	must(t, <-locked)
	eq(t, got["1"].State.AttemptUID, "attempt-1", "LockByKeys sees the committed attempt")
}

func TestTxRollsBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testDB(t)
	s := New(db)
	tbl := itemsTable(t, db, "INT")
	insertItem(t, db, 1, base)
	boom := fmt.Errorf("boom")
	err := s.Tx(ctx, func(tx models.Tx) error {
		must(t, tx.Save(ctx, tbl, []models.Row{{Key: "1", State: fullState(1)}}))
		return boom
	})
	eq(t, err, boom)
	eq(t, lockAll(t, s, tbl, "1")["1"].State, policy.State{RefreshAt: base}, "rolled back")

	func() {
		defer func() { _ = recover() }()
		_ = s.Tx(ctx, func(tx models.Tx) error {
			must(t, tx.Save(ctx, tbl, []models.Row{{Key: "1", State: fullState(1)}}))
			panic("oops")
		})
	}()
	eq(t, lockAll(t, s, tbl, "1")["1"].State, policy.State{RefreshAt: base}, "rolled back after panic")
}

// With every row due, a claim walks the refresh_at index and stops at its
// limit: its cost does not grow with the number of due rows. (ClaimDue also
// forces the index, since the optimizer has been seen to pick a full scan
// and a filesort of every due row when most of a large table is due.) An
// index on refresh_at of the application's own, under another name, serves
// as well.
func TestClaimDueWalksTheIndexWhenAllAreDue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testDB(t)
	s := New(db)
	tbl := itemsTable(t, db, "INT")
	insertItems(t, db, 5000)
	exec(t, db, "ANALYZE TABLE items")

	claimReads := func(s *Store) {
		t.Helper()
		status := func(mtx models.Tx, name string) int {
			tx := mtx.(*Tx)
			var n string
			var v int
			must(t, tx.tx.QueryRowContext(ctx, "SHOW SESSION STATUS LIKE '"+name+"'").Scan(&n, &v))
			return v
		}
		must(t, s.Tx(ctx, func(tx models.Tx) error {
			scanned, sorted := status(tx, "Handler_read_rnd_next"), status(tx, "Sort_rows")
			got, err := tx.ClaimDue(ctx, tbl, base, models.Cursor{}, 10)
			must(t, err)
			eq(t, len(got), 10)
			scanned, sorted = status(tx, "Handler_read_rnd_next")-scanned, status(tx, "Sort_rows")-sorted
			if scanned > 100 || sorted > 100 {
				t.Errorf("claiming 10 of 5000 due rows scanned %d rows and sorted %d: the refresh_at index is not used", scanned, sorted)
			}
			return nil
		}))
	}
	claimReads(s)
	exec(t, db, "ALTER TABLE items DROP INDEX idx_refresh_at, ADD INDEX app_refresh (refresh_at, k)")
	claimReads(New(db))
}

// TestSaveWritesOnlyWhatChanged saves rows read by LockByKeys: a row where
// nothing changed is not written at all (an update trigger proves it), the
// statement sets only the columns that changed in some row, and values set
// back to NULL are written as NULL.
func TestSaveWritesOnlyWhatChanged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testDB(t)
	s := New(db)
	tbl := itemsTable(t, db, "CHAR(20)")
	for i := 1; i <= 3; i++ {
		insertItem(t, db, i, base)
	}
	must(t, s.Tx(ctx, func(tx models.Tx) error {
		return tx.Save(ctx, tbl, []models.Row{{Key: "1", State: fullState(1)}, {Key: "2", State: fullState(2)}, {Key: "3", State: fullState(3)}})
	}))
	exec(t, db, "CREATE TABLE upd_log (k CHAR(20))")
	exec(t, db, "CREATE TRIGGER items_upd AFTER UPDATE ON items FOR EACH ROW INSERT INTO upd_log VALUES (NEW.k)")

	want := map[string]policy.State{"1": fullState(1), "2": fullState(2), "3": {}}
	want["1"] = func(s policy.State) policy.State { s.AttemptUID, s.Status = "", "done"; return s }(want["1"])
	must(t, s.Tx(ctx, func(tx models.Tx) error {
		locked, err := tx.LockByKeys(ctx, tbl, []string{"1", "2", "3"})
		if err != nil {
			return err
		}
		rows := make([]models.Row, 0, 3)
		for _, k := range []string{"1", "2", "3"} {
			r := locked[k]
			r.State = want[k]
			rows = append(rows, r)
		}
		groups := models.GroupByID(rows, nil, false, true, nil)
		eq(t, len(groups), 1, "groups")
		eq(t, len(groups[0].Rows), 2, "rows to write (2 did not change)")
		// models.Row 3 cleared every column but attempt_no (3+3 -> 0 changed too).
		eq(t, groups[0].Cols, models.AllColumns, "columns of rows 1 and 3")
		only1 := models.GroupByID(rows[:1], nil, false, true, nil)[0].Cols
		eq(t, only1, models.ColumnSet(1<<1|1<<10), "columns of row 1: attempt_uid and status")
		return tx.Save(ctx, tbl, rows)
	}))
	got := lockAll(t, s, tbl, "1", "2", "3")
	for k, st := range want {
		eq(t, got[k].State, st, "state of ", k)
	}
	var written []string
	rs, err := db.Query("SELECT k FROM upd_log ORDER BY k")
	must(t, err)
	for rs.Next() {
		var k string
		must(t, rs.Scan(&k))
		written = append(written, k)
	}
	must(t, rs.Err())
	eq(t, written, []string{"1", "3"}, "rows updated")
}

// TestSaveSetsSharedValuesOnce: a column with one value in every row of the
// batch is set from an argument, the others travel per row in the JSON
// document; both end up in the rows.
func TestSaveSetsSharedValuesOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testDB(t)
	s := New(db)
	tbl := itemsTable(t, db, "INT")
	insertItems(t, db, 3)
	at := base.Add(time.Hour + 7*time.Microsecond)
	rows := make([]models.Row, 3)
	for i := range rows {
		rows[i] = models.Row{Key: fmt.Sprint(i + 1), State: policy.State{RefreshAt: at, AttemptUID: fmt.Sprintf("d1v5bqh6n88c7389%04d", i), AttemptNo: 1, Status: "queued ✓"}}
	}
	q, err := s.compile(ctx, tbl)
	must(t, err)
	ptrs := []*models.Row{&rows[0], &rows[1], &rows[2]}
	query, args := jsonUpdate(q, q.key, q.meta.cols["k"], q.meta.cols[models.ColAttemptUID], models.AllColumns, []string{"1", "2", "3"}, ptrs, nil, nil)
	if !strings.Contains(query, "t.`refresh_at` = ?") || !strings.Contains(query, "t.`refresh_attempt_uid` = j.`c1`") || strings.Contains(query, "'$.c0'") {
		t.Fatalf("shared columns not set from arguments: %s", query)
	}
	eq(t, len(args), 1+models.NumStateColumns-1, "arguments: the document and the 10 shared columns")

	must(t, s.Tx(ctx, func(tx models.Tx) error { return tx.Save(ctx, tbl, rows) }))
	got := lockAll(t, s, tbl, "1", "2", "3")
	for _, r := range rows {
		eq(t, got[r.Key].State, r.State, "state of ", r.Key)
	}
}

// TestNextDueReadsFewRows: NextDue walks the refresh_at index and stops at
// the first row with a key, skipping rows with a NULL key, instead of
// scanning the table (the dispatcher asks after every short pass). The
// database's own row counter (Handler_read_*) on a single connection tells.
func TestNextDueReadsFewRows(t *testing.T) {
	t.Parallel()
	db := testDB(t)
	db.SetMaxOpenConns(1) // one session, so its status counters are NextDue's
	s := New(db)
	tbl := itemsTable(t, db, "INT")
	exec(t, db, "ALTER TABLE items MODIFY k INT NULL")
	insertItems(t, db, 5000)
	exec(t, db, "UPDATE items SET refresh_at = refresh_at + INTERVAL k SECOND")
	exec(t, db, "INSERT INTO items (k, refresh_at) VALUES (NULL, ?), (NULL, ?)", dbTime(base.Add(-time.Hour)), dbTime(base))
	_, _, err := s.NextDue(context.Background(), tbl) // loads the table's metadata
	must(t, err)

	reads := func() (n int64) {
		rs, err := db.Query("SHOW SESSION STATUS LIKE 'Handler_read%'")
		must(t, err)
		defer rs.Close()
		for rs.Next() {
			var name string
			var v int64
			must(t, rs.Scan(&name, &v))
			n += v
		}
		must(t, rs.Err())
		return n
	}
	before := reads()
	next, ok, err := s.NextDue(context.Background(), tbl)
	must(t, err)
	read := reads() - before
	eq(t, ok, true)
	eq(t, next, base.Add(time.Second), "first refresh_at of a row with a key")
	if read > 20 {
		t.Fatalf("NextDue read %d rows of a 5002-row table, want a few", read)
	}

	// NextDueMany's subqueries read the same way: 3 times the table, a few
	// rows each.
	before = reads()
	many, err := s.NextDueMany(context.Background(), []models.Table{tbl, tbl, tbl})
	must(t, err)
	read = reads() - before
	eq(t, many, []models.Next{{At: base.Add(time.Second), OK: true}, {At: base.Add(time.Second), OK: true}, {At: base.Add(time.Second), OK: true}})
	if read > 60 {
		t.Fatalf("NextDueMany read %d rows of 3 times a 5002-row table, want a few each", read)
	}
}

// TestSaveReplacesZeroDate: a zero date in refresh_at (allowed by MariaDB's
// default SQL mode) reads like NULL; saving the row writes NULL, so the row
// is not claimed again and again.
func TestSaveReplacesZeroDate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testDB(t)
	s := New(db)
	tbl := itemsTable(t, db, "INT")
	conn, err := db.Conn(ctx) // one session with a lax SQL mode
	must(t, err)
	_, err = conn.ExecContext(ctx, "SET SESSION sql_mode = ''")
	must(t, err)
	_, err = conn.ExecContext(ctx, "INSERT INTO items (k, refresh_at) VALUES (1, '0000-00-00 00:00:00')")
	must(t, err)
	must(t, conn.Close())
	var claimed []models.Row
	must(t, s.Tx(ctx, func(tx models.Tx) (err error) {
		if claimed, err = tx.ClaimDue(ctx, tbl, base, models.Cursor{}, 10); err != nil {
			return err
		}
		return tx.Save(ctx, tbl, claimed) // unchanged: RefreshAt stays zero
	}))
	eq(t, len(claimed), 1, "zero date claimed")
	var n int
	must(t, db.QueryRow("SELECT COUNT(*) FROM items WHERE refresh_at IS NULL").Scan(&n))
	eq(t, n, 1, "zero date replaced by NULL")
}

// SaveSuccesses's UPDATE is driven by its JSON document: each row is found
// through the key's unique index (eq_ref), never by scanning the table,
// whatever the extra conditions of its join.
func TestSaveSuccessesPlan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, keyType := range []string{"INT", "CHAR(20)"} {
		db := testDB(t)
		tbl := itemsTable(t, db, keyType)
		insertItems(t, db, 5000)
		exec(t, db, "ANALYZE TABLE items")
		q, err := New(db).compile(ctx, tbl)
		must(t, err)
		rows := []*models.Row{{Key: "7"}, {Key: "8"}}
		_, keyMeta := q.by(false)
		query, args := jsonUpdate(q, q.key, keyMeta, q.meta.cols[models.ColAttemptUID], models.SuccessColumns,
			[]string{"7", "8"}, rows, []string{"a", "b"}, &base)
		res, err := db.QueryContext(ctx, "EXPLAIN "+query, args...)
		must(t, err)
		cols, _ := res.Columns()
		var plan []string
		for res.Next() {
			vals := make([]sql.NullString, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			must(t, res.Scan(ptrs...))
			line := map[string]string{}
			for i, c := range cols {
				line[c] = vals[i].String
			}
			plan = append(plan, line["table"]+":"+line["type"]+":"+line["key"])
		}
		res.Close()
		eq(t, plan, []string{"j:ALL:", "t:eq_ref:uk"}, keyType, "plan")
	}
}
