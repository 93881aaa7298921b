package refresher

import "time"

// Clock is the service's one source of time. Everything that needs `now`
// gets it from here and passes it down, so tests control time, including the
// database's idea of it (no NOW() in the service's SQL).
type Clock interface {
	Now() time.Time
}

// SystemClock is the wall clock in UTC, truncated to microseconds because
// that is what DATETIME(6) stores.
type SystemClock struct{}

// Now returns the current UTC time truncated to microseconds.
func (SystemClock) Now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }
