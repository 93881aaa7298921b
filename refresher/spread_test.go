package refresher

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
)

// With spread: 10m two rows of the same daily 14:00 rule get different
// times, 14:00 plus their own offset, and a second instance started after
// the first stopped dispatches each row at the same time again.
func TestSpreadGivesRowsStableTimes(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{timeout: time.Hour})
	b.cfg.Kinds[0].Policy.Spread = policy.Spread{Window: 10 * time.Minute}
	b.insert("m1", "m2")
	// FNV-1a of "items\x00m1" and "items\x00m2", modulo 600 s (pinned in
	// policy's tests).
	offsets := map[string]time.Duration{"m1": 91 * time.Second, "m2": 302 * time.Second}
	for uid, off := range offsets {
		require.Equal(t, off, policy.SpreadOffset("items", uid, 10*time.Minute), uid)
	}
	at14 := time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)

	first := b.runOn(context.Background(), b.store, b.rio, nil)
	// Due at t0 (10:00) when inserted: both start at once.
	for _, j := range b.popJobs(2) {
		b.send(redisio.Result{UID: j.UID, AttemptUID: j.AttemptUID, Type: "success"})
	}
	for uid, off := range offsets {
		st := b.waitFor(uid, "success applied", func(s policy.State) bool { return !s.Running() && s.AttemptNo == 0 })
		require.True(t, st.RefreshAt.Equal(at14.Add(off)), "%s: refresh_at %s, want 14:00 + %s", uid, st.RefreshAt, off)
	}
	first.stop()

	// Another instance, after a restart.
	b.runOn(context.Background(), b.store, b.rio, func(c *Config) { c.InstanceID = "test-b" })
	b.clock.Advance(at14.Add(offsets["m1"] - time.Second).Sub(b.clock.Now()))
	b.noJob() // 14:01:30: nobody is due yet, though the rule's 14:00 has passed
	b.clock.Advance(time.Second)
	j := b.popJob()
	require.Equal(t, "m1", j.UID)
	b.noJob() // m2 waits for 14:05:02
	b.send(redisio.Result{UID: "m1", AttemptUID: j.AttemptUID, Type: "success"})
	st := b.waitFor("m1", "success applied", func(s policy.State) bool { return !s.Running() })
	require.True(t, st.RefreshAt.Equal(at14.Add(24*time.Hour+offsets["m1"])), "m1 keeps its offset: %s", st.RefreshAt)

	b.clock.Advance(at14.Add(offsets["m2"]).Sub(b.clock.Now()))
	j = b.popJob()
	require.Equal(t, "m2", j.UID)
	require.True(t, j.TimeoutAt.Equal(at14.Add(offsets["m2"]+time.Hour)))
}
