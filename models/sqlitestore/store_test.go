package sqlitestore

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
)

func TestCheck(t *testing.T) {
	each(t, func(t *testing.T, h harness) {
		ctx := context.Background()
		s := h.open(t)
		tbl := itemsTable(t, s, "TEXT")
		must(t, s.Check(ctx, tbl))
		must(t, s.Check(ctx, models.Table{Name: "ITEMS", Key: "id"})) // INTEGER PRIMARY KEY is unique

		errContains(t, s.Check(ctx, models.Table{Name: "nope", Key: "k"}), `table "nope" does not exist`, "`table:`")
		err := s.Check(ctx, models.Table{Name: "items", Key: "kk", Payload: []string{"input_url", "url2", "size3"}})
		errContains(t, err, `no key column "kk"`, "`key:`", `no payload column(s) "url2", "size3"`, "`payload:`")
		errContains(t, s.Check(ctx, models.Table{Name: "items", Key: "input_url"}), `key column "input_url" of table "items" has no unique index`, "CREATE UNIQUE INDEX")
		// A partial UNIQUE index holds only some rows: keys outside it may repeat.
		exec(t, s, "CREATE UNIQUE INDEX uk_items_url_partial ON items (input_url) WHERE size IS NOT NULL")
		errContains(t, s.Check(ctx, models.Table{Name: "items", Key: "input_url"}), `key column "input_url" of table "items" has no unique index`, "CREATE UNIQUE INDEX")

		exec(t, s, "ALTER TABLE items DROP COLUMN refresh_status")
		exec(t, s, "ALTER TABLE items DROP COLUMN refresh_rrule")
		errContains(t, s.Check(ctx, tbl), "lacks refresh column(s) refresh_rrule, refresh_status", "run `refresher migrate --config FILE`")
		errContains(t, s.Check(ctx, models.Table{Name: "items", Key: ""}), "empty table or column name")
	})
}

func TestClaimDue(t *testing.T) {
	each(t, func(t *testing.T, h harness) {
		ctx := context.Background()
		s := h.open(t)
		tbl := itemsTable(t, s, "INTEGER")
		now := base
		// Inserted out of order; 7 and 8 are not due, 9 has no refresh_at.
		for _, k := range []int{3, 1, 5, 2, 4, 6} {
			insertItem(t, s, k, now.Add(-time.Duration(10-k)*time.Minute))
		}
		insertItem(t, s, 7, now.Add(time.Microsecond))
		insertItem(t, s, 8, now.Add(time.Hour))
		exec(t, s, "INSERT INTO items (k) VALUES (9)")
		exec(t, s, "UPDATE items SET input_url = 'https://x/1', size = 42, price = 9.5, ratio = 0.25, created = ?, day = '2026-01-02', raw = x'00ff', refresh_rrule = 'FREQ=DAILY' WHERE k = 1", dbTime(base))

		rows := claim(t, s, tbl, now, time.Time{}, 4)
		eq(t, keysOf(rows), []string{"1", "2", "3", "4"}, "earliest first, limit")
		eq(t, rows[0].Rule, "FREQ=DAILY")
		eq(t, rows[0].State.RefreshAt, now.Add(-9*time.Minute))
		eq(t, rows[0].Payload.Map(), map[string]any{"input_url": "https://x/1", "size": int64(42), "price": 9.5, "ratio": 0.25,
			"created": base.Format(time.RFC3339Nano), "day": "2026-01-02T00:00:00Z", "raw": "\x00\xff"})
		eq(t, rows[1].Payload.Get("input_url"), nil, "NULL payload")
		eq(t, rows[0].Loaded.OK, true)
		eq(t, rows[0].Loaded.ID, "2", "the rowid (k 1 was inserted second)")

		eq(t, keysOf(claim(t, s, tbl, now, time.Time{}, 100)), []string{"1", "2", "3", "4", "5", "6"}, "all due, not 7-9")
		eq(t, keysOf(claim(t, s, tbl, now, now.Add(-6*time.Minute), 100)), []string{"4", "5", "6"}, "from is a cursor (inclusive)")
		eq(t, keysOf(claim(t, s, tbl, now.Add(time.Microsecond), time.Time{}, 100)), []string{"1", "2", "3", "4", "5", "6", "7"}, "refresh_at <= now")

		exec(t, s, "CREATE TABLE nk (id INTEGER PRIMARY KEY, k TEXT UNIQUE)")
		_, err := s.Migrate(ctx, []string{"nk"}, nilWriter{}, false)
		must(t, err)
		exec(t, s, "INSERT INTO nk (k, refresh_at) VALUES (NULL, ?), ('a', ?)", dbTime(base.Add(-time.Hour)), dbTime(base))
		nk := models.Table{Name: "nk", Key: "k"}
		eq(t, keysOf(claim(t, s, nk, now, time.Time{}, 10)), []string{"a"}, "NULL key never claimed")
		next, ok, err := s.NextDue(ctx, nk)
		must(t, err)
		eq(t, ok, true)
		eq(t, next, base, "NextDue skips NULL keys")

		err = s.Tx(ctx, func(tx models.Tx) error { _, err := tx.ClaimDue(ctx, tbl, now, models.Cursor{}, 0); return err })
		errContains(t, err, "limit 0 must be positive")
	})
}

type nilWriter struct{}

func (nilWriter) Write(p []byte) (int, error) { return len(p), nil }

func TestClaimUsesTheIndex(t *testing.T) {
	t.Parallel()
	s := harnesses[0].open(t)
	tbl := itemsTable(t, s, "TEXT")
	q, err := s.compile(context.Background(), s.DB(), tbl)
	must(t, err)
	eq(t, q.meta.refreshIndex, "idx_refresh_at")
	rows, err := s.DB().Query("EXPLAIN QUERY PLAN "+q.selectFrom+` INDEXED BY "idx_refresh_at" WHERE "refresh_at" <= ? AND "k" IS NOT NULL ORDER BY "refresh_at" LIMIT 10`, dbTime(base))
	must(t, err)
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		must(t, rows.Scan(&id, &parent, &notused, &detail))
		plan = append(plan, detail)
	}
	p := strings.Join(plan, "; ")
	if !strings.Contains(p, "USING INDEX idx_refresh_at (refresh_at<?)") || strings.Contains(p, "TEMP B-TREE") {
		t.Fatalf("claim does not walk the index in order: %s", p)
	}
}

func TestNextDue(t *testing.T) {
	each(t, func(t *testing.T, h harness) {
		ctx := context.Background()
		s := h.open(t)
		tbl := itemsTable(t, s, "TEXT")
		_, ok, err := s.NextDue(ctx, tbl)
		must(t, err)
		eq(t, ok, false, "empty table")
		exec(t, s, "INSERT INTO items (k) VALUES ('none')")
		_, ok, err = s.NextDue(ctx, tbl)
		must(t, err)
		eq(t, ok, false, "no refresh_at")
		insertItem(t, s, "b", base.Add(time.Hour))
		insertItem(t, s, "a", base.Add(-time.Hour))
		next, ok, err := s.NextDue(ctx, tbl)
		must(t, err)
		eq(t, ok, true)
		eq(t, next, base.Add(-time.Hour), "earliest, in the past")
	})
}

func TestSaveRoundTrip(t *testing.T) {
	for _, keyType := range []string{"INTEGER", "TEXT", "CHAR(20) COLLATE NOCASE"} {
		t.Run(keyType, func(t *testing.T) {
			each(t, func(t *testing.T, h harness) {
				ctx := context.Background()
				s := h.open(t)
				tbl := itemsTable(t, s, keyType)
				for i := 1; i <= 3; i++ {
					insertItem(t, s, fmt.Sprint(i), base)
				}
				exec(t, s, "UPDATE items SET refresh_rrule = 'RRULE:FREQ=DAILY' WHERE k = '2'")
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
				var n, nulls int
				must(t, s.DB().QueryRow("SELECT COUNT(*) FROM items").Scan(&n))
				eq(t, n, 3, "Save inserted rows")
				must(t, s.DB().QueryRow(`SELECT (refresh_at IS NULL) + (refresh_attempt_uid IS NULL) + (refresh_last_error IS NULL) + (refresh_status IS NULL) FROM items WHERE k = '2'`).Scan(&nulls))
				eq(t, nulls, 4, "empty values are NULL")
				var text, typ string
				must(t, s.DB().QueryRow(`SELECT CAST(refresh_attempt_at AS TEXT), typeof(refresh_attempt_at) FROM items WHERE k = '1'`).Scan(&text, &typ))
				eq(t, text, "2026-03-04 04:07:07.123457+00:00", "stored as TimeFormat")
				eq(t, typ, "text")

				// Rows read and saved again go by rowid; only what changed.
				got1 := got["1"]
				got1.State.AttemptNo = 77
				must(t, s.Tx(ctx, func(tx models.Tx) error { return tx.Save(ctx, tbl, []models.Row{got1}) }))
				want := fullState(1)
				want.AttemptNo = 77
				eq(t, lockAll(t, s, tbl, "1")["1"].State, want)
			})
		})
	}
}

func TestSaveLimitsAndDuplicates(t *testing.T) {
	each(t, func(t *testing.T, h harness) {
		ctx := context.Background()
		s := h.open(t)
		tbl := itemsTable(t, s, "TEXT")
		insertItem(t, s, "a", base)
		long := strings.Repeat("é", 2000)
		st := policy.State{LastError: long, DisabledReason: "bad \xff byte", Status: long, AttemptNo: 1, AttemptUID: strings.Repeat("x", 30)}
		must(t, s.Tx(ctx, func(tx models.Tx) error {
			return tx.Save(ctx, tbl, []models.Row{{Key: "a", State: policy.State{AttemptNo: 9}}, {Key: "a", State: st}})
		}))
		got := lockAll(t, s, tbl, "a")["a"].State
		eq(t, got.AttemptNo, 1, "last row wins")
		eq(t, got.LastError, strings.Repeat("é", 1023)+"…")
		eq(t, got.Status, strings.Repeat("é", 254)+"…")
		eq(t, got.DisabledReason, "bad \uFFFD byte")
		eq(t, got.AttemptUID, strings.Repeat("x", 19)+"…")

		// Exactly at the limits: kept whole.
		st = policy.State{LastError: long[:2*1024], DisabledReason: strings.Repeat("z", 1024), Status: strings.Repeat("ü", 255)}
		must(t, s.Tx(ctx, func(tx models.Tx) error { return tx.Save(ctx, tbl, []models.Row{{Key: "a", State: st}}) }))
		eq(t, lockAll(t, s, tbl, "a")["a"].State, st)
	})
}

func TestSaveBatches(t *testing.T) {
	each(t, func(t *testing.T, h harness) {
		ctx := context.Background()
		s := h.open(t)
		tbl := itemsTable(t, s, "INTEGER")
		insertItems(t, s, 2500)
		rows := make([]models.Row, 2500)
		for i := range rows {
			rows[i] = models.Row{Key: fmt.Sprint(i + 1), State: fullState(i)}
		}
		must(t, s.Tx(ctx, func(tx models.Tx) error { return tx.Save(ctx, tbl, rows) }))
		var n int
		must(t, s.DB().QueryRow("SELECT COUNT(*) FROM items WHERE refresh_attempt_no = k + 2").Scan(&n))
		eq(t, n, 2500, "rows written across batches")

		// Claimed rows, saved by rowid, across batches too.
		claimed := claim(t, s, tbl, base.Add(time.Hour*100), time.Time{}, 2500)
		eq(t, len(claimed), 2500)
		for i := range claimed {
			claimed[i].State.AttemptNo = 1
		}
		must(t, s.Tx(ctx, func(tx models.Tx) error { return tx.Save(ctx, tbl, claimed) }))
		must(t, s.DB().QueryRow("SELECT COUNT(*) FROM items WHERE refresh_attempt_no = 1").Scan(&n))
		eq(t, n, 2500, "claimed rows written")
	})
}

func TestSaveWritesOnlyWhatChanged(t *testing.T) {
	each(t, func(t *testing.T, h harness) {
		ctx := context.Background()
		s := h.open(t)
		tbl := itemsTable(t, s, "TEXT")
		insertItem(t, s, "a", base)
		insertItem(t, s, "b", base)
		must(t, s.Tx(ctx, func(tx models.Tx) error {
			rows, err := tx.ClaimDue(ctx, tbl, base, models.Cursor{}, 10)
			if err != nil {
				return err
			}
			// Behind the read, in the same transaction, someone writes
			// refresh_last_error of both rows and refresh_status of b.
			if _, err := tx.(*Tx).tx.Exec("UPDATE items SET refresh_last_error = 'kept', refresh_status = k"); err != nil {
				return err
			}
			rows[0].State.AttemptNo = 5
			rows[0].State.AttemptUID = "u"
			// rows[1] unchanged: not written at all.
			return tx.Save(ctx, tbl, rows)
		}))
		got := lockAll(t, s, tbl, "a", "b")
		eq(t, got["a"].State, policy.State{RefreshAt: base, AttemptNo: 5, AttemptUID: "u", LastError: "kept", Status: "a"})
		eq(t, got["b"].State, policy.State{RefreshAt: base, LastError: "kept", Status: "b"})
	})
}

func TestSaveReplacesUnreadableTime(t *testing.T) {
	each(t, func(t *testing.T, h harness) {
		ctx := context.Background()
		s := h.open(t)
		tbl := itemsTable(t, s, "TEXT")
		// Running: the claim reads refresh_failing_since of running rows
		// only (models.ClaimRest).
		exec(t, s, "INSERT INTO items (k, refresh_at, refresh_attempt_uid, refresh_failing_since) VALUES ('a', ?, 'u0', 'yesterday')", dbTime(base))
		must(t, s.Tx(ctx, func(tx models.Tx) error {
			rows, err := tx.ClaimDue(ctx, tbl, base, models.Cursor{}, 10)
			if err != nil {
				return err
			}
			eq(t, rows[0].Loaded.OK, false, "unreadable time")
			eq(t, rows[0].State.FailingSince, time.Time{}, "reads as NULL")
			rows[0].State.AttemptNo = 1
			return tx.Save(ctx, tbl, rows)
		}))
		var fs any
		must(t, s.DB().QueryRow("SELECT refresh_failing_since FROM items").Scan(&fs))
		eq(t, fs, nil, "written in full")
	})
}

func TestReadsOtherTimeFormats(t *testing.T) {
	each(t, func(t *testing.T, h harness) {
		s := h.open(t)
		tbl := itemsTable(t, s, "TEXT")
		for k, v := range map[string]string{
			"a": "2026-03-04 05:06:07.123456",
			"b": "2026-03-04 05:06:07.123456+00:00",
			"c": "2026-03-04T05:06:07.123456Z",
			"d": "2026-03-04 06:06:07.123456+01:00",
			"e": "2026-03-04 05:06:07.123456 +0000 UTC",
			"f": "2026-03-04T05:06:07.123456",
		} {
			exec(t, s, "INSERT INTO items (k, refresh_attempt_at) VALUES (?, ?)", k, v)
		}
		for k, r := range lockAll(t, s, tbl, "a", "b", "c", "d", "e", "f") {
			eq(t, r.State.AttemptAt, base, "format of ", k)
			eq(t, r.Loaded.OK, true, k)
		}
	})
}

func TestSaveIfAttempt(t *testing.T) {
	each(t, func(t *testing.T, h harness) {
		ctx := context.Background()
		s := h.open(t)
		tbl := itemsTable(t, s, "TEXT")
		for _, k := range []string{"a", "b", "c", "d"} {
			insertItem(t, s, k, base)
		}
		var claimed []models.Row
		must(t, s.Tx(ctx, func(tx models.Tx) (err error) {
			claimed, err = tx.ClaimDue(ctx, tbl, base, models.Cursor{}, 10)
			if err != nil {
				return err
			}
			for i := range claimed[:3] {
				claimed[i].State.AttemptUID = "attempt-" + claimed[i].Key
			}
			return tx.Save(ctx, tbl, claimed)
		}))
		// Meanwhile b's attempt was replaced (say by an enable).
		exec(t, s, "UPDATE items SET refresh_attempt_uid = NULL, refresh_at = ? WHERE k = 'b'", dbTime(base.Add(time.Hour)))

		before := policy.State{RefreshAt: base, AttemptNo: 2, LastError: "was failing", FailingSince: base.Add(-time.Hour)}
		undo := make([]models.Row, 4)
		for i := range undo {
			undo[i] = claimed[i] // with Loaded: written by rowid
			undo[i].State = before
		}
		undo[3] = models.Row{Key: "d", State: before} // by key
		n, err := s.SaveIfAttempt(ctx, tbl, undo, []string{"attempt-a", "attempt-b", "attempt-c", "attempt-d"})
		must(t, err)
		eq(t, n, 2, "rows undone")
		got := lockAll(t, s, tbl, "a", "b", "c", "d")
		eq(t, got["a"].State, before, "a undone")
		eq(t, got["c"].State, before, "c undone")
		eq(t, got["b"].State, policy.State{RefreshAt: base.Add(time.Hour)}, "b untouched")
		eq(t, got["d"].State, policy.State{RefreshAt: base}, "d untouched: its uid was NULL")

		n, err = s.SaveIfAttempt(ctx, tbl, []models.Row{{Key: "d", State: before}}, []string{""})
		must(t, err)
		eq(t, n, 1, `"" guards on NULL`)
		eq(t, lockAll(t, s, tbl, "d")["d"].State, before)

		_, err = s.SaveIfAttempt(ctx, tbl, undo, nil)
		errContains(t, err, "4 rows but 0 attempt UIDs")
	})
}

func TestLockByKeys(t *testing.T) {
	each(t, func(t *testing.T, h harness) {
		s := h.open(t)
		tbl := itemsTable(t, s, "INTEGER")
		insertItems(t, s, 6000)
		keys := []string{"007", "2", "2", "99999"}
		for i := 1; i <= 6000; i++ {
			keys = append(keys, fmt.Sprint(i))
		}
		got := lockAll(t, s, tbl, keys...)
		eq(t, len(got), 6000, "across chunks, duplicates and missing keys")
		eq(t, got["7"].Key, "7", "as the database returns it")
		eq(t, got["7"].Payload.Map(), map[string]any(nil), "no payload")
		eq(t, got["7"].State, policy.State{RefreshAt: base})
	})
}

func TestTxRollsBack(t *testing.T) {
	each(t, func(t *testing.T, h harness) {
		ctx := context.Background()
		s := h.open(t)
		tbl := itemsTable(t, s, "TEXT")
		insertItem(t, s, "a", base)
		boom := fmt.Errorf("boom")
		err := s.Tx(ctx, func(tx models.Tx) error {
			must(t, tx.Save(ctx, tbl, []models.Row{{Key: "a", State: fullState(1)}}))
			return boom
		})
		eq(t, err, boom)
		func() {
			defer func() { _ = recover() }()
			_ = s.Tx(ctx, func(tx models.Tx) error {
				must(t, tx.Save(ctx, tbl, []models.Row{{Key: "a", State: fullState(1)}}))
				panic("boom")
			})
		}()
		eq(t, lockAll(t, s, tbl, "a")["a"].State, policy.State{RefreshAt: base}, "rolled back")
	})
}
