package refresher

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// passesIn starts a service (MaxSleep 100ms, changed by mod) and returns
// its count of dispatcher passes.
func passesIn(b *testBundle, mod func(*Config)) *atomic.Int64 {
	var passes atomic.Int64
	b.start(func(c *Config) {
		c.MaxSleep = 100 * time.Millisecond
		c.Hooks.AfterDispatch = func(string, int) { passes.Add(1) }
		if mod != nil {
			mod(c)
		}
	})
	return &passes
}

// A due row the dispatcher cannot claim (its key is NULL, so no result could
// name it) must not make the loop spin: passes stay paced.
func TestDispatcherDoesNotSpinOnUnclaimableRows(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	_, err := b.db.Exec("ALTER TABLE items MODIFY uid CHAR(20) NULL")
	require.NoError(t, err)
	_, err = b.db.Exec("INSERT INTO items (uid, refresh_at) VALUES (NULL, ?)", t0)
	require.NoError(t, err)
	passes := passesIn(b, nil)
	time.Sleep(500 * time.Millisecond)
	n := passes.Load()
	require.LessOrEqual(t, n, int64(30), "dispatcher passes in 500ms (a pass every 20ms at most)")
	require.Positive(t, n)
}

// While the input list holds MaxQueued jobs or more, nothing is dispatched
// and the dispatcher waits MaxSleep between looks; once workers catch up,
// dispatching resumes.
func TestBackpressure(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{timeout: time.Hour})
	b.insert("a", "b", "c")
	passes := passesIn(b, func(c *Config) { c.Kinds[0].MaxQueued = 2 })
	deadline := time.Now().Add(10 * time.Second)
	for b.llen(b.kind.Lists.Input) < 3 {
		require.True(t, time.Now().Before(deadline), "first batch not pushed")
		time.Sleep(10 * time.Millisecond)
	}
	b.insert("d", "e")
	start := passes.Load()
	time.Sleep(500 * time.Millisecond)
	require.LessOrEqual(t, passes.Load()-start, int64(8), "throttled passes in 500ms with MaxSleep 100ms")
	require.EqualValues(t, 3, b.llen(b.kind.Lists.Input), "nothing dispatched while the list is full")

	for range 3 {
		b.popJob()
	}
	got := map[string]bool{}
	for range 2 {
		got[b.popJob().UID] = true
	}
	require.Equal(t, map[string]bool{"d": true, "e": true}, got)
}

// The dispatcher stops at MaxQueued counting its own pushes, whose RPUSH
// tells the list's length: with batches of 10 and MaxQueued 20, two batches
// go out and the third waits until workers take jobs.
func TestBackpressureCountsOwnPushes(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{timeout: time.Hour})
	b.insertN(50, t0)
	b.start(func(c *Config) {
		c.BatchSize = 10
		c.MaxSleep = 50 * time.Millisecond
		c.Kinds[0].MaxQueued = 20
	})
	deadline := time.Now().Add(10 * time.Second)
	for b.llen(b.kind.Lists.Input) < 20 {
		require.True(t, time.Now().Before(deadline), "first two batches not pushed")
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	require.EqualValues(t, 20, b.llen(b.kind.Lists.Input), "dispatched past MaxQueued")

	b.popJobs(15)
	for b.llen(b.kind.Lists.Input) < 15 {
		require.True(t, time.Now().Before(deadline), "dispatching did not resume")
		time.Sleep(10 * time.Millisecond)
	}
}
