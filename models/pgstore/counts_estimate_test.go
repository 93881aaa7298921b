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
	s.exactStateUpTo = 1_000_000 // every state counted
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

// TestCountsEstimatesLargeStates: a state with more than exactStateUpTo
// rows is the planner's estimate, at least exactStateUpTo+1, and listed in
// Counts.Estimated; a state at or below it is counted exactly and not
// listed.
func TestCountsEstimatesLargeStates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := testStore(t)
	exec(t, s, `CREATE TABLE "Many States" (k bigint PRIMARY KEY)`)
	_, err := s.Migrate(ctx, []string{"Many States"}, io.Discard, false)
	must(t, err)
	base := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	// 3000 rows due (1000 of them late), 2000 running, 50 failing, 7
	// disabled.
	exec(t, s, `INSERT INTO "Many States" (k, refresh_at, refresh_attempt_uid, refresh_failing_since, refresh_disabled_until_update)
		SELECT g, $1::timestamptz - CASE WHEN g <= 1000 THEN interval '2 hours' ELSE interval '0' END,
			CASE WHEN g <= 2000 THEN 'u' || g END,
			CASE WHEN g > 2900 AND g <= 2950 THEN $1::timestamptz END,
			CASE WHEN g > 2990 THEN $1::timestamptz END
		FROM generate_series(1, 2997) g`, base)
	exec(t, s, `ANALYZE "Many States"`)
	tbl := models.Table{Name: "Many States", Key: "k"}
	now, lateAfter := base.Add(time.Minute), time.Hour

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
		if !c.IsEstimated(st.state) || st.n <= 1000 || st.n < st.was/2 || st.n > st.was*2 {
			t.Errorf("%s: %d (estimated %v), want an estimate above 1000 near %d", st.state, st.n, c.IsEstimated(st.state), st.was)
		}
	}
	eq(t, [3]int64{c.Late, c.Failing, c.Disabled}, [3]int64{1000, 50, 7}, "at or below the cap: exact")
	if c.IsEstimated(models.StateLate) || c.IsEstimated(models.StateFailing) {
		t.Errorf("exact states labelled estimated: %v", c.Estimated)
	}

	// A planner's estimate below the cap still says "more than the cap".
	exec(t, s, `UPDATE "Many States" SET refresh_attempt_uid = 'v' || k WHERE k > 2000`)
	s.exactStateUpTo = 2500
	c, err = s.Counts(ctx, tbl, now, lateAfter)
	must(t, err)
	eq(t, c.Estimated, []models.RowState{models.StateDue, models.StateRunning}, "stale statistics: still estimated")
	if c.Running < 2501 {
		t.Errorf("running %d from stale statistics (2000 at ANALYZE, 2997 now): want at least the cap+1", c.Running)
	}
}
