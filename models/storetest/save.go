package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/refresher/refresher/internal/payload"
	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
)

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
	eq(t, got["a"].Payload, payload.Fields(nil), "LockByKeys reads no payload")

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
		rows, err := tx.ClaimDue(ctx, tbl, base, models.Cursor{}, n)
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
