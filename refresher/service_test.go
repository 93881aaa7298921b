package refresher

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/redisio"
)

// runFor runs svc until it returns or 10s pass, and returns its error.
func runFor(t *testing.T, svc *Service) error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		cancel()
		<-done
		t.Fatal("Run did not return within 10s")
		return nil
	}
}

// A missing refresh column is a misconfiguration: Run returns it before any
// loop starts (no row is claimed), without the caller calling Check.
func TestRunReturnsMissingColumns(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	b.insert("m1")
	_, err := b.db.Exec("ALTER TABLE items DROP COLUMN refresh_status")
	require.NoError(t, err)
	svc, err := New(b.cfg, b.store, b.rio)
	require.NoError(t, err)

	err = runFor(t, svc)
	require.Error(t, err)
	require.Contains(t, err.Error(), "refresh_status")
	require.Contains(t, err.Error(), "refresher migrate")
	n, err := b.rdb.LLen(context.Background(), b.kind.Lists.Input).Result()
	require.NoError(t, err)
	require.Zero(t, n, "a job was pushed: the loops started")
}

// A drain that could not work (lists without names, a heartbeat shorter
// than redisio's minimum) fails New, instead of every Redis call for ever.
func TestNewRefusesBadDrainConfig(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	cfg := b.cfg
	k := cfg.Kinds[0]
	k.Lists = redisio.Lists{Input: "in", Output: "out", Dead: "out"}
	cfg.Kinds = []Kind{k}
	_, err := New(cfg, b.store, b.rio)
	require.ErrorContains(t, err, `"out"`)

	cfg = b.cfg
	cfg.Heartbeat = 500 * time.Millisecond
	cfg.FetchBlock = 100 * time.Millisecond
	_, err = New(cfg, b.store, b.rio)
	require.ErrorContains(t, err, "Heartbeat 500ms")
}

// A loop that fails fatally (here a panic: a bug) stops the whole service
// in order, and Run returns the error instead of nil.
func TestRunReturnsTheFatalError(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	b.insert("m1")
	cfg := b.cfg
	cfg.Observer.AfterDispatch = func(string, int) { panic("boom in the dispatcher") }
	svc, err := New(cfg, b.store, b.rio)
	require.NoError(t, err)
	err = runFor(t, svc)
	require.Error(t, err)
	require.True(t, strings.Contains(err.Error(), "boom in the dispatcher") && strings.Contains(err.Error(), "kind items: dispatcher"), err.Error())
}

// A clean shutdown returns nil; the pollers stop after the dispatchers.
func TestRunReturnsNilOnCancel(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	svc, err := New(b.config(nil), b.store, b.rio)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	b.passes.wait(t, 1) // running
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s of cancel")
	}
}

// slowCounts is an Inspector whose Counts is slow to give up: it returns
// 1.5s after its context ends (longer than the loops take to stop), as a
// count caught in a long query would. started is closed at the first
// call; inFlight counts the calls running.
type slowCounts struct {
	models.Inspector
	started  chan struct{}
	once     sync.Once
	inFlight atomic.Int32
}

func (s *slowCounts) Counts(ctx context.Context, _ models.Table, _ time.Time, _ time.Duration) (models.Counts, error) {
	s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	s.once.Do(func() { close(s.started) })
	<-ctx.Done()
	time.Sleep(1500 * time.Millisecond)
	return models.Counts{}, ctx.Err()
}

// Run runs the alert gauges (Config.Gauges) and, when it returns, they have
// stopped: no count is in flight, so the caller may close Redis and the
// database.
func TestRunStopsTheGaugesBeforeItReturns(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	counts := &slowCounts{Inspector: b.store, started: make(chan struct{})}
	cfg := b.cfg
	cfg.Metrics = NewMetrics()
	cfg.Gauges = NewGauges(cfg.Metrics.Registry, GaugeConfig{
		Kinds:     []GaugeKind{{Name: b.kind.Name, Table: b.kind.Table, Lists: b.kind.Lists}},
		Inspector: counts, Redis: b.rio, Interval: time.Minute, Logger: cfg.Logger,
	})
	svc, err := New(cfg, b.store, b.rio)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	select {
	case <-counts.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the gauges did not count within 10s of Run")
	}
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s of cancel")
	}
	require.Zero(t, counts.inFlight.Load(), "a gauge count outlived Run")
}
