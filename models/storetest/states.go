package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
)

// testStatesAgree: the driver's Counts and List put each row in the states
// that models.RowState.Has, the one definition, puts it in, on the edge
// rows (due at now, due for exactly lateAfter, a microsecond either side, a
// running row past its timeout, a failing row disabled, ...).
func testStatesAgree(t *testing.T, h Harness) {
	env := h.New(t)
	in := env.Store
	ctx := context.Background()
	tbl := items(t, env, KeyInt)
	now, lateAfter, us := base, time.Hour, time.Microsecond
	states := []policy.State{
		{},
		{RefreshAt: now},
		{RefreshAt: now.Add(us)},
		{RefreshAt: now.Add(-us)},
		{RefreshAt: now.Add(-lateAfter)},
		{RefreshAt: now.Add(-lateAfter + us)},
		{RefreshAt: now.Add(-lateAfter - us)},
		{RefreshAt: now.Add(time.Hour), AttemptUID: "d1v5bqh6n88c73890001", AttemptNo: 1},
		{RefreshAt: now.Add(-2 * lateAfter), AttemptUID: "d1v5bqh6n88c73890002", AttemptNo: 3, FailingSince: now.Add(-3 * lateAfter)},
		{RefreshAt: now.Add(us), FailingSince: now, AttemptNo: 2},
		{RefreshAt: now, FailingSince: now, AttemptNo: 2},
		{FailingSince: now, DisabledAt: now, AttemptNo: 6},
		{DisabledAt: now},
		{RefreshAt: now.Add(-2 * lateAfter), DisabledAt: now, FailingSince: now},
	}
	rows := make([]models.Row, len(states))
	for i, st := range states {
		rows[i] = models.Row{Key: fmt.Sprint(i + 1), State: st}
		insert(t, env, rows[i].Key, time.Time{})
	}
	must(t, save(env.Store, tbl, rows...))

	in1 := func(s models.RowState) []string {
		keys := []string{}
		for _, r := range rows {
			if s.Has(r.State, now, lateAfter) {
				keys = append(keys, r.Key)
			}
		}
		return keys
	}
	for _, s := range []models.RowState{models.StateDue, models.StateLate, models.StateRunning, models.StateFailing, models.StateDisabled, models.StateAll} {
		page, err := in.List(ctx, tbl, models.ListQuery{State: s, Now: now, LateAfter: lateAfter, Limit: 1000})
		must(t, err)
		eq(t, keysOf(page.Rows), in1(s), "List ", s)
	}
	want := models.Counts{
		Total: int64(len(rows)), Due: int64(len(in1(models.StateDue))), Late: int64(len(in1(models.StateLate))),
		Running: int64(len(in1(models.StateRunning))), Failing: int64(len(in1(models.StateFailing))),
		Disabled: int64(len(in1(models.StateDisabled))), OldestDue: now.Add(-2 * lateAfter), MaxAttemptNo: 6,
	}
	c, err := in.Counts(ctx, tbl, now, lateAfter)
	must(t, err)
	eq(t, c, want, "Counts")
}
