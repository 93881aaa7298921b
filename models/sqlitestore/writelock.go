package sqlitestore

import (
	"context"
	"fmt"
	"time"
)

// The Store's transactions hand SQLite's write lock over among themselves
// for at most TurnRun, then leave it free for TurnGap (see writeLock). They
// are exported for the bench's hand-written baseline, which takes the same
// turns.
const (
	// TurnRun is how long the Store's transactions may follow one another
	// on SQLite's write lock, each handed it in the process, before they
	// leave it free for writers outside the Store.
	TurnRun = 750 * time.Millisecond
	// TurnGap is how long they then leave it free: longer than the
	// longest sleep of SQLite's default busy handler (100 ms, which
	// busy_timeout installs in every binding that sets a timeout), so
	// that a writer waiting there tries at least once within it.
	TurnGap = 120 * time.Millisecond
)

// writeLock lets the Store's own writers take SQLite's write lock one
// after the other, handed over in the process, and gives writers outside
// the Store (the application, the admin commands, another *sql.DB) a turn.
//
// Each transaction begins with BEGIN IMMEDIATE; one that finds the lock
// taken is left to SQLite's busy handler, which sleeps 1, 2, 5, 10, 15 ...
// 100 ms between its tries. The dispatcher's and the poller's
// transactions collide on every batch of a backlog: through the busy
// handler the second began about 3 ms (median; 8 ms at the 90th
// percentile) after the other's commit, SQLite's one writer idle
// meanwhile. Waiting here instead, it begins within tens of µs.
//
// Handed over that fast, SQLite's lock is almost never free when an
// outside writer's busy handler wakes up to try it: during a backlog such
// a writer waited out its whole busy_timeout and failed with "database is
// locked". No writer can see another wait in the busy handler (it holds no
// lock while it sleeps), so the turn is by the clock: once a run of
// handovers has lasted TurnRun, the next writer of the Store waits until
// the lock has been free for TurnGap before it begins. A run ends, and a
// new one starts, whenever the lock has been free that long anyway.
//
// An outside writer using SQLite's default busy handler (which
// busy_timeout installs; it tries at least every 100 ms) therefore gets
// the lock within TurnRun + the Store's longest transaction + 100 ms of
// starting to wait, about 0.9 s with the service's batches, unless
// another outside writer takes that turn. During a sustained backlog the
// turn costs the Store at most TurnGap / (TurnRun + TurnGap) of the lock's
// time (14%).
type writeLock struct {
	slot     chan struct{} // one token, held by the writer that may begin
	run, gap time.Duration

	// Read and written by the token's holder only.
	runStart time.Time // when the current run of handovers began
	freed    time.Time // when the last holder released the lock

	// now and sleep are time.Now and sleepCtx, but for tests.
	now   func() time.Time
	sleep func(context.Context, time.Duration) error
}

func newWriteLock() *writeLock {
	return &writeLock{slot: make(chan struct{}, 1), run: TurnRun, gap: TurnGap, now: time.Now, sleep: sleepCtx}
}

// acquire waits for the lock (and, at the end of a run, for the outside
// writers' turn) and returns its release, which the caller calls once its
// transaction has ended. After BusyTimeout (a transaction of this Store
// that runs that long, or a Tx begun inside another's fn) it returns
// without the lock, with a release that does nothing: the transaction then
// waits on SQLite's lock alone. It returns the context's error when ctx
// ends first.
func (l *writeLock) acquire(ctx context.Context) (release func(), err error) {
	got, err := l.take(ctx)
	if err != nil {
		return nil, err
	}
	if !got {
		return func() {}, nil
	}
	now := l.now()
	switch {
	case l.freed.IsZero() || now.Sub(l.freed) >= l.gap:
		l.runStart = now // free long enough already: a new run
	case now.Sub(l.runStart) >= l.run:
		if err := l.sleep(ctx, l.gap-now.Sub(l.freed)); err != nil {
			<-l.slot
			return nil, fmt.Errorf("begin transaction: %w", err)
		}
		l.runStart = l.now()
	}
	return l.release, nil
}

// take waits for the token: got is false after BusyTimeout.
func (l *writeLock) take(ctx context.Context) (got bool, err error) {
	select {
	case l.slot <- struct{}{}:
		return true, nil
	default:
	}
	timer := time.NewTimer(BusyTimeout)
	defer timer.Stop()
	select {
	case l.slot <- struct{}{}:
		return true, nil
	case <-timer.C:
		return false, nil
	case <-ctx.Done():
		return false, fmt.Errorf("begin transaction: %w", ctx.Err())
	}
}

func (l *writeLock) release() {
	l.freed = l.now()
	<-l.slot
}

// sleepCtx sleeps d, or until ctx ends (then it returns ctx's error).
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
