package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/refresher/refresher/models"
)

// priorityRows inserts due rows with priorities into items; the kind's
// priority is 10. Their claim order is want.
func priorityRows(t *testing.T, env Env) (tbl models.Table, want []string) {
	tbl = items(t, env, KeyString)
	tbl.Priority = 10
	for _, r := range []struct {
		key        string
		at         time.Duration
		prio, once string
	}{
		{"n1", -3 * time.Hour, "NULL", "NULL"},
		{"n2", -time.Hour, "NULL", "NULL"},
		{"p20", -4 * time.Hour, "20", "NULL"},
		{"p0", -30 * time.Minute, "0", "NULL"},
		{"p10", -2 * time.Hour, "10", "NULL"},
		{"once", -10 * time.Minute, "20", "0"},
		{"future", time.Hour, "0", "NULL"},
		{"p5b", -5 * time.Minute, "5", "NULL"},
		{"p5a", -6 * time.Minute, "5", "NULL"},
		{"neg", -time.Minute, "-3", "NULL"},
	} {
		insert(t, env, r.key, base.Add(r.at))
		env.Exec(t, "UPDATE items SET refresh_priority = "+r.prio+", refresh_priority_once = "+r.once+" WHERE k = '"+r.key+"'")
	}
	insert(t, env, "", base.Add(-time.Hour)) // NULL key: never claimed
	env.Exec(t, "UPDATE items SET refresh_priority_once = -5 WHERE k IS NULL")
	return tbl, []string{"neg", "once", "p0", "p5a", "p5b", "p10", "n1", "n2", "p20"}
}

// testClaimByPriority: the claim takes rows by priority (the one-shot one
// first, then the row's own, then the kind's for NULL), then refresh_at,
// and a batch ends in the middle of a level.
func testClaimByPriority(t *testing.T, h Harness) {
	env := h.New(t)
	tbl, want := priorityRows(t, env)
	var got []string
	for range 4 {
		rows := ClaimFrom(t, env.Store, tbl, base, models.Cursor{}, 2)
		// Move them out of the way, as the dispatcher would.
		for _, r := range rows {
			got = append(got, r.Key)
			env.Exec(t, "UPDATE items SET refresh_at = "+sqlTime(base.Add(24*time.Hour))+" WHERE k = '"+r.Key+"'")
		}
	}
	got = append(got, keysOf(ClaimFrom(t, env.Store, tbl, base, models.Cursor{}, 10))...)
	eq(t, got, want, "claim order")
}

// testClaimPrioritySources: each row says the level and the column it was
// claimed by; a one-shot priority is cleared by the claim that uses it.
func testClaimPrioritySources(t *testing.T, h Harness) {
	env := h.New(t)
	tbl, want := priorityRows(t, env)
	rows := ClaimFrom(t, env.Store, tbl, base, models.Cursor{}, 100)
	eq(t, keysOf(rows), want, "claim order")
	by := map[string]models.Priority{}
	for _, r := range rows {
		by[r.Key] = r.Priority
	}
	eq(t, by["once"], models.Priority{Level: 0, Source: models.PriorityOnce}, "one-shot")
	eq(t, by["p5a"], models.Priority{Level: 5, Source: models.PriorityRow}, "own")
	eq(t, by["n1"], models.Priority{Level: 10, Source: models.PriorityKind}, "kind's")

	// The one-shot priority served its claim: the row is back at its own.
	rows = ClaimFrom(t, env.Store, tbl, base, models.Cursor{}, 100)
	eq(t, keysOf(rows), []string{"neg", "p0", "p5a", "p5b", "p10", "n1", "n2", "p20", "once"}, "after the one-shot")
	eq(t, rows[len(rows)-1].Priority, models.Priority{Level: 20, Source: models.PriorityRow}, "once at its own priority")
}

// testClaimPriorityCursor: the cursor skips the start of its own scan only.
func testClaimPriorityCursor(t *testing.T, h Harness) {
	env := h.New(t)
	tbl, _ := priorityRows(t, env)
	from := models.Cursor{Scan: models.Priority{Level: 5, Source: models.PriorityRow}, At: base.Add(-5 * time.Minute)}
	eq(t, keysOf(ClaimFrom(t, env.Store, tbl, base, from, 100)), []string{"neg", "once", "p0", "p5b", "p10", "n1", "n2", "p20"}, "cursor in level 5")
	from = models.Cursor{Scan: models.Priority{Level: 10}, At: base.Add(-time.Hour)}
	eq(t, keysOf(ClaimFrom(t, env.Store, tbl, base, from, 100)), []string{"neg", "p0", "p5a", "p5b", "p10", "n2", "p20", "once"}, "cursor in the kind's level")
}

// testSetPriorityOnce: the operator's trigger sets a one-shot priority,
// and nil clears it.
func testSetPriorityOnce(t *testing.T, h Harness) {
	env := h.New(t)
	tbl, _ := priorityRows(t, env)
	zero, minus := 0, -10
	must(t, env.Store.Tx(context.Background(), func(tx models.Tx) error {
		if err := tx.SetPriorityOnce(context.Background(), tbl, []string{"n2", "nobody"}, &minus); err != nil {
			return err
		}
		if err := tx.SetPriorityOnce(context.Background(), tbl, []string{"once", "p20"}, nil); err != nil {
			return err
		}
		return tx.SetPriorityOnce(context.Background(), tbl, []string{"p20"}, &zero)
	}))
	rows := ClaimFrom(t, env.Store, tbl, base, models.Cursor{}, 3)
	eq(t, keysOf(rows), []string{"n2", "neg", "p20"}, "set one-shot priorities first")
	eq(t, rows[0].Priority, models.Priority{Level: -10, Source: models.PriorityOnce}, "n2's")
	eq(t, keysOf(ClaimFrom(t, env.Store, tbl, base, models.Cursor{}, 100)), []string{"neg", "p0", "p5a", "p5b", "p10", "n1", "n2", "p20", "once"}, "cleared")
}

// testClaimUrgentOnly: an urgent-only claim stops before the kind's level.
func testClaimUrgentOnly(t *testing.T, h Harness) {
	env := h.New(t)
	tbl, _ := priorityRows(t, env)
	eq(t, keysOf(ClaimFrom(t, env.Store, tbl, base, models.Cursor{UrgentOnly: true}, 100)), []string{"neg", "once", "p0", "p5a", "p5b"}, "urgent only")
	eq(t, keysOf(ClaimFrom(t, env.Store, tbl, base, models.Cursor{UrgentOnly: true}, 2)), []string{"neg", "p0"}, "urgent only, limit")
}

// testBacklog: the due rows by priority level, the kind's level always.
func testBacklog(t *testing.T, h Harness) {
	env := h.New(t)
	tbl, _ := priorityRows(t, env)
	got, err := env.Store.Backlog(context.Background(), tbl, base, nil)
	must(t, err)
	// once (20, once 0) counts at 0 and at 20 until its claim; future is
	// not due; the NULL key row counts (its one-shot level -5).
	eq(t, got, []models.LevelCount{{Level: -5, Due: 1}, {Level: -3, Due: 1}, {Level: 0, Due: 2}, {Level: 5, Due: 2},
		{Level: 10, Due: 4}, {Level: 20, Due: 2}}, "backlog")
	tbl.Priority = 30
	env.Exec(t, "UPDATE items SET refresh_at = NULL WHERE refresh_priority IS NULL")
	got, err = env.Store.Backlog(context.Background(), tbl, base, nil)
	must(t, err)
	eq(t, got[len(got)-1], models.LevelCount{Level: 30, Due: 0}, "the kind's level, empty")
}

// testBacklogKnownDue: a count of the due rows made just before (Counts.Due)
// is the kind's level when no row has a refresh_priority of its own, as
// counting gives (the one-shot levels still counted); with rows at their
// own levels the kind's level is counted.
func testBacklogKnownDue(t *testing.T, h Harness) {
	env := h.New(t)
	tbl := items(t, env, KeyString)
	tbl.Priority = 10
	for i, at := range []time.Duration{-3 * time.Hour, -time.Hour, -time.Minute, time.Hour} {
		insert(t, env, fmt.Sprintf("r%d", i), base.Add(at))
	}
	insert(t, env, "", base.Add(-time.Hour)) // NULL key: counted by both
	env.Exec(t, "UPDATE items SET refresh_priority_once = 0 WHERE k = 'r2'")
	ctx := context.Background()
	c, err := env.Store.Counts(ctx, tbl, base, time.Hour)
	must(t, err)
	counted, err := env.Store.Backlog(ctx, tbl, base, nil)
	must(t, err)
	eq(t, counted, []models.LevelCount{{Level: 0, Due: 1}, {Level: 10, Due: 4}}, "counted")
	eq(t, c.Due, int64(4), "Counts.Due: every due row, the kind's level when no row has its own")
	known, err := env.Store.Backlog(ctx, tbl, base, &c.Due)
	must(t, err)
	eq(t, known, counted, "with Counts.Due")
	marker := int64(4242) // not a count: shows it was taken
	got, err := env.Store.Backlog(ctx, tbl, base, &marker)
	must(t, err)
	eq(t, got, []models.LevelCount{{Level: 0, Due: 1}, {Level: 10, Due: 4242}}, "the known due taken, the one-shot level counted")

	env.Exec(t, "UPDATE items SET refresh_priority = 5 WHERE k = 'r0'")
	got, err = env.Store.Backlog(ctx, tbl, base, &marker)
	must(t, err)
	eq(t, got, []models.LevelCount{{Level: 0, Due: 1}, {Level: 5, Due: 1}, {Level: 10, Due: 3}}, "a row at its own level: the kind's is counted")
}

// testAlertsByLevel: the oldest due row and the highest attempt number of
// each level, levels without due rows included (a failing row waits for
// its retry without being due).
func testAlertsByLevel(t *testing.T, h Harness) {
	env := h.New(t)
	tbl, _ := priorityRows(t, env)
	insert(t, env, "w7", base.Add(2*time.Hour))
	env.Exec(t, "UPDATE items SET refresh_priority = 7, refresh_attempt_no = 9 WHERE k = 'w7'")
	for key, no := range map[string]string{"n1": "3", "p20": "1", "once": "2", "future": "6", "p5a": "4"} {
		env.Exec(t, "UPDATE items SET refresh_attempt_no = "+no+" WHERE k = '"+key+"'")
	}
	got, err := env.Store.AlertsByLevel(context.Background(), tbl, base)
	must(t, err)
	// once (20, once 0) counts at 0 and at 20 until its claim; the NULL
	// key row at -5 (once) and at the kind's 10; future is not due but its
	// attempt counts.
	eq(t, got, []models.LevelAlert{
		{Level: -5, OldestDue: base.Add(-time.Hour)},
		{Level: -3, OldestDue: base.Add(-time.Minute)},
		{Level: 0, OldestDue: base.Add(-30 * time.Minute), MaxAttemptNo: 6},
		{Level: 5, OldestDue: base.Add(-6 * time.Minute), MaxAttemptNo: 4},
		{Level: 7, MaxAttemptNo: 9},
		{Level: 10, OldestDue: base.Add(-3 * time.Hour), MaxAttemptNo: 3},
		{Level: 20, OldestDue: base.Add(-4 * time.Hour), MaxAttemptNo: 2},
	}, "alerts by level")
	tbl.Priority = 30
	env.Exec(t, "UPDATE items SET refresh_priority = 0 WHERE refresh_priority IS NULL")
	got, err = env.Store.AlertsByLevel(context.Background(), tbl, base)
	must(t, err)
	eq(t, got[len(got)-1], models.LevelAlert{Level: 30}, "the kind's level, empty")
}

// testUrgentDue: whether a row more urgent than the kind's is due.
func testUrgentDue(t *testing.T, h Harness) {
	env := h.New(t)
	tbl, _ := priorityRows(t, env)
	urgent := func(tbl models.Table, now time.Time) bool {
		yes, err := env.Store.UrgentDue(context.Background(), tbl, now)
		must(t, err)
		return yes
	}
	eq(t, urgent(tbl, base), true, "neg, p0, p5a, p5b and the one-shot rows are due")
	tbl.Priority = -10
	eq(t, urgent(tbl, base), false, "nothing below -10")
	tbl.Priority = -4
	eq(t, urgent(tbl, base), true, "the NULL key row's one-shot -5")
	env.Exec(t, "UPDATE items SET refresh_priority_once = NULL WHERE k IS NULL")
	eq(t, urgent(tbl, base), false, "nothing below -4 now")
	tbl.Priority = 0
	eq(t, urgent(tbl, base.Add(-2*time.Hour)), false, "neg (-3) is not due yet two hours earlier")
	eq(t, urgent(tbl, base), true, "neg (-3) is due")
}
