package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
)

// testSaveIfAttemptRestoresOnce: SaveIfAttempt, undoing the starts of rows
// claimed by their one-shot priority (which the claim cleared), sets
// refresh_priority_once back: only where the row's attempt UID is still
// the one it started and the column is still NULL (a newer trigger wins),
// and only for rows whose Priority says so.
func testSaveIfAttemptRestoresOnce(t *testing.T, h Harness) {
	env := h.New(t)
	ctx := context.Background()
	tbl := items(t, env, KeyString)
	tbl.Priority = 10
	for _, k := range []string{"undone", "retriggered", "other", "own"} {
		insert(t, env, k, base.Add(-time.Hour))
	}
	env.Exec(t, "UPDATE items SET refresh_priority_once = 3 WHERE k IN ('undone', 'retriggered', 'other')")
	rows := ClaimFrom(t, env.Store, tbl, base, models.Cursor{}, 10)
	eq(t, keysOf(rows), []string{"undone", "retriggered", "other", "own"}, "claim order")
	befores := make([]models.Row, len(rows))
	uids := make([]string, len(rows))
	for i := range rows {
		befores[i] = rows[i]
		uids[i] = fullState(i + 1).AttemptUID
		rows[i].State = policy.State{RefreshAt: base.Add(time.Hour), AttemptUID: uids[i], AttemptNo: 1, TimeoutAt: base.Add(time.Hour)}
	}
	must(t, save(env.Store, tbl, rows...))
	env.Exec(t, "UPDATE items SET refresh_priority_once = 1 WHERE k = 'retriggered'")
	uids[2] = "d1v5bqh6n88c7389zzzz" // "other" runs another attempt now

	n, err := env.Store.SaveIfAttempt(ctx, tbl, befores, uids)
	must(t, err)
	eq(t, n, 3, "rows written: all but other")
	got := lock(t, env.Store, tbl, "undone", "retriggered", "other", "own")
	eq(t, got["undone"].State, befores[0].State, "undone")
	eq(t, got["retriggered"].State, befores[1].State, "undone")
	eq(t, got["other"].State.AttemptUID, rows[2].State.AttemptUID, "another attempt: left alone")
	eq(t, got["own"].State, befores[3].State, "undone")

	// What the priority columns hold shows in the next claim; "other" is
	// made due for it, as its attempt had timed out.
	env.Exec(t, "UPDATE items SET refresh_at = "+sqlTime(base.Add(-time.Hour))+", refresh_attempt_uid = NULL WHERE k = 'other'")
	again := map[string]models.Priority{}
	for _, r := range ClaimFrom(t, env.Store, tbl, base, models.Cursor{}, 10) {
		again[r.Key] = r.Priority
	}
	eq(t, again, map[string]models.Priority{
		"retriggered": {Level: 1, Source: models.PriorityOnce},  // the newer trigger wins
		"undone":      {Level: 3, Source: models.PriorityOnce},  // set back
		"other":       {Level: 10, Source: models.PriorityKind}, // another attempt's: not set back
		"own":         {Level: 10, Source: models.PriorityKind}, // claimed without one
	}, "priorities after the undo")
}
