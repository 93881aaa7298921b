package refresher

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A backlog costs no NextDue per batch: the pass after a full batch
// claims without asking the store first, and only a pass after a short
// one asks again.
func TestBacklogClaimsWithoutNextDue(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{timeout: time.Hour})
	b.insert("a1", "a2", "a3", "a4", "a5")
	store := &nextDueCount{Store: b.store}
	b.cfg.BatchSize = 2
	svc, err := New(b.cfg, store, b.rio)
	require.NoError(t, err)
	d := newTestDispatcher(svc)
	b.clock.Advance(time.Second)

	ctx := context.Background()
	var started []int
	for range 4 {
		n, _, _, err := d.runOnce(ctx)
		require.NoError(t, err)
		started = append(started, n)
	}
	// A full batch is pushed behind the next pass, which counts its jobs
	// (see pushBehind): 2, 2 and 1 started.
	require.Equal(t, []int{0, 2, 3, 0}, started)
	// The first pass asks, the two after a full batch do not, the one
	// after the short batch does.
	require.EqualValues(t, 2, store.one.Load(), "NextDue calls in 4 passes")
}
