package policy

import (
	"cmp"
	"fmt"
	"time"
)

// Defaults of Guard.
const (
	// DefaultIncidentThreshold is the share of non-permanent failures
	// among a kind's results over the window that starts an incident.
	DefaultIncidentThreshold = 0.8
	// DefaultIncidentMinResults is how many results the window must hold
	// before its share means anything: a handful of failures on a quiet kind
	// is not an outage.
	DefaultIncidentMinResults = 50
	// DefaultIncidentWindow is the sliding window of the statistic.
	DefaultIncidentWindow = 5 * time.Minute
	// DefaultIncidentRetry is the shortest delay of a retry during an
	// incident, so that rows whose policy retries at once (delays:0s,...)
	// do not spin against a dead upstream while their attempts are not
	// counted.
	DefaultIncidentRetry = time.Minute
)

// Guard is a kind's incident guard (docs/operating.md, "The
// incident guard"): when most of the kind's results fail at once, the failures
// are not the models' fault, and nobody should be disabled for them. Zero
// fields take their defaults (see WithDefaults).
type Guard struct {
	// Off turns the guard off: failures always count (the behaviour before
	// the guard existed). A "scope":"worker" result is then ignored too.
	Off bool
	// Threshold is the share (0 to 1] of non-permanent failures among the
	// results of the window at or above which the kind is in an incident.
	// Default 0.8.
	Threshold float64
	// MinResults is the fewest results in the window for the share to count.
	// Default 50.
	MinResults int
	// Window is the length of the sliding window. Default 5m. A
	// "scope":"worker" result keeps the kind in an incident for one window.
	Window time.Duration
	// Retry is the shortest retry delay during an incident. Default 1m.
	Retry time.Duration
}

// WithDefaults returns g with every zero field set to its default.
func (g Guard) WithDefaults() Guard {
	g.Threshold = cmp.Or(g.Threshold, DefaultIncidentThreshold)
	g.MinResults = cmp.Or(g.MinResults, DefaultIncidentMinResults)
	g.Window = cmp.Or(g.Window, DefaultIncidentWindow)
	g.Retry = cmp.Or(g.Retry, DefaultIncidentRetry)
	return g
}

// hasDefaults reports whether g.WithDefaults() would return g unchanged.
func (g *Guard) hasDefaults() bool {
	return g.Threshold != 0 && g.MinResults != 0 && g.Window != 0 && g.Retry != 0
}

// Validate reports the first invalid field of g (after WithDefaults).
func (g Guard) Validate() error {
	g = g.WithDefaults()
	switch {
	case !(g.Threshold > 0 && g.Threshold <= 1):
		return fmt.Errorf("incident threshold %v is out of range (use a share above 0 and at most 1, e.g. 0.8)", g.Threshold)
	case g.MinResults < 1:
		return fmt.Errorf("incident minimum of results %d is out of range (use at least 1, e.g. 50)", g.MinResults)
	case g.Window < time.Minute:
		return fmt.Errorf("incident window %s is too short (use at least 1m: the statistic is kept per minute)", g.Window)
	case g.Retry < 0:
		return fmt.Errorf("incident retry %s cannot be negative", g.Retry)
	}
	return nil
}

// Window is the statistic of a kind's results over the guard's window.
type Window struct {
	// Results counts the results applied (success and failure; status
	// reports and stale results do not count).
	Results int
	// Failures counts the non-permanent failures among them.
	Failures int
	// Worker: a result with "scope":"worker" came within the window.
	Worker bool
}

// Incident reports whether a kind whose window holds w is in an incident:
// the guard is on and a worker said so (w.Worker), or the window holds at
// least MinResults results of which a share of at least Threshold are
// non-permanent failures. So with the defaults 40 failures of 50 results
// start one and 39 do not; 49 failures of 49 results do not either. The
// incident ends by itself when the share or the count falls below, or the
// worker's word leaves the window.
func (g Guard) Incident(w Window) bool {
	if g.Off {
		return false
	}
	g = g.WithDefaults()
	if w.Worker {
		return true
	}
	if w.Results < g.MinResults || w.Results <= 0 {
		return false
	}
	return float64(w.Failures) >= g.Threshold*float64(w.Results)
}
