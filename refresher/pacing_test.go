package refresher

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
)

// passLog records when each dispatcher pass ended and how many attempts it
// started.
type passLog struct {
	mu      sync.Mutex
	at      []time.Time
	started []int
}

func (l *passLog) hook(_ string, started int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.at = append(l.at, time.Now()) // pacing is measured on the wall clock
	l.started = append(l.started, started)
}

// since returns the passes from index i on.
func (l *passLog) since(i int) (at []time.Time, started []int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]time.Time(nil), l.at[i:]...), append([]int(nil), l.started[i:]...)
}

func (l *passLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.at)
}

// requireGaps checks that consecutive passes are at least min apart.
func requireGaps(t *testing.T, at []time.Time, min time.Duration, what string) {
	t.Helper()
	for i := 1; i < len(at); i++ {
		require.GreaterOrEqual(t, at[i].Sub(at[i-1]), min, "%s: passes %d and %d", what, i-1, i)
	}
}

// A due row the dispatcher cannot claim must not make the loop spin: passes
// are at least minSleep (20ms) apart. Two such rows: one whose key is NULL
// (no result could name it), one another transaction holds locked (SKIP
// LOCKED passes over it while NextDue still sees it due).
func TestDispatcherDoesNotSpinOnUnclaimableRows(t *testing.T) {
	t.Parallel()
	for _, tc := range []string{"null key", "locked"} {
		t.Run(tc, func(t *testing.T) {
			t.Parallel()
			b := setup(t, setupOpts{})
			if tc == "null key" {
				_, err := b.db.Exec("ALTER TABLE items MODIFY uid CHAR(20) NULL")
				require.NoError(t, err)
				_, err = b.db.Exec("INSERT INTO items (uid, refresh_at) VALUES (NULL, ?)", t0)
				require.NoError(t, err)
			} else {
				b.insert("held")
				tx, err := b.db.Begin()
				require.NoError(t, err)
				t.Cleanup(func() { _ = tx.Rollback() })
				_, err = tx.Exec("SELECT id FROM items WHERE uid = 'held' FOR UPDATE")
				require.NoError(t, err)
			}
			var log passLog
			b.start(func(c *Config) {
				c.MaxSleep = 100 * time.Millisecond
				c.Observer.AfterDispatch = log.hook
			})
			b.passes.wait(t, 6)
			at, started := log.since(0)
			requireGaps(t, at, 20*time.Millisecond, "the row is due but cannot be claimed (minSleep)")
			require.Equal(t, make([]int, len(started)), started)
		})
	}
}

// While the input list holds MaxQueued jobs or more, nothing is dispatched
// and the dispatcher waits MaxSleep between looks; once workers catch up,
// dispatching resumes.
func TestBackpressure(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{timeout: time.Hour})
	b.insert("a", "b", "c")
	var log passLog
	b.start(func(c *Config) {
		c.MaxSleep = 100 * time.Millisecond
		c.Kinds[0].MaxQueued = 2
		c.Observer.AfterDispatch = log.hook
	})
	testenv.Eventually(t, 10*time.Second, "first batch pushed", func() bool { return b.llen(b.kind.Lists.Input) >= 3 })
	b.passes.wait(t, 1) // the pass that pushed has ended
	b.insert("d", "e")
	from := log.len()
	b.passes.wait(t, 4)
	at, started := log.since(from)
	require.Equal(t, make([]int, len(started)), started, "nothing dispatched while the list is full")
	requireGaps(t, at, 100*time.Millisecond, "throttled passes wait MaxSleep")
	require.EqualValues(t, 3, b.llen(b.kind.Lists.Input))

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
	testenv.Eventually(t, 10*time.Second, "first two batches pushed", func() bool { return b.llen(b.kind.Lists.Input) >= 20 })
	b.passes.wait(t, 3)
	require.EqualValues(t, 20, b.llen(b.kind.Lists.Input), "dispatched past MaxQueued")

	b.popJobs(15)
	testenv.Eventually(t, 10*time.Second, "dispatching resumed", func() bool { return b.llen(b.kind.Lists.Input) >= 15 })
}
