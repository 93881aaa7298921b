package demo

import (
	"sync"
	"time"
)

// Clock is the demo's one clock: it starts at Origin and runs Speed times
// faster than the wall clock. The service, the worker and the HTTP target
// all read it, so that a Retry-After of an hour or an attempt timeout of two
// minutes pass in demo time.
//
// What it does not speed up: the service's pacing (it looks for due rows at
// least every MaxSleep of real time and blocks on Redis for up to a real
// second), HTTP requests, and Redis key expiry (heartbeats), which follow
// the wall clock. At --speed 60 the service therefore acts up to about a
// demo minute late.
type Clock struct {
	Origin time.Time
	Speed  float64

	once  sync.Once
	start time.Time
}

// Now returns the demo time: Origin plus Speed times the real time since the
// first call, in UTC, truncated to microseconds like the service's clock.
func (c *Clock) Now() time.Time {
	c.once.Do(func() { c.start = time.Now() })
	elapsed := time.Duration(float64(time.Since(c.start)) * c.Speed)
	return c.Origin.Add(elapsed).UTC().Truncate(time.Microsecond)
}

// Real converts a span of demo time into real time.
func (c *Clock) Real(d time.Duration) time.Duration {
	return time.Duration(float64(d) / c.Speed)
}
