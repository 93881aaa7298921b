package pgstore

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/refresher/refresher/models"
)

// TestCountsEstimatesLargeTotal: above exactTotalUpTo rows by the
// planner's estimate, Counts gives that estimate as the total, says so,
// and still counts every state exactly; at or below it, and before the
// table was ever analyzed, the total is counted.
func TestCountsEstimatesLargeTotal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := testStore(t)
	exec(t, s, `CREATE TABLE "Big Items" (k bigint PRIMARY KEY)`)
	_, err := s.Migrate(ctx, []string{"Big Items"}, io.Discard, false)
	must(t, err)
	base := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	exec(t, s, `INSERT INTO "Big Items" (k, refresh_at, refresh_disabled_until_update)
		SELECT g, $1::timestamptz, CASE WHEN g <= 7 THEN $1::timestamptz END FROM generate_series(1, 3000) g`, base)
	tbl := models.Table{Name: "Big Items", Key: "k"}
	s.exactTotalUpTo = 100
	count := func(what string, due int64) models.Counts {
		t.Helper()
		c, err := s.Counts(ctx, tbl, base.Add(time.Minute), time.Hour)
		must(t, err)
		eq(t, [2]int64{c.Due, c.Disabled}, [2]int64{due, 7}, what+": states counted exactly")
		return c
	}
	c := count("never analyzed", 3000)
	eq(t, [2]any{c.Total, c.TotalEstimated}, [2]any{int64(3000), false}, "never analyzed: counted")

	exec(t, s, `ANALYZE "Big Items"`)
	exec(t, s, `INSERT INTO "Big Items" (k, refresh_at) SELECT g, $1::timestamptz FROM generate_series(3001, 6000) g`, base)
	var est int64
	must(t, s.Pool().QueryRow(ctx, estimateRows, `"Big Items"`).Scan(&est))
	if est < 4500 || est > 7500 { // the rows per page of ANALYZE times the pages now
		t.Fatalf("estimate %d for 6000 rows", est)
	}
	c = count("estimated", 6000)
	eq(t, [2]any{c.Total, c.TotalEstimated}, [2]any{est, true}, "estimated above the limit")

	s.exactTotalUpTo = est
	c = count("at the limit", 6000)
	eq(t, [2]any{c.Total, c.TotalEstimated}, [2]any{int64(6000), false}, "counted at the limit")
}
