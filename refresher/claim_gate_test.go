package refresher

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestClaimGateAdmitsUrgentKindsFirst: when the slots are taken, the
// waiting dispatcher of the most urgent kind goes first, then first come.
func TestClaimGateAdmitsUrgentKindsFirst(t *testing.T) {
	t.Parallel()
	g := newClaimGate(1)
	ctx := context.Background()
	require.NoError(t, g.acquire(ctx, 5))
	order := make(chan int, 4)
	for i, level := range []int{20, 10, 0, 10} {
		go func() {
			require.NoError(t, g.acquire(ctx, level))
			order <- i
			time.Sleep(5 * time.Millisecond)
			g.release()
		}()
		require.Eventually(t, func() bool { g.mu.Lock(); defer g.mu.Unlock(); return len(g.waiting) == i+1 }, time.Second, time.Millisecond)
	}
	g.release()
	var got []int
	for range 4 {
		got = append(got, <-order)
	}
	require.Equal(t, []int{2, 1, 3, 0}, got, "levels 0, 10 (first come), 10, 20")

	// A waiter whose context ends leaves the queue; the slot stays usable.
	require.NoError(t, g.acquire(ctx, 0))
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- g.acquire(cctx, 0) }()
	require.Eventually(t, func() bool { g.mu.Lock(); defer g.mu.Unlock(); return len(g.waiting) == 1 }, time.Second, time.Millisecond)
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	g.release()
	require.NoError(t, g.acquire(ctx, 30))
}
