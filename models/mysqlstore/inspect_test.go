package mysqlstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
)

// TestInspect checks Counts against the states written and List's filters,
// search and keyset pages.
func TestInspect(t *testing.T) {
	db := testDB(t)
	tbl := itemsTable(t, db, "VARCHAR(64)")
	s := New(db)
	ctx := context.Background()
	now := base
	var rows []models.Row
	add := func(key string, st policy.State) { rows = append(rows, models.Row{Key: key, State: st}) }
	for i := range 5 { // due, 3 of them late
		add(fmt.Sprintf("due-%d", i), policy.State{RefreshAt: now.Add(-time.Duration(i) * 40 * time.Second)})
	}
	add("future", policy.State{RefreshAt: now.Add(time.Hour)})
	add("running", policy.State{RefreshAt: now.Add(time.Hour), AttemptUID: "a1", AttemptNo: 7, FailingSince: now.Add(-time.Hour)})
	add("off-1", policy.State{DisabledAt: now, DisabledReason: "Cannot refresh items after 3 attempt(s)", FailingSince: now, AttemptNo: 3})
	add("off_2", policy.State{DisabledAt: now, DisabledReason: "Provided URL is invalid"})
	for _, r := range rows {
		insertItem(t, db, r.Key, time.Time{})
	}
	must(t, s.Tx(ctx, func(tx models.Tx) error { return tx.Save(ctx, tbl, rows) }))

	c, err := s.Counts(ctx, tbl, now, time.Minute)
	must(t, err)
	eq(t, c, models.Counts{Total: 9, Due: 5, Late: 3, Running: 1, Failing: 1, Disabled: 2,
		OldestDue: now.Add(-160 * time.Second), MaxAttemptNo: 7}, "counts")

	keys := func(q models.ListQuery) []string {
		t.Helper()
		q.Now, q.LateAfter = now, time.Minute
		got, err := s.List(ctx, tbl, q)
		must(t, err)
		var ks []string
		for _, r := range got.Rows {
			ks = append(ks, r.Key)
		}
		return ks
	}
	eq(t, keys(models.ListQuery{State: models.StateLate}), []string{"due-2", "due-3", "due-4"}, "late")
	eq(t, keys(models.ListQuery{State: models.StateDue, Limit: 2}), []string{"due-0", "due-1"}, "due page 1")
	eq(t, keys(models.ListQuery{State: models.StateDue, Limit: 2, After: "due-1"}), []string{"due-2", "due-3"}, "due page 2")
	eq(t, keys(models.ListQuery{State: models.StateRunning}), []string{"running"}, "running")
	eq(t, keys(models.ListQuery{State: models.StateFailing}), []string{"running"}, "failing")
	eq(t, keys(models.ListQuery{State: models.StateDisabled}), []string{"off-1", "off_2"}, "disabled")
	eq(t, keys(models.ListQuery{State: models.StateDisabled, Search: "cannot REFRESH"}), []string{"off-1"}, "search reason")
	eq(t, keys(models.ListQuery{State: models.StateAll, Search: "_"}), []string{"off_2"}, "search escapes _")
	got, err := s.List(ctx, tbl, models.ListQuery{State: models.StateDisabled, Limit: 1})
	must(t, err)
	eq(t, got.Rows[0].State.DisabledReason, "Cannot refresh items after 3 attempt(s)", "reason")
	_, err = s.List(ctx, tbl, models.ListQuery{State: "bogus"})
	errContains(t, err, "unknown state")
}
