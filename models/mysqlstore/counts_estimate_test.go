package mysqlstore

import (
	"context"
	"testing"
	"time"

	"github.com/refresher/refresher/models"
)

// TestCountsEstimatesLargeTotal: above exactTotalUpTo rows by InnoDB's
// estimate, Counts gives that estimate as the total, says so, and still
// counts every state exactly; at or below it, the total is counted.
func TestCountsEstimatesLargeTotal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testDB(t)
	tbl := itemsTable(t, db, "VARCHAR(64)")
	insertItems(t, db, 300) // refresh_at = base: all due
	exec(t, db, "UPDATE items SET refresh_disabled_until_update = ? WHERE id <= 7", dbTime(base))
	exec(t, db, "ANALYZE TABLE items")
	var est int64
	must(t, db.QueryRow("SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'items'").Scan(&est))
	if est < 150 || est > 600 {
		t.Fatalf("InnoDB estimates %d rows for 300", est)
	}

	s := New(db)
	s.exactTotalUpTo = 100
	s.exactStateUpTo = 1_000_000 // every state counted
	c, err := s.Counts(ctx, tbl, base.Add(time.Minute), time.Hour)
	must(t, err)
	eq(t, c.TotalEstimated, true, "estimated above the limit")
	eq(t, c.Total, est, "total is the estimate")
	eq(t, [2]int64{c.Due, c.Disabled}, [2]int64{300, 7}, "states counted exactly")

	s.exactTotalUpTo = est
	c, err = s.Counts(ctx, tbl, base.Add(time.Minute), time.Hour)
	must(t, err)
	eq(t, c.TotalEstimated, false, "counted at the limit")
	eq(t, c.Total, int64(300), "exact total")
}

// TestCountsEstimatesLargeStates: a state with more than exactStateUpTo
// rows is the optimizer's estimate, at least exactStateUpTo+1, and listed
// in Counts.Estimated; a state at or below it is counted exactly and not
// listed.
func TestCountsEstimatesLargeStates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testDB(t)
	tbl := itemsTable(t, db, "VARCHAR(64)")
	insertItems(t, db, 2997) // refresh_at = base: all due
	exec(t, db, "UPDATE items SET refresh_at = ? WHERE id <= 1000", dbTime(base.Add(-2*time.Hour)))
	exec(t, db, "UPDATE items SET refresh_attempt_uid = CONCAT('u', id) WHERE id <= 2000")
	exec(t, db, "UPDATE items SET refresh_failing_since = ? WHERE id > 2900 AND id <= 2950", dbTime(base))
	exec(t, db, "UPDATE items SET refresh_disabled_until_update = ? WHERE id > 2990", dbTime(base))
	exec(t, db, "ANALYZE TABLE items")
	now, lateAfter := base.Add(time.Minute), time.Hour

	s := New(db)
	// A table of at most exactTotalUpTo rows counts every state, whatever
	// the cap.
	s.exactStateUpTo = 1000
	small, err := s.Counts(ctx, tbl, now, lateAfter)
	must(t, err)
	eq(t, [5]int64{small.Due, small.Late, small.Running, small.Failing, small.Disabled}, [5]int64{2997, 1000, 2000, 50, 7}, "a small table: exact above the cap")
	eq(t, len(small.Estimated), 0, "a small table: nothing estimated")

	s.exactTotalUpTo = 100 // a large table from here on
	s.exactStateUpTo = 5000
	exact, err := s.Counts(ctx, tbl, now, lateAfter)
	must(t, err)
	eq(t, [5]int64{exact.Due, exact.Late, exact.Running, exact.Failing, exact.Disabled}, [5]int64{2997, 1000, 2000, 50, 7}, "exact below the cap")
	eq(t, len(exact.Estimated), 0, "nothing estimated below the cap")

	s.exactStateUpTo = 1000
	c, err := s.Counts(ctx, tbl, now, lateAfter)
	must(t, err)
	eq(t, c.Estimated, []models.RowState{models.StateDue, models.StateRunning}, "states above the cap estimated")
	for _, st := range []struct {
		state  models.RowState
		n, was int64
	}{{models.StateDue, c.Due, 2997}, {models.StateRunning, c.Running, 2000}} {
		if !c.IsEstimated(st.state) || st.n <= 1000 || st.n > st.was*2 {
			t.Errorf("%s: %d (estimated %v), want an estimate above 1000 near %d", st.state, st.n, c.IsEstimated(st.state), st.was)
		}
	}
	eq(t, [3]int64{c.Late, c.Failing, c.Disabled}, [3]int64{1000, 50, 7}, "at or below the cap: exact")
	eq(t, c.OldestDue, base.Add(-2*time.Hour), "oldest due")
}
