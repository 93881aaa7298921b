package refresher

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/models"
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

// TestClaimGatesPerStore: each database has its own pool, so the kinds of
// one store share a claim gate of their own, and a kind alone on its store
// gets none.
func TestClaimGatesPerStore(t *testing.T) {
	type store struct{ models.Store }
	a, b := &store{}, &store{}
	s := &Service{cfg: Config{ClaimConnections: 3, Kinds: []Kind{{Store: a}, {Store: b}, {Store: a}}}}
	gates := s.claimGates()
	require.Len(t, gates, 1, "only store a holds several kinds")
	require.NotNil(t, gates[a])
	require.Equal(t, 3, gates[a].free)
	require.Nil(t, gates[b], "a kind alone on its database is not capped")

	s.cfg.ClaimConnections = 0
	require.Empty(t, s.claimGates(), "no cap asked for")
}
