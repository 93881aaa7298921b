package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
)

// everyMinute is a schedule for the successes SaveSuccesses writes.
type everyMinute struct{}

func (everyMinute) Next(after time.Time) time.Time {
	return after.Truncate(time.Minute).Add(time.Minute)
}

// saveSuccesses runs SaveSuccesses in a transaction of its own, committed
// unless it returns models.ErrUnmatched (rolled back: it may have written
// some rows), which it reports as unknown.
func saveSuccesses(t *testing.T, s models.Store, tbl models.Table, now time.Time, succ ...models.Success) (written []bool, known bool) {
	t.Helper()
	err := s.Tx(context.Background(), func(tx models.Tx) error {
		var err error
		written, err = tx.SaveSuccesses(context.Background(), tbl, now, succ)
		return err
	})
	if errors.Is(err, models.ErrUnmatched) {
		return nil, false
	}
	must(t, err)
	eq(t, len(written), len(succ), "one answer per success")
	return written, true
}

// testSaveSuccesses checks that SaveSuccesses writes exactly what Apply
// writes for a current, on-time success on a row without a rule of its
// own, and nothing to any other row: another attempt's, a late one, a row
// with its own rule, a row with no attempt, a key spelled otherwise than
// the database returns it, a key of no row.
func testSaveSuccesses(t *testing.T, h Harness) {
	env := h.New(t)
	tbl := items(t, env, KeyString)
	now := base.Add(time.Hour)
	keys := []string{"ok", "ok2", "other", "late", "ownrule", "idle", "cased"}
	for _, k := range keys {
		insert(t, env, k, base)
	}
	running := map[string]policy.State{}
	var rows []models.Row
	for i, k := range keys {
		st := fullState(i)
		st.TimeoutAt = now.Add(time.Microsecond) // on time, by a microsecond
		switch k {
		case "late":
			st.TimeoutAt = now // a result read at timeout_at is late
		case "idle":
			st.AttemptUID, st.TimeoutAt = "", time.Time{}
		}
		running[k] = st
		rows = append(rows, models.Row{Key: k, State: st})
	}
	must(t, save(env.Store, tbl, rows...))
	env.Exec(t, "UPDATE items SET refresh_rrule = 'FREQ=DAILY' WHERE k = 'ownrule'")

	result := func(key, status string) (models.Success, policy.State) {
		r := policy.Result{AttemptUID: running[key].AttemptUID, Type: policy.ResultSuccess, Status: status}
		w, err := policy.Succeeded(r, now, everyMinute{})
		must(t, err)
		want, d := policy.Policy{}.Apply(running[key], r, now, everyMinute{}, nil, 0)
		eq(t, d.Outcome, policy.OutcomeApplied, "Apply applies the success to", key)
		return models.Success{Key: key, AttemptUID: r.AttemptUID, State: w}, want
	}
	okS, okWant := result("ok", "imported 10 rows")
	ok2S, ok2Want := result("ok2", "")
	written, known := saveSuccesses(t, env.Store, tbl, now, okS, ok2S)
	eq(t, known, true, "every row matched: the driver knows which")
	eq(t, written, []bool{true, true})
	got := lock(t, env.Store, tbl, "ok", "ok2")
	eq(t, got["ok"].State, okWant, "what Apply writes, status included")
	eq(t, got["ok2"].State, ok2Want, "what Apply writes, no status")

	// Each row below is one Apply does not apply a success to with the
	// kind's schedule; alone and together, none is written.
	other, _ := result("other", "")
	other.AttemptUID = "d1v5bqh6n88c7389zzzz"
	late := models.Success{Key: "late", AttemptUID: running["late"].AttemptUID, State: okS.State}
	own := models.Success{Key: "ownrule", AttemptUID: running["ownrule"].AttemptUID, State: okS.State}
	idle := models.Success{Key: "idle", AttemptUID: running["ok"].AttemptUID, State: okS.State}
	cased := models.Success{Key: "CASED", AttemptUID: running["cased"].AttemptUID, State: okS.State}
	absent := models.Success{Key: "absent", AttemptUID: running["ok"].AttemptUID, State: okS.State}
	stale := okS // applied above: its attempt has ended
	for _, s := range []models.Success{other, late, own, idle, cased, absent, stale} {
		if written, known := saveSuccesses(t, env.Store, tbl, now, s); known {
			eq(t, written, []bool{false}, "written:", s.Key)
		}
	}
	if written, known := saveSuccesses(t, env.Store, tbl, now, other, late, own, idle, cased, absent, stale); known {
		eq(t, written, make([]bool, 7), "written, together")
	}
	got = lock(t, env.Store, tbl, keys...)
	for _, k := range []string{"other", "late", "ownrule", "idle", "cased"} {
		eq(t, got[k].State, running[k], "left alone:", k)
	}
	eq(t, got["ok"].State, okWant, "a stale success leaves the row alone")

	// Mixed: a driver that knows which rows matched says so.
	okAgain := okS
	running["ok"] = okWant
	must(t, save(env.Store, tbl, models.Row{Key: "ok", State: running["late"]}))
	okAgain.AttemptUID = running["late"].AttemptUID
	okAgain.State.Status = ""
	if written, known := saveSuccesses(t, env.Store, tbl, base, other, okAgain); known {
		eq(t, written, []bool{false, true}, "only the matching row")
	}

	if _, err := saveSuccessesErr(env.Store, tbl, now, okS, okS); err == nil || errors.Is(err, models.ErrUnmatched) {
		t.Fatalf("a key twice: got %v, want an error naming the key", err)
	}

	// An integer key: only the spelling the database returns matches.
	env = h.New(t)
	tbl = items(t, env, KeyInt)
	insert(t, env, "42", base)
	st := fullState(1)
	st.TimeoutAt = now.Add(time.Hour)
	must(t, save(env.Store, tbl, models.Row{Key: "42", State: st}))
	for _, odd := range []string{"042", "+42", " 42", "42 ", "42.0"} {
		s := models.Success{Key: odd, AttemptUID: st.AttemptUID, State: okS.State}
		if written, known := saveSuccesses(t, env.Store, tbl, now, s); known {
			eq(t, written, []bool{false}, "written:", odd)
		}
		eq(t, lock(t, env.Store, tbl, "42")["42"].State, st, "left alone by", odd)
	}
	written, known = saveSuccesses(t, env.Store, tbl, now, models.Success{Key: "42", AttemptUID: st.AttemptUID, State: okS.State})
	eq(t, known, true, "the row matched")
	eq(t, written, []bool{true}, "written: 42")
	eq(t, lock(t, env.Store, tbl, "42")["42"].State, policy.WithSuccess(st, okS.State), "what Apply writes")
}

func saveSuccessesErr(s models.Store, tbl models.Table, now time.Time, succ ...models.Success) ([]bool, error) {
	var written []bool
	err := s.Tx(context.Background(), func(tx models.Tx) error {
		var err error
		written, err = tx.SaveSuccesses(context.Background(), tbl, now, succ)
		return err
	})
	return written, err
}

// testSaveSuccessesAcrossBatches checks which rows SaveSuccesses says it
// wrote when its successes take more than one statement (models.
// MaxSaveBatch rows each): all of them, and with one row that does not
// match in the first or the last statement, every other one (or, on a
// store that cannot tell, models.ErrUnmatched and nothing written).
func testSaveSuccessesAcrossBatches(t *testing.T, h Harness) {
	now := base.Add(time.Hour)
	const n = models.MaxSaveBatch + 500          // two statements
	for _, miss := range []int{-1, 10, n - 10} { // -1: every row matches
		t.Run(fmt.Sprint("miss ", miss), func(t *testing.T) {
			env := h.New(t)
			tbl := items(t, env, KeyInt)
			values := make([]string, n)
			for i := range values {
				values[i] = fmt.Sprintf("('%d', %s)", i+1, sqlTime(base))
			}
			env.Exec(t, "INSERT INTO items (k, refresh_at) VALUES "+strings.Join(values, ", "))
			w, err := policy.Succeeded(policy.Result{Type: policy.ResultSuccess}, now, everyMinute{})
			must(t, err)
			rows := make([]models.Row, n)
			succ := make([]models.Success, n)
			for i := range rows {
				key, uid := fmt.Sprint(i+1), fmt.Sprintf("d1v5bqh6n88c7%07d", i)
				rows[i] = models.Row{Key: key, State: policy.State{AttemptUID: uid, TimeoutAt: now.Add(time.Hour)}}
				succ[i] = models.Success{Key: key, AttemptUID: uid, State: w}
			}
			if miss >= 0 {
				succ[miss].AttemptUID = "d1v5bqh6n88c7zzzzzzz" // another attempt's answer
			}
			must(t, save(env.Store, tbl, rows...))
			written, known := saveSuccesses(t, env.Store, tbl, now, succ...)
			keys := make([]string, n)
			for i := range keys {
				keys[i] = fmt.Sprint(i + 1)
			}
			got := lock(t, env.Store, tbl, keys...)
			left := 0
			for _, r := range got {
				if r.State.AttemptUID != "" {
					left++
				}
			}
			if !known {
				eq(t, miss >= 0, true, "a store that cannot tell which rows matched says so only when one did not")
				eq(t, left, n, "rows still running after the rollback")
				return
			}
			for i, ok := range written {
				if ok != (i != miss) {
					t.Fatalf("success %d (the one that does not match: %d): written %v", i, miss, ok)
				}
			}
			wantLeft := 0
			if miss >= 0 {
				wantLeft = 1
			}
			eq(t, left, wantLeft, "rows still running")
		})
	}
}
