package refresher

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/models"
)

// After a full batch the next pass claims while the batch's jobs are
// being pushed (pushBehind): with the first push held up, the second batch
// is claimed and committed. The jobs still reach the input list in the
// order their attempts started, and each once.
func TestFullBatchIsPushedWhileTheNextPassClaims(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{timeout: time.Hour})
	uids := b.insertN(5, t0)
	held, release := make(chan struct{}), make(chan struct{})
	first := true
	b.start(func(c *Config) {
		c.BatchSize = 2
		c.faults.beforePush = func(string) {
			if first { // pushes are one at a time: no race on first
				first = false
				close(held)
				<-release
			}
		}
	})
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("no push within 10s")
	}
	testenv.EventuallyNil(t, 10*time.Second, "the second batch claimed while the first is being pushed", func() error {
		// Read without locking: the claim skips locked rows.
		var running int
		if err := b.d.QueryRow("SELECT COUNT(*) FROM items WHERE refresh_attempt_no = 1").Scan(&running); err != nil {
			return err
		}
		if running < 4 {
			return fmt.Errorf("%d of 5 rows running", running)
		}
		return nil
	})
	n, err := b.rdb.LLen(context.Background(), b.kind.Lists.Input).Result()
	require.NoError(t, err)
	require.Zero(t, n, "no job pushed while the first push is held up")
	close(release)

	var attempts []string
	for _, j := range b.popEachOnce(len(uids)) {
		attempts = append(attempts, j.AttemptUID)
	}
	// Attempt UIDs are xids, which sort in the order they were made.
	require.True(t, slices.IsSorted(attempts), "jobs in the order their attempts started: %v", attempts)
	b.noJob()
}

// A push behind counts its jobs (attempts_started_total) once they are in
// the input list, not when the next pass joins it: with the next pass held
// (its read of the pauses, beside its claim, waits), the first batch's
// jobs are pushed and counted.
func TestPushBehindCountsItsJobsWhenPushed(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{timeout: time.Hour})
	b.insertN(3, t0)
	release := make(chan struct{})
	defer close(release)
	reads := 0
	svc := b.start(func(c *Config) {
		c.BatchSize = 2
		c.faults.beforeReadPauses = func(string) error {
			if reads++; reads == 2 { // the second pass's read, beside its claim
				<-release
			}
			return nil
		}
	})
	testenv.EventuallyNil(t, 10*time.Second, "the first batch's jobs pushed and counted", func() error {
		n, err := b.rdb.LLen(context.Background(), b.kind.Lists.Input).Result()
		if err != nil {
			return err
		}
		if started := toFloat(svc.Metrics().Started.WithLabelValues("items")); n != 2 || started != 2 {
			return fmt.Errorf("%d jobs in the input list, %v counted as started", n, started)
		}
		return nil
	})
}

// slowFirstClaim runs onFirst inside the first ClaimDue (in the claim's
// transaction), before the claim.
type slowFirstClaim struct {
	models.Store
	n       *atomic.Int32
	onFirst func()
}

func (s *slowFirstClaim) Tx(ctx context.Context, fn func(models.Tx) error) error {
	return s.Store.Tx(ctx, func(tx models.Tx) error { return fn(slowFirstClaimTx{tx, s}) })
}

type slowFirstClaimTx struct {
	models.Tx
	s *slowFirstClaim
}

func (tx slowFirstClaimTx) ClaimDue(ctx context.Context, t models.Table, now time.Time, from models.Cursor, n int) ([]models.Row, error) {
	if tx.s.n.Add(1) == 1 {
		tx.s.onFirst()
	}
	return tx.Tx.ClaimDue(ctx, t, now, from, n)
}

// The input list's length that throttled reads (LLEN) may predate the
// push behind: near MaxQueued the pass waits for that push before it
// claims. Another instance's 4 jobs arrive while the first pass claims
// (longer than queuedRecheck) and the first push is held 1 s: the second
// pass's LLEN sees 4, the push in flight brings 2 more, MaxQueued is 6,
// so it must not claim. Without the wait the list ended at 8.
func TestMaxQueuedCountsThePushBehind(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{timeout: time.Hour})
	b.insertN(20, t0)
	var claims, pushes atomic.Int32
	store := &slowFirstClaim{Store: b.store, n: &claims, onFirst: func() {
		require.NoError(t, b.rdb.RPush(context.Background(), b.kind.Lists.Input, "x", "x", "x", "x").Err())
		time.Sleep(queuedRecheck + 100*time.Millisecond)
	}}
	b.runOn(context.Background(), store, b.rio, func(c *Config) {
		c.BatchSize = 2
		c.MaxSleep = 50 * time.Millisecond
		c.Kinds[0].MaxQueued = 6
		c.faults.beforePush = func(string) {
			if pushes.Add(1) == 1 {
				time.Sleep(time.Second)
			}
		}
	})
	testenv.Eventually(t, 10*time.Second, "first push", func() bool { return b.llen(b.kind.Lists.Input) >= 6 })
	b.passes.wait(t, 4)
	require.LessOrEqual(t, b.llen(b.kind.Lists.Input), int64(6), "MaxQueued 6 overshot by this instance's own push")
}

// A push behind that panics reaches Run, and the pass that joins it
// undoes its own attempts first: only the panicked batch's attempts are
// left running with no job, as after a panic in a push of the
// dispatcher's own goroutine.
func TestPushBehindPanicUndoesTheNextPass(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{timeout: time.Hour})
	b.insertN(5, t0)
	var pushes atomic.Int32
	svc, err := New(b.config(func(c *Config) {
		c.BatchSize = 2
		c.faults.beforePush = func(string) {
			if pushes.Add(1) == 1 {
				time.Sleep(300 * time.Millisecond) // the next pass claims meanwhile
				panic("boom in the push")
			}
		}
	}), b.store, b.rio)
	require.NoError(t, err)
	err = runFor(t, svc)
	require.ErrorContains(t, err, "boom in the push")
	var running int
	require.NoError(t, b.d.QueryRow("SELECT COUNT(*) FROM items WHERE refresh_attempt_no = 1").Scan(&running))
	require.Zero(t, b.llen(b.kind.Lists.Input))
	require.Equal(t, 2, running, "rows running with no job: the panicked batch's only")
}
