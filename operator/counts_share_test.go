package operator

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/redisio"
	"github.com/refresher/refresher/refresher"
)

// countedStore is the fixture's store with its Counts calls counted.
type countedStore struct {
	models.Store
	counts atomic.Int64
}

func (s *countedStore) Counts(ctx context.Context, t models.Table, now time.Time, lateAfter time.Duration) (models.Counts, error) {
	s.counts.Add(1)
	return s.Store.Counts(ctx, t, now, lateAfter)
}

// shareClock is a clock a test moves.
type shareClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *shareClock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *shareClock) set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// gaugeValue is the value of the gauge series name{labels} in reg.
func gaugeValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if v, ok := labels[l.GetName()]; ok && v != l.GetValue() {
					continue metrics
				}
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no series %s%v", name, labels)
	return 0
}

// shareGauges are alert gauges (interval 15s) of kind k on lists of their
// own, counting through counter as `refresher run` wires them.
func shareGauges(f *fixture, store models.Inspector, counter *refresher.Counter, clock refresher.Clock, lists string) (*refresher.Gauges, *prometheus.Registry) {
	reg := prometheus.NewRegistry()
	k := f.kind
	g := refresher.NewGauges(reg, refresher.GaugeConfig{
		Kinds: []refresher.GaugeKind{{Name: k.Name, Table: k.Table, Lists: redisio.DefaultLists(k.Lists.Input + lists),
			LateAfter: k.LateAfter, Priority: k.Priority}},
		Inspector: store, Redis: redisio.New(f.rdb), Interval: 15 * time.Second, Counter: counter,
		Clock: clock, Logger: slog.New(slog.DiscardHandler)})
	return g, reg
}

// TestOverviewAndGaugesShareOneCount: with one Counter, the overview shows
// the gauges' fresh count and the gauges report the overview's, each
// counting only when the other's is too old for it; the overview never
// answers with rows counted more than overviewMaxAge before; the numbers
// are the store's.
func TestOverviewAndGaugesShareOneCount(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	store := &countedStore{Store: &noLedger{f.store}}
	clock := &shareClock{t: now}
	counter := refresher.NewCounter()
	srv, err := New(Options{Kinds: []Kind{f.kind}, Store: store, Redis: f.rdb, Counter: counter,
		Now: clock.Now, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	want, err := f.store.Counts(ctx, f.kind.Table, now, f.kind.LateAfter)
	require.NoError(t, err)

	g, reg := shareGauges(f, store, counter, clock, "-a")
	computed, err := g.Tick(ctx) // the gauges count at now
	require.NoError(t, err)
	require.True(t, computed)
	require.EqualValues(t, 1, store.counts.Load())
	series := map[string]string{"kind": "items", "state": "due"}
	require.EqualValues(t, want.Due, gaugeValue(t, reg, "refresher_models", series))

	clock.set(now.Add(time.Second)) // a dashboard opens 1s later: the gauges' count is its
	sums, at, err := srv.overviewCached(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, store.counts.Load(), "the overview counted again beside the gauges' fresh count")
	require.Equal(t, now, at, "the overview's counted_at is when the gauges counted")
	require.Equal(t, want.Due, sums[0].Due)
	require.Equal(t, want.Late, sums[0].Late)
	require.Equal(t, want.Disabled, sums[0].Disabled)

	clock.set(now.Add(5 * time.Second)) // the page's own refresh: answered at once, recounted behind it
	_, at, err = srv.overviewCached(ctx)
	require.NoError(t, err)
	require.Equal(t, now, at, "the page's refresh waited for a count")
	srv.recounts.Wait()
	require.EqualValues(t, 2, store.counts.Load(), "no recount behind a 5s old answer")

	clock.set(now.Add(overviewMaxAge + 7*time.Second)) // a reload after a quiet while: no answer a minute old
	sums, at, err = srv.overviewCached(ctx)
	require.NoError(t, err)
	require.Equal(t, now.Add(overviewMaxAge+7*time.Second), at, "the overview answered with rows counted over a minute before")
	require.EqualValues(t, 3, store.counts.Load())
	require.Equal(t, want.Due, sums[0].Due)

	// An action drops the shared count: the overview counts afresh, even
	// with a count of the same instant at hand.
	srv.invalidate()
	_, _, err = srv.overviewCached(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 4, store.counts.Load(), "an action's effect did not show: the overview kept the count")

	clock.set(now.Add(overviewMaxAge + 10*time.Second)) // gauges tick 3s after the dashboard's count: it is theirs
	g2, reg2 := shareGauges(f, store, counter, clock, "-b")
	computed, err = g2.Tick(ctx)
	require.NoError(t, err)
	require.True(t, computed)
	require.EqualValues(t, 4, store.counts.Load(), "the gauges counted again beside the dashboard's fresh count")
	require.EqualValues(t, want.Due, gaugeValue(t, reg2, "refresher_models", series))
}
