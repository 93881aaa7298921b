package testenv

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fatalTB records the failure of the helper under test instead of failing
// the test that runs it.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls f on its own goroutine (Fatalf ends it) and returns the failure.
func (f *fatalTB) run(fn func()) string {
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	<-done
	return f.msg
}

func TestEventuallyWakesOnWake(t *testing.T) {
	// Without a Wake the wait would pause for an hour after the first check.
	defer func(lo, hi time.Duration) { minPause, maxPause = lo, hi }(minPause, maxPause)
	minPause, maxPause = time.Hour, time.Hour
	checked := make(chan struct{}, 1)
	var ready atomic.Bool
	go func() {
		<-checked
		ready.Store(true)
		Wake()
	}()
	start := time.Now()
	Eventually(t, 10*time.Second, "ready", func() bool {
		select {
		case checked <- struct{}{}:
		default:
		}
		return ready.Load()
	})
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the wait saw the Wake only after %s", took)
	}
}

func TestEventuallyPollsWithoutWake(t *testing.T) {
	n := 0
	Eventually(t, 5*time.Second, "three checks", func() bool { n++; return n == 3 })
	if n != 3 {
		t.Fatalf("checked %d times, want 3", n)
	}
}

func TestEventuallyFailsAfterLimit(t *testing.T) {
	f := &fatalTB{TB: t}
	start := time.Now()
	msg := f.run(func() { Eventually(f, 100*time.Millisecond, "the impossible", func() bool { return false }) })
	if msg != "the impossible did not happen within 100ms" {
		t.Fatalf("failure message %q", msg)
	}
	if took := time.Since(start); took < 100*time.Millisecond {
		t.Fatalf("gave up after %s, before the limit", took)
	}
}

func TestEventuallyNilShowsLastError(t *testing.T) {
	f := &fatalTB{TB: t}
	n := 0
	msg := f.run(func() {
		EventuallyNil(f, 50*time.Millisecond, "the count", func() error { n++; return errors.New("count " + fmt.Sprint(n)) })
	})
	if !strings.HasPrefix(msg, "the count did not happen within 50ms: count ") || !strings.HasSuffix(msg, fmt.Sprint(n)) {
		t.Fatalf("failure message %q after %d checks", msg, n)
	}
}
