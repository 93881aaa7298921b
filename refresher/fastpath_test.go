package refresher

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/teststore"
	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
	"github.com/refresher/refresher/schedule"
)

// lockCounting is a store that counts the keys its transactions lock
// with LockByKeys.
type lockCounting struct {
	models.Store
	mu     sync.Mutex
	locked []string
}

func (s *lockCounting) Tx(ctx context.Context, fn func(models.Tx) error) error {
	return s.Store.Tx(ctx, func(tx models.Tx) error { return fn(lockCountingTx{tx, s}) })
}

func (s *lockCounting) lockedKeys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.locked...)
}

type lockCountingTx struct {
	models.Tx
	s *lockCounting
}

func (tx lockCountingTx) LockByKeys(ctx context.Context, t models.Table, keys []string) (map[string]models.Row, error) {
	tx.s.mu.Lock()
	tx.s.locked = append(tx.s.locked, keys...)
	tx.s.mu.Unlock()
	return tx.Tx.LockByKeys(ctx, t, keys)
}

// A batch of results applies as policy.Apply decides, result by result,
// on every store, when its successes are written without reading their
// rows first: plain successes (spread by their row's offset, one with a
// status), a stale one, a row with its own rule, a status and a success
// for one row in one batch, a failure. Only the rows that are not plain
// successes are locked and read.
func TestBatchAppliesAsApplyWithSuccessesUnread(t *testing.T) {
	t.Parallel()
	forEachStore(t, allStores, func(t *testing.T, store string) {
		b := setup(t, setupOpts{store: store, timeout: time.Hour})
		spread := policy.Spread{Window: 10 * time.Minute}
		b.cfg.Kinds[0].Policy.Spread = spread
		ownRule := "DTSTART:20260101T090000Z\nRRULE:FREQ=HOURLY;INTERVAL=5"
		keys := []string{"s1", "s2", "s3", "stale", "own", "dup", "fail"}
		b.insert(keys...)

		// Each row runs an attempt of its own (not due: timeout in an hour),
		// but "stale", whose attempt ended.
		states := map[string]policy.State{}
		var rows []models.Row
		for i, k := range keys {
			st := policy.State{AttemptUID: "d1v5bqh6n88c7389a00" + string(rune('0'+i)), AttemptNo: 2, AttemptAt: t0.Add(-time.Minute),
				TimeoutAt: t0.Add(time.Hour), RefreshAt: t0.Add(time.Hour), FailingSince: t0.Add(-time.Hour), LastError: "HTTP 500",
				DisabledReason: "kept", Status: "running"}
			if k == "stale" {
				st.AttemptUID, st.TimeoutAt, st.RefreshAt = "", time.Time{}, t0.Add(time.Hour)
			}
			states[k] = st
			rows = append(rows, models.Row{Key: k, State: st})
		}
		require.NoError(t, b.store.Tx(context.Background(), func(tx models.Tx) error { return tx.Save(context.Background(), b.kind.Table, rows) }))
		b.exec("UPDATE items SET refresh_rrule = ? WHERE uid = ?", ownRule, "own")

		uid := func(k string) string { return states[k].AttemptUID }
		batch := []redisio.Result{
			{UID: "s1", AttemptUID: uid("s1"), Type: "success"},
			{UID: "s2", AttemptUID: uid("s2"), Type: "success", Status: "imported 10 rows"},
			{UID: "stale", AttemptUID: "d1v5bqh6n88c7389zzzz", Type: "success"},
			{UID: "own", AttemptUID: uid("own"), Type: "success"},
			{UID: "dup", AttemptUID: uid("dup"), Type: "status", Status: "half way"},
			{UID: "s3", AttemptUID: uid("s3"), Type: "success"},
			{UID: "dup", AttemptUID: uid("dup"), Type: "success"},
			{UID: "fail", AttemptUID: uid("fail"), Type: "failure", Reason: "HTTP 503"},
		}
		for _, r := range batch {
			b.send(r) // queued before the service starts: one batch
		}

		// What Apply decides, result by result.
		kindSched, err := schedule.Parse(dailyAt14)
		require.NoError(t, err)
		own, err := schedule.Parse(ownRule)
		require.NoError(t, err)
		pol := b.kind.Policy
		want := map[string]policy.State{}
		for k, st := range states {
			want[k] = st
		}
		outcomes := map[[2]string]int{}
		for _, r := range batch {
			var sched policy.Nexter = kindSched
			if r.UID == "own" {
				sched = own
			}
			sched = policy.Spreaded(sched, spread.Offset("items", r.UID, r.UID == "own"))
			st, d := pol.Apply(want[r.UID], policyResult(r), t0, sched, nil, 0)
			want[r.UID] = st
			outcomes[[2]string{r.Type, d.Outcome.Metric()}]++
		}
		require.Equal(t, map[[2]string]int{{"success", "applied"}: 5, {"success", "stale"}: 1, {"status", "applied"}: 1, {"failure", "applied"}: 1},
			outcomes, "the cases the test means")

		counting := &lockCounting{Store: b.store}
		svc := b.runOn(context.Background(), counting, b.rio, nil).svc
		waitCounter(t, func() float64 {
			n := 0.0
			for k := range outcomes {
				n += results(svc, k[0], k[1])()
			}
			return n
		}, float64(len(batch)), "results counted")
		for k, n := range outcomes {
			require.Equal(t, float64(n), results(svc, k[0], k[1])(), "results_total %v", k)
		}
		for _, k := range keys {
			require.Equal(t, want[k], b.state(k), "row %s", k)
		}
		if store != teststore.MySQL { // MySQL cannot tell which rows matched: the batch was read (see fastMissed)
			require.NotContains(t, counting.lockedKeys(), "s1", "a plain success is written unread")
			require.NotContains(t, counting.lockedKeys(), "s2")
			require.NotContains(t, counting.lockedKeys(), "s3")
		}

		// A batch of plain successes only: no row is read, on any store
		// (on MySQL from the second such batch on: the one after a miss is
		// read, see fastMissed).
		for round := range 2 {
			counting.mu.Lock()
			counting.locked = nil
			counting.mu.Unlock()
			rows = rows[:0]
			for i, k := range []string{"s1", "s2", "s3"} {
				st := b.state(k)
				st = pol.Start(st, t0, "d1v5bqh6n88c7389b"+string(rune('0'+round))+"0"+string(rune('0'+i)))
				rows = append(rows, models.Row{Key: k, State: st})
				want[k], _ = pol.Apply(st, policy.Result{AttemptUID: st.AttemptUID, Type: policy.ResultSuccess}, t0,
					policy.Spreaded(kindSched, spread.Offset("items", k, false)), nil, 0)
			}
			require.NoError(t, b.store.Tx(context.Background(), func(tx models.Tx) error { return tx.Save(context.Background(), b.kind.Table, rows) }))
			applied := results(svc, "success", "applied")()
			for _, r := range rows {
				b.send(redisio.Result{UID: r.Key, AttemptUID: r.State.AttemptUID, Type: "success"})
			}
			waitCounter(t, results(svc, "success", "applied"), applied+3, "plain successes applied")
			for _, r := range rows {
				require.Equal(t, want[r.Key], b.state(r.Key), "row %s", r.Key)
			}
			if round == 1 || store != teststore.MySQL {
				require.Empty(t, counting.lockedKeys(), "plain successes are written unread")
			}
		}
	})
}

// Rows the dispatcher claimed with a rule of their own are not offered to
// SaveSuccesses: on MySQL, which cannot tell which rows of a statement
// matched, one of them among a batch's successes would send the whole
// batch the slow way; so the plain successes beside them are written
// unread on every store. Their rules, known from the claim, are prepared
// before the poller's transaction, which locks them once.
func TestOwnRuleRowsKeepTheirBatchFast(t *testing.T) {
	t.Parallel()
	forEachStore(t, allStores, func(t *testing.T, store string) {
		b := setup(t, setupOpts{store: store, timeout: time.Hour})
		b.insert("p1", "p2", "r1", "r2")
		b.exec("UPDATE items SET refresh_rrule = ? WHERE uid IN (?, ?)", "DTSTART:20260101T090000Z\nRRULE:FREQ=HOURLY", "r1", "r2")
		counting := &lockCounting{Store: b.store}
		svc := b.runOn(context.Background(), counting, b.rio, nil).svc
		var raws []any // one push: one batch
		for _, j := range b.popJobs(4) {
			raw, err := json.Marshal(redisio.Result{UID: j.UID, AttemptUID: j.AttemptUID, Type: "success"})
			require.NoError(t, err)
			raws = append(raws, string(raw))
		}
		require.NoError(t, b.rdb.RPush(context.Background(), b.kind.Lists.Output, raws...).Err())
		waitCounter(t, results(svc, "success", "applied"), 4, "successes applied")
		locked := counting.lockedKeys()
		require.NotContains(t, locked, "p1", "a plain success beside rows with rules of their own is written unread")
		require.NotContains(t, locked, "p2")
		require.Equal(t, 1, countOf(locked, "r1"), "a row with a rule of its own is read, once: its rule, known from its dispatch, is prepared before the transaction")
		require.Equal(t, time.Date(2026, 11, 21, 11, 0, 0, 0, time.UTC), b.state("r1").RefreshAt, "its own rule planned it")
		require.Equal(t, time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC), b.state("p1").RefreshAt, "the kind's rule planned it")
	})
}

// countOf counts the occurrences of s in list.
func countOf(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}
