package sqlitestore

import (
	"context"
	"fmt"
	"time"
)

// writeLock lets the Store's own transactions take SQLite's write lock one
// after the other, handed over in the process. Each transaction begins
// with BEGIN IMMEDIATE, and one that finds the lock taken is left to
// SQLite's busy handler, which sleeps 1, 2, 5, 10, 15 ms ... between its
// tries: the dispatcher's and the poller's transactions, which collide on
// every batch of a backlog, then waited about 3 ms past the other's commit
// (median; 8 ms at the 90th percentile), the database idle meanwhile. A
// transaction waiting here starts within microseconds of the previous one's
// end. Writers outside the Store (the application, the admin commands, a
// second Store on the file) still meet SQLite's lock and its busy handler,
// as before.
type writeLock chan struct{}

func newWriteLock() writeLock { return make(writeLock, 1) }

// acquire waits for the lock and returns its release. After BusyTimeout
// (a transaction of this Store that runs that long, or a Tx begun inside
// another's fn) it returns without it, a release that does nothing: the
// transaction then waits on SQLite's lock, as it did without this one.
func (l writeLock) acquire(ctx context.Context) (release func(), err error) {
	select {
	case l <- struct{}{}:
		return func() { <-l }, nil
	default:
	}
	timer := time.NewTimer(BusyTimeout)
	defer timer.Stop()
	select {
	case l <- struct{}{}:
		return func() { <-l }, nil
	case <-timer.C:
		return func() {}, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("begin transaction: %w", ctx.Err())
	}
}
