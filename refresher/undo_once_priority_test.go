package refresher

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/policy"
)

// A row triggered "refresh now" at a priority
// (refresh_priority_once, docs/schedules.md: for the row's next attempt
// only) whose push fails must come back exactly as it was: due, and at the
// priority it was triggered at. The claim clears refresh_priority_once;
// the undo (dispatcher.undo, Store.SaveIfAttempt) sets it back, as the
// attempt it was for never ran.
func TestUndoKeepsOneShotPriority(t *testing.T) {
	t.Parallel()
	forEachStore(t, allStores, func(t *testing.T, store string) {
		b := setup(t, setupOpts{store: store, timeout: time.Hour})
		b.kind.Table.Priority = 10
		b.kind.Lanes = []int{0}
		b.cfg.Kinds = []Kind{b.kind}
		b.insert("user")
		b.exec("UPDATE items SET refresh_at = ? WHERE uid = 'user'", t0.Add(time.Hour))
		zero := 0
		_, err := NewAdmin(b.store, nil).TriggerAt(&zero)(context.Background(), b.kind.Table, []string{"user"}, t0)
		require.NoError(t, err)
		proxy, rio := redisVia(t)
		var once sync.Once
		r := b.runOn(context.Background(), b.store, rio, func(c *Config) {
			c.faults.beforePush = func(string) { once.Do(proxy.Cut) }
		})
		waitCounter(t, func() float64 { return toFloat(r.svc.Metrics().PushFailures.WithLabelValues("items")) }, 1, "push failure")
		st := b.waitFor("user", "attempt undone", func(s policy.State) bool { return s.AttemptUID == "" })
		r.stop()
		var v *int
		require.NoError(t, b.db.QueryRow("SELECT refresh_priority_once FROM items WHERE uid = 'user'").Scan(&v))
		require.Equal(t, 0, st.AttemptNo, "the attempt is not counted")
		require.True(t, st.RefreshAt.Equal(t0), "due again: %s", st.RefreshAt)
		require.Equal(t, &zero, v, "the undone attempt's row lost its one-shot priority (refresh_priority_once)")
	})
}
