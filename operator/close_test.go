package operator

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/models"
)

// slowRecount is a store whose Counts answers the first call at once and
// is slow in the others: it waits for its context to end, then 300ms more,
// as a count caught in a long query would. recounting is closed at the
// second call.
type slowRecount struct {
	models.Store
	calls      atomic.Int32
	inFlight   atomic.Int32
	recounting chan struct{}
	once       sync.Once
}

func (s *slowRecount) Counts(ctx context.Context, t models.Table, now time.Time, lateAfter time.Duration) (models.Counts, error) {
	if s.calls.Add(1) == 1 {
		return s.Store.Counts(ctx, t, now, lateAfter)
	}
	s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	s.once.Do(func() { close(s.recounting) })
	<-ctx.Done()
	time.Sleep(300 * time.Millisecond)
	return models.Counts{}, ctx.Err()
}

// Close stops the background recount of the overview and waits for it, so
// that it does not outlive the clients its caller closes next; after Close
// no recount starts.
func TestCloseStopsTheRecount(t *testing.T) {
	f := newFixture(t, nil)
	store := &slowRecount{Store: f.store, recounting: make(chan struct{})}
	var mu sync.Mutex
	clock := now
	srv, err := New(Options{Kinds: []Kind{f.kind}, Store: store, Redis: f.rdb, Logger: slog.New(slog.DiscardHandler),
		Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }})
	require.NoError(t, err)
	advance := func() { mu.Lock(); clock = clock.Add(overviewTTL); mu.Unlock() }

	_, _, err = srv.overviewCached(t.Context()) // counts
	require.NoError(t, err)
	advance()
	_, _, err = srv.overviewCached(t.Context()) // answers, and recounts in the background
	require.NoError(t, err)
	select {
	case <-store.recounting:
	case <-time.After(10 * time.Second):
		t.Fatal("no recount started")
	}
	start := time.Now()
	srv.Close()
	require.Less(t, time.Since(start), 10*time.Second, "Close did not stop the recount: it ran to its own timeout")
	require.Zero(t, store.inFlight.Load(), "the recount outlived Close")

	calls := store.calls.Load()
	advance()
	_, _, err = srv.overviewCached(t.Context())
	require.NoError(t, err)
	srv.Close() // twice is fine
	require.Equal(t, calls, store.calls.Load(), "a recount started after Close")
}
