package testenv

import (
	"errors"
	"sync"
	"testing"
	"time"
)

// Eventually checks cond until it holds, and fails the test with "<what>
// did not happen within <limit>" when it does not hold within limit. It is
// the tests' one way to wait for something: no test sleeps for a fixed time
// in the hope that a condition holds by then.
//
// Between checks it waits for the next Wake or for a short pause that grows
// from a millisecond to 50ms, whichever comes first: a condition that
// holds soon is seen soon, and one that takes seconds costs a few checks a
// second.
func Eventually(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	EventuallyNil(t, limit, what, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	})
}

// EventuallyNil is Eventually for a check that says what it saw: it waits
// until check returns nil, and the failure shows the last error returned.
func EventuallyNil(t testing.TB, limit time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(limit)
	pause := minPause
	for {
		// The next Wake is taken before the check, so that a wake that
		// comes while check runs is not missed.
		woken := nextWake()
		err := check()
		if err == nil {
			return
		}
		left := time.Until(deadline)
		if left <= 0 {
			if errors.Is(err, errNotYet) {
				t.Fatalf("%s did not happen within %s", what, limit)
			}
			t.Fatalf("%s did not happen within %s: %v", what, limit, err)
		}
		timer := time.NewTimer(min(pause, left))
		select {
		case <-woken:
		case <-timer.C:
		}
		timer.Stop()
		pause = min(2*pause, maxPause)
	}
}

// minPause and maxPause bound the pause between two checks when nothing
// wakes them (variables for this package's tests).
var minPause, maxPause = time.Millisecond, 50 * time.Millisecond

var errNotYet = errors.New("not yet")

// wake is closed (and replaced) by Wake.
var wake = struct {
	mu sync.Mutex
	ch chan struct{}
}{ch: make(chan struct{})}

// Wake makes every Eventually of the test binary check its condition now.
// Code under test calls it from its test hooks (for example after each pass
// of a loop), so that waits follow the events that change what they check
// instead of polling alone.
func Wake() {
	wake.mu.Lock()
	defer wake.mu.Unlock()
	close(wake.ch)
	wake.ch = make(chan struct{})
}

func nextWake() <-chan struct{} {
	wake.mu.Lock()
	defer wake.mu.Unlock()
	return wake.ch
}
