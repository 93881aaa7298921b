package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
)

// testClaimLean checks the claim's lean read (models.ClaimRest): what
// policy.Due decides on claimed rows and Save writes is what it decides on
// the same rows read whole, whatever the path (a start, a row with its own
// rule, a running attempt that times out, a disabled row, an invalid rule),
// all in one batch; the rows that are not running keep the columns the
// claim left out; and SaveIfAttempt, undoing the starts from the claimed
// rows, restores the rows as they were.
func testClaimLean(t *testing.T, h Harness) {
	env := h.New(t)
	ctx := context.Background()
	tbl := items(t, env, KeyString)
	earlier, old := sqlTime(base.Add(-3*time.Hour)), sqlTime(base.Add(-48*time.Hour))
	for _, k := range []string{"plain", "ruled", "running", "disabled", "invalid"} {
		insert(t, env, k, base.Add(-time.Minute))
	}
	// A row that starts, with every column the claim leaves out set.
	env.Exec(t, "UPDATE items SET refresh_attempt_at = "+old+", refresh_attempt_no = 2, refresh_disabled_user_friendly_reason = 'left over',"+
		" refresh_failing_since = "+old+", refresh_last_success_at = "+old+", refresh_last_error = 'boom', refresh_status = 'said' WHERE k = 'plain'")
	env.Exec(t, "UPDATE items SET refresh_rrule = 'FREQ=DAILY', refresh_last_error = 'ruled before', refresh_last_success_at = "+old+" WHERE k = 'ruled'")
	// A running attempt whose timeout passed: the claim reads it whole.
	env.Exec(t, "UPDATE items SET refresh_attempt_uid = 'd1v5bqh6n88c73890001', refresh_attempt_at = "+earlier+", refresh_attempt_no = 3,"+
		" refresh_timeout_at = "+sqlTime(base.Add(-time.Minute))+", refresh_failing_since = "+old+", refresh_last_success_at = "+old+
		", refresh_last_error = 'failed before', refresh_status = 'working' WHERE k = 'running'")
	env.Exec(t, "UPDATE items SET refresh_disabled_until_update = "+earlier+", refresh_disabled_user_friendly_reason = 'fix it',"+
		" refresh_last_error = 'gave up', refresh_failing_since = "+old+" WHERE k = 'disabled'")
	env.Exec(t, "UPDATE items SET refresh_last_success_at = "+old+", refresh_last_error = 'not yet' WHERE k = 'invalid'")
	keys := []string{"disabled", "invalid", "plain", "ruled", "running"}
	whole := lock(t, env.Store, tbl, keys...)

	pol := policy.Policy{Kind: "items"}
	uid := func(k string) string { return (k + "00000000000000000000")[:20] }
	decide := func(k string, s policy.State) (policy.State, policy.DueDecision) {
		var sched policy.Nexter = everyMinute{}
		var schedErr error
		if k == "invalid" {
			sched, schedErr = nil, errors.New("no rule")
		}
		return pol.Due(s, base, sched, schedErr, uid(k), 0.5)
	}

	var befores []models.Row
	var uids []string
	must(t, env.Store.Tx(ctx, func(tx models.Tx) error {
		rows, err := tx.ClaimDue(ctx, tbl, base, models.Cursor{}, 10)
		if err != nil {
			return err
		}
		eq(t, len(rows), len(keys), "claimed")
		for i := range rows {
			r := &rows[i]
			w := whole[r.Key]
			eq(t, r.Rule, w.Rule, "rule of "+r.Key)
			want := w.State
			if !want.Running() {
				want.DisabledReason, want.FailingSince, want.LastSuccessAt, want.LastError = "", time.Time{}, time.Time{}, ""
			}
			eq(t, r.State, want, "claimed state of "+r.Key+": the rest of running rows only")
			var d policy.DueDecision
			r.State, d = decide(r.Key, r.State)
			if d.Action == policy.DueStarted {
				b := *r
				b.State = d.BeforeStart
				befores, uids = append(befores, b), append(uids, d.AttemptUID)
			}
		}
		return tx.Save(ctx, tbl, rows)
	}))
	got := lock(t, env.Store, tbl, keys...)
	started := 0
	for _, k := range keys {
		want, d := decide(k, whole[k].State)
		eq(t, got[k].State, stored(want), "saved state of "+k+" as Due decides on the row read whole")
		eq(t, got[k].Rule, whole[k].Rule, "rule of "+k)
		if d.Action == policy.DueStarted {
			started++
		}
	}
	eq(t, len(befores), started, "started")
	if started < 2 {
		t.Fatalf("only %d rows started: the undo is not checked", started)
	}

	n, err := env.Store.SaveIfAttempt(ctx, tbl, befores, uids)
	must(t, err)
	eq(t, n, started, "undone")
	got = lock(t, env.Store, tbl, keys...)
	for _, b := range befores {
		_, d := decide(b.Key, whole[b.Key].State)
		eq(t, got[b.Key].State, stored(d.BeforeStart), "undone "+b.Key+": as before its start")
	}
}

// stored is s as the columns store it: times in UTC to the microsecond.
func stored(s policy.State) policy.State {
	for c := range models.StateColumns {
		if col := &models.StateColumns[c]; col.Kind == models.TimeColumn {
			*col.Time(&s) = models.StoredTime(*col.Time(&s))
		}
	}
	return s
}
