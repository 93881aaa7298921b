package refresher

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
)

// A batch of plain successes does not wait for the incident window's read:
// with the read held, the batch commits (decideIncident). The read is
// still made, and the batch is acknowledged after it.
func TestPlainSuccessesCommitWhileTheIncidentWindowIsRead(t *testing.T) {
	t.Parallel()
	forEachStore(t, allStores, func(t *testing.T, store string) {
		b := setup(t, setupOpts{store: store, timeout: time.Hour})
		b.insert("m1", "m2")
		var held, committed atomic.Bool
		b.start(func(c *Config) {
			c.faults.beforeIncidentRead = func(string) {
				if held.Swap(true) {
					return // the first batch only
				}
				// Wait (up to 5 s) for the batch's successes to commit.
				for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
					var n int
					if err := b.db.QueryRow("SELECT COUNT(*) FROM items WHERE refresh_last_success_at IS NOT NULL").Scan(&n); err == nil && n > 0 {
						committed.Store(true)
						return
					}
				}
			}
		})
		jobs := b.popJobs(2)
		rs := make([]redisio.Result, len(jobs))
		for i, j := range jobs {
			rs[i] = redisio.Result{UID: j.UID, AttemptUID: j.AttemptUID, Type: "success"}
		}
		b.sendAll(rs...)
		for _, uid := range []string{"m1", "m2"} {
			b.waitFor(uid, "success applied", func(s policy.State) bool { return !s.LastSuccessAt.IsZero() })
		}
		require.Eventually(t, func() bool { return b.leftInProcessing() == 0 }, 10*time.Second, 10*time.Millisecond, "the batch is acknowledged")
		require.True(t, held.Load(), "the incident window was read for the batch")
		require.True(t, committed.Load(), "the batch committed while the incident window's read was held")
	})
}

// A panic in the incident window's read beside the apply
// (decideIncident's goroutine) reaches Run as a fatal error, as a panic of
// the push behind or of the pauses' read beside the claim does, instead
// of killing the process.
func TestIncidentReadPanicReachesRun(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{timeout: time.Hour})
	require.NoError(t, b.rdb.RPush(context.Background(), b.kind.Lists.Output,
		`{"uid":"nobody","attempt_uid":"a","type":"success"}`).Err())
	svc, err := New(b.config(func(c *Config) {
		c.faults.beforeIncidentRead = func(string) { panic("boom in the incident read") }
	}), b.store, b.rio)
	require.NoError(t, err)
	err = runFor(t, svc)
	require.Error(t, err)
	require.Contains(t, err.Error(), "boom in the incident read")
}
