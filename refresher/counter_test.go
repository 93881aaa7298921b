package refresher

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/models/mysqlstore"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
)

// callCounting is a real store's Inspector whose Counts and Backlog calls
// are counted; while gate is set, Counts waits for it to close (after
// saying so on entered).
type callCounting struct {
	models.Inspector
	counts, backlogs atomic.Int64
	knownDue         atomic.Pointer[int64] // Backlog's last knownDue, copied (nil: nil)
	estimateDue      bool                  // Counts reports its due count as an estimate
	gate             chan struct{}
	entered          chan struct{}
}

func (c *callCounting) Counts(ctx context.Context, t models.Table, now time.Time, lateAfter time.Duration) (models.Counts, error) {
	c.counts.Add(1)
	if c.gate != nil {
		c.entered <- struct{}{}
		select {
		case <-c.gate:
		case <-ctx.Done():
			return models.Counts{}, ctx.Err()
		}
	}
	counts, err := c.Inspector.Counts(ctx, t, now, lateAfter)
	if c.estimateDue {
		counts.Estimated = append(counts.Estimated, models.StateDue)
	}
	return counts, err
}

func (c *callCounting) Backlog(ctx context.Context, t models.Table, now time.Time, knownDue *int64) ([]models.LevelCount, error) {
	c.backlogs.Add(1)
	var known *int64
	if knownDue != nil {
		n := *knownDue
		known = &n
	}
	c.knownDue.Store(known)
	return c.Inspector.Backlog(ctx, t, now, knownDue)
}

// counterKind seeds a table with a late failing row, a row due later and
// a disabled one, and returns its kind on a call-counting store.
func counterKind(t *testing.T, name string, now time.Time) (CountedKind, *callCounting) {
	t.Helper()
	ctx := context.Background()
	db := gaugeTable(t, name)
	store := mysqlstore.New(db)
	tbl := models.Table{Name: name, Key: "id"}
	rows := []models.Row{
		{Key: "1", State: policy.State{RefreshAt: now.Add(-90 * time.Second), AttemptNo: 4, FailingSince: now}},
		{Key: "2", State: policy.State{RefreshAt: now.Add(time.Hour)}},
		{Key: "3", State: policy.State{DisabledAt: now, AttemptNo: 2}},
	}
	for _, r := range rows {
		if _, err := db.Exec("INSERT INTO " + name + " (id) VALUES (" + r.Key + ")"); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.Tx(ctx, func(tx models.Tx) error { return tx.Save(ctx, tbl, rows) }); err != nil {
		t.Fatal(err)
	}
	in := &callCounting{Inspector: store}
	return CountedKind{Name: name, Table: tbl, LateAfter: time.Minute, Inspector: in}, in
}

// TestCounterSharesAFreshCount: a count younger than maxAge is given again
// without a query, an older one is counted afresh, and the counts are the
// store's own.
func TestCounterSharesAFreshCount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Date(2026, 3, 4, 14, 0, 0, 0, time.UTC)
	k, in := counterKind(t, "cshare", now)
	want, err := in.Inspector.Counts(ctx, k.Table, now, time.Minute)
	require.NoError(t, err)
	wantBacklog, err := in.Inspector.Backlog(ctx, k.Table, now, nil)
	require.NoError(t, err)
	require.EqualValues(t, 1, want.Due)
	require.EqualValues(t, 1, want.Late)

	c := NewCounter()
	first, err := c.Count(ctx, k, now, 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, KindCounts{At: now, Counts: want, Backlog: wantBacklog}, first)
	require.NotNil(t, in.knownDue.Load(), "the backlog is given the due count just made")
	require.Equal(t, want.Due, *in.knownDue.Load())

	again, err := c.Count(ctx, k, now.Add(4*time.Second), 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, first, again, "a count 4s old, within 5s, is the same count")
	require.EqualValues(t, 1, in.counts.Load())
	require.EqualValues(t, 1, in.backlogs.Load())

	later := now.Add(5 * time.Second)
	fresh, err := c.Count(ctx, k, later, 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, later, fresh.At, "a count 5s old is stale at a maxAge of 5s: counted again")
	require.EqualValues(t, 2, in.counts.Load())

	// Another kind name, or another late threshold, is another count.
	other := k
	other.LateAfter = 2 * time.Minute
	_, err = c.Count(ctx, other, later, 5*time.Second)
	require.NoError(t, err)
	require.EqualValues(t, 3, in.counts.Load())

	// A count from after now (a clock set back) is not given.
	_, err = c.Count(ctx, k, now, time.Hour)
	require.NoError(t, err)
	require.EqualValues(t, 4, in.counts.Load())
}

// TestCounterEstimatedDueNotGivenToBacklog: a due count that is an
// estimate (a large table's, models.Counts.Estimated) is not given to
// Backlog as the kind's level: the backlog counts its own.
func TestCounterEstimatedDueNotGivenToBacklog(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 4, 14, 0, 0, 0, time.UTC)
	k, in := counterKind(t, "cestimated", now)
	in.estimateDue = true
	_, err := NewCounter().Count(context.Background(), k, now, time.Second)
	require.NoError(t, err)
	require.EqualValues(t, 1, in.backlogs.Load())
	require.Nil(t, in.knownDue.Load(), "an estimated due count is given to Backlog")
}

// TestCounterConcurrentAsksShareOneQuery: asks for a kind's count while
// one runs wait for it and share it.
func TestCounterConcurrentAsksShareOneQuery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Date(2026, 3, 4, 14, 0, 0, 0, time.UTC)
	k, in := counterKind(t, "cconc", now)
	in.gate, in.entered = make(chan struct{}), make(chan struct{}, 16)
	c := NewCounter()
	const askers = 6
	got := make([]KindCounts, askers)
	var wg sync.WaitGroup
	for i := range askers {
		wg.Go(func() {
			kc, err := c.Count(ctx, k, now, 0) // maxAge 0: no count is fresh enough to keep
			if err != nil {
				t.Error(err)
			}
			got[i] = kc
		})
	}
	<-in.entered
	time.Sleep(300 * time.Millisecond) // the others ask meanwhile
	close(in.gate)
	wg.Wait()
	require.EqualValues(t, 1, in.counts.Load(), "concurrent asks ran their own counts")
	for i := range got {
		require.Equal(t, got[0], got[i])
	}
	require.EqualValues(t, 1, got[0].Counts.Due)
}

// TestCounterOtherCallersContextDoesNotFailMine: when the caller whose
// count the others wait for goes away, a waiter with a live context counts
// again rather than failing.
func TestCounterOtherCallersContextDoesNotFailMine(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 4, 14, 0, 0, 0, time.UTC)
	k, in := counterKind(t, "cctx", now)
	in.gate, in.entered = make(chan struct{}), make(chan struct{}, 16)
	c := NewCounter()
	firstCtx, cancelFirst := context.WithCancel(context.Background())
	firstErr := make(chan error, 1)
	go func() {
		_, err := c.Count(firstCtx, k, now, time.Second)
		firstErr <- err
	}()
	<-in.entered
	mine := make(chan error, 1)
	var kc KindCounts
	go func() {
		var err error
		kc, err = c.Count(context.Background(), k, now, time.Second)
		mine <- err
	}()
	time.Sleep(200 * time.Millisecond) // mine joins the first's count
	cancelFirst()
	require.ErrorIs(t, <-firstErr, context.Canceled)
	select {
	case <-in.entered: // mine counts again
	case err := <-mine:
		t.Fatalf("the first caller's canceled count failed mine: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("mine neither counted again nor returned")
	}
	close(in.gate)
	require.NoError(t, <-mine)
	require.EqualValues(t, 1, kc.Counts.Due)
}

// TestCounterForgetRecounts: after Forget (an operator's action) the next
// ask counts again, and a count that ran across the Forget is not kept.
func TestCounterForgetRecounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Date(2026, 3, 4, 14, 0, 0, 0, time.UTC)
	k, in := counterKind(t, "cforget", now)
	c := NewCounter()
	_, err := c.Count(ctx, k, now, time.Minute)
	require.NoError(t, err)
	c.Forget()
	_, err = c.Count(ctx, k, now, time.Minute)
	require.NoError(t, err)
	require.EqualValues(t, 2, in.counts.Load(), "Forget kept the count")

	in.gate, in.entered = make(chan struct{}), make(chan struct{}, 16)
	c.Forget()
	done := make(chan error, 1)
	go func() {
		_, err := c.Count(ctx, k, now, time.Minute)
		done <- err
	}()
	<-in.entered
	c.Forget() // while the count runs
	close(in.gate)
	require.NoError(t, <-done)
	_, err = c.Count(ctx, k, now, time.Minute)
	require.NoError(t, err)
	require.EqualValues(t, 4, in.counts.Load(), "a count that began before Forget was kept")
}

// TestGaugesTakeAFreshCount: the gauges report a count of the kind the
// Counter has when it is at most GaugeShareAge old, as of when it was
// counted, and count again when it is older.
func TestGaugesTakeAFreshCount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Date(2026, 3, 4, 14, 0, 0, 0, time.UTC)
	k, in := counterKind(t, "cgauge", now)
	rdb, prefix := testenv.Redis(t)
	counter := NewCounter()
	_, err := counter.Count(ctx, k, now.Add(-4*time.Second), time.Second) // the dashboard's, 4s before the tick
	require.NoError(t, err)
	require.Equal(t, 5*time.Second, GaugeShareAge(15*time.Second))
	gk := GaugeKind{Name: k.Name, Table: k.Table, Lists: redisio.DefaultLists(prefix + k.Name), LateAfter: k.LateAfter}
	g := NewGauges(prometheus.NewRegistry(), GaugeConfig{Kinds: []GaugeKind{gk}, Inspector: in, Redis: redisio.New(rdb),
		Interval: 15 * time.Second, Counter: counter, Clock: fixedClock(now)})
	computed, err := g.Tick(ctx)
	require.NoError(t, err)
	require.True(t, computed)
	require.EqualValues(t, 1, in.counts.Load(), "the gauges counted again within GaugeShareAge")
	require.EqualValues(t, 1, testutil.ToFloat64(g.models.WithLabelValues(k.Name, "", "due")))
	require.EqualValues(t, 86, testutil.ToFloat64(g.oldest.WithLabelValues(k.Name, "")), "the oldest due row's age as of the count")

	stale := NewCounter()
	_, err = stale.Count(ctx, k, now.Add(-6*time.Second), time.Second)
	require.NoError(t, err)
	rdb2, prefix2 := testenv.Redis(t)
	gk.Lists = redisio.DefaultLists(prefix2 + k.Name)
	g = NewGauges(prometheus.NewRegistry(), GaugeConfig{Kinds: []GaugeKind{gk}, Inspector: in, Redis: redisio.New(rdb2),
		Interval: 15 * time.Second, Counter: stale, Clock: fixedClock(now)})
	_, err = g.Tick(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 3, in.counts.Load(), "a count 6s old was reported, older than GaugeShareAge")
	require.EqualValues(t, 90, testutil.ToFloat64(g.oldest.WithLabelValues(k.Name, "")))
}

// timingOut is an Inspector whose own timeout ends every count with a
// context error while the caller's context is live.
type timingOut struct {
	models.Inspector
	counts atomic.Int64
}

func (c *timingOut) Counts(context.Context, models.Table, time.Time, time.Duration) (models.Counts, error) {
	c.counts.Add(1)
	return models.Counts{}, fmt.Errorf("count: %w", context.DeadlineExceeded)
}

// TestCounterGivesUpOnItsOwnTimeouts: a count that fails with a context
// error not of the caller's context is tried again a bounded number of
// times, then its error is returned (not an endless loop).
func TestCounterGivesUpOnItsOwnTimeouts(t *testing.T) {
	t.Parallel()
	in := &timingOut{}
	k := CountedKind{Name: "slow", Table: models.Table{Name: "slow", Key: "id"}, Inspector: in}
	done := make(chan error, 1)
	go func() {
		_, err := NewCounter().Count(context.Background(), k, time.Now(), time.Second)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want the Inspector's deadline error", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("Count still retrying after %d counts", in.counts.Load())
	}
	if n := in.counts.Load(); n != maxCountTries {
		t.Errorf("counted %d times, want %d", n, maxCountTries)
	}
}

// TestCounterWaiterGivesUpOnItsContext: a caller waiting for another's
// count returns when its own context ends (a page's timeout), and the
// count goes on for its leader.
func TestCounterWaiterGivesUpOnItsContext(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC().Truncate(time.Second)
	k, in := counterKind(t, "counter_waiter_ctx", now)
	in.gate, in.entered = make(chan struct{}), make(chan struct{}, 1)
	c := NewCounter()
	led := make(chan error, 1)
	go func() {
		_, err := c.Count(context.Background(), k, now, time.Minute)
		led <- err
	}()
	<-in.entered
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Count(ctx, k, now, time.Minute)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), time.Second, "the waiter waited for the leader's count")
	close(in.gate)
	require.NoError(t, <-led)
	require.EqualValues(t, 1, in.counts.Load())
}
