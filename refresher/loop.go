package refresher

import (
	"context"
	"math"
	"time"
)

// This file holds what the service's loops share to wait between passes:
// sleepOrWake (a duration, a wake signal or the end of the context,
// whichever comes first), sleep (the same without a wake) and backoff (the growing wait after failed passes). The
// dispatcher, the poller, the due watch and the start-up check use both;
// the two periodic loops (the activity log and the alert gauges) sleep
// until their time.Ticker's next tick, so that the time a pass takes does
// not shift the next one.

// forever is a sleep that only a wake signal or the context ends; it sets
// no timer, so a parked loop costs nothing while it waits.
const forever time.Duration = math.MaxInt64

// sleep waits until d has passed or ctx is done, and reports whether ctx
// is still live. A d of zero or less does not wait.
func sleep(ctx context.Context, d time.Duration) bool {
	return sleepOrWake[struct{}](ctx, d, nil)
}

// sleepOrWake waits until d has passed, wake signals (a nil wake never
// does), or ctx is done, and reports whether ctx is still live. A d of
// zero or less does not wait (and leaves a pending wake signal for the
// next sleep). wake is a signal channel or a time.Ticker's.
func sleepOrWake[T any](ctx context.Context, d time.Duration, wake <-chan T) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	var timeout <-chan time.Time
	if d != forever {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-ctx.Done():
	case <-wake:
	case <-timeout:
	}
	return ctx.Err() == nil
}

// minBackoff is the wait after the first of consecutive failures.
const minBackoff = 100 * time.Millisecond

// backoff is the wait of a loop after consecutive failed passes, so that a
// database or Redis that is down is not hammered: minBackoff, doubled after
// each further failure up to limit, and back to minBackoff after a pass
// that succeeds (reset). The zero value of cur starts there.
type backoff struct {
	limit time.Duration
	cur   time.Duration
}

// failed returns the wait after one more failure.
func (b *backoff) failed() time.Duration {
	b.cur = min(max(2*b.cur, minBackoff), b.limit)
	return b.cur
}

// reset starts over after a pass that succeeded.
func (b *backoff) reset() { b.cur = 0 }
