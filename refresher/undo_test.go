package refresher

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/teststore"
	"github.com/refresher/refresher/policy"
)

// TestUndoKeepsWhatTheClaimDidNotRead: a push that fails undoes its
// attempts without touching the columns the claim left unread (the last
// error, the failing run, the last success, the disabled reason of a row
// that was not running): the undo writes the row's key, primary key,
// unread columns and state as they were before the start, as kept for it
// (dispatcher.started), and nothing it did not read.
func TestUndoKeepsWhatTheClaimDidNotRead(t *testing.T) {
	t.Parallel()
	forEachStore(t, teststore.Servers, func(t *testing.T, store string) {
		b := setup(t, setupOpts{store: store, timeout: time.Hour})
		uids := b.insertN(3, t0)
		failing, success := t0.Add(-2*time.Hour), t0.Add(-3*time.Hour)
		b.exec("UPDATE items SET refresh_attempt_no = 2, refresh_last_error = ?, refresh_failing_since = ?, refresh_last_success_at = ?, refresh_disabled_user_friendly_reason = ?",
			"boom", failing, success, "why not")
		proxy, rio := redisVia(t)
		var once sync.Once
		r := b.runOn(context.Background(), b.store, rio, func(c *Config) {
			c.faults.beforePush = func(string) { once.Do(proxy.Cut) }
		})
		waitCounter(t, func() float64 { return toFloat(r.svc.Metrics().PushFailures.WithLabelValues("items")) }, 1, "push failure")
		for _, uid := range uids {
			st := b.waitFor(uid, "attempt undone", func(s policy.State) bool { return s.AttemptUID == "" })
			require.Equal(t, 2, st.AttemptNo, "%s: the attempt is not counted", uid)
			require.True(t, st.RefreshAt.Equal(t0), "%s: due again: %s", uid, st.RefreshAt)
			require.Equal(t, "boom", st.LastError, "%s", uid)
			require.True(t, st.FailingSince.Equal(failing), "%s: failing since %s", uid, st.FailingSince)
			require.True(t, st.LastSuccessAt.Equal(success), "%s: last success %s", uid, st.LastSuccessAt)
			require.Equal(t, "why not", st.DisabledReason, "%s", uid)
		}
		r.stop()
	})
}
