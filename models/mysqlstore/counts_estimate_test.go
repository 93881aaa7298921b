package mysqlstore

import (
	"context"
	"testing"
	"time"
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
