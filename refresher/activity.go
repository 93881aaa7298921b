package refresher

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// DefaultLogInterval is how often each kind logs its activity.
const DefaultLogInterval = time.Minute

// activity sums one kind's work between two log lines, so that a running
// service says what it does (one INFO line per kind and LogInterval, only
// when something happened) without a line per batch. The dispatcher and the
// poller add to it after their commits.
type activity struct {
	mu sync.Mutex
	activityCounts
}

type activityCounts struct {
	started, applied, stale, late, failed, disabled, dead int
	// invalid counts rows disabled for an invalid refresh_rrule; the first
	// one's key and parser message are logged as an example.
	invalid                int
	invalidKey, invalidErr string
}

// add takes a committed batch's counts.
func (a *activity) add(t *tally) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, n := range t.results {
		switch k[1] {
		case "applied":
			a.applied += n
		case "stale":
			a.stale += n
		}
	}
	for _, n := range t.decisions {
		a.failed += n
	}
	a.late += t.late
	a.disabled += t.disabled
	if t.invalid > 0 && a.invalid == 0 {
		a.invalidKey, a.invalidErr = t.invalidKey, t.invalidErr
	}
	a.invalid += t.invalid
}

func (a *activity) addStarted(n int) {
	a.mu.Lock()
	a.started += n
	a.mu.Unlock()
}

func (a *activity) addDead(n int) {
	a.mu.Lock()
	a.dead += n
	a.mu.Unlock()
}

// take returns the counts so far and starts over.
func (a *activity) take() activityCounts {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.activityCounts
	a.activityCounts = activityCounts{}
	return c
}

// log writes the counts since the last call: one INFO line when anything
// happened, and one WARN line with an example when rows were disabled for an
// invalid schedule.
func (a *activity) log(log *slog.Logger) {
	c := a.take()
	if c == (activityCounts{}) {
		return
	}
	log.Info("activity", "started", c.started, "applied", c.applied, "stale", c.stale, "late", c.late,
		"failed", c.failed, "disabled", c.disabled, "dead_lettered", c.dead)
	if c.invalid > 0 {
		log.Warn("rows disabled for an invalid refresh_rrule (the parser's message is in refresh_last_error)",
			"rows", c.invalid, "example_key", c.invalidKey, "example_error", c.invalidErr)
	}
}

// loop logs every interval until ctx is cancelled, and once more then.
func (a *activity) loop(ctx context.Context, log *slog.Logger, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for sleepOrWake(ctx, forever, t.C) {
		a.log(log)
	}
	a.log(log)
}
