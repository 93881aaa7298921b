package refresher

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
)

// incident is one kind's incident guard (docs/operating.md, "The incident
// guard"). The window statistic is shared by every instance in Redis:
// one hash per minute of the service's clock (redisio.Lists.IncidentBucket)
// with the fields results and failures (HINCRBY, expiring after the window
// and a minute), and a flag (redisio.Lists.IncidentWorker) set for one
// window by a result with "scope":"worker". The window is the last
// ceil(Window/1m) buckets, the current minute's included. The decision is
// the policy's (policy.Guard.Incident); the poller makes it for each batch
// of results, counting that batch too, and the dispatcher reads the last
// one for its timeouts. Timeouts count in the window as failures.
//
// The poller's committed batches are written to the window with its next
// read (countLater), in the same round trip: one round trip per batch
// instead of two (the guard's cost, docs/performance.md). The
// next read comes with the next batch or, when none follows, after the next
// empty fetch (at most FetchBlock later) or when the poller stops; other
// instances see the counts that much later. A poller that dies loses the
// counts of its last batch.
type incident struct {
	rdb     *redisio.Client
	guard   policy.Guard
	lists   redisio.Lists
	kind    string
	log     *slog.Logger
	metrics *Metrics

	active atomic.Bool
	mu     sync.Mutex
	// checked is when the window was last read (wall clock, pacing only).
	checked time.Time
	// pending are the counts of committed batches not yet in Redis (see
	// countLater).
	pending []redisio.Tally
}

// idleCheck is how often a poller without results reads the window, so
// that an incident from timeouts starts and one ends when results stop.
const idleCheck = 5 * time.Second

func newIncident(rdb *redisio.Client, k Kind, log *slog.Logger, m *Metrics) *incident {
	return &incident{rdb: rdb, guard: k.Policy.Guard.WithDefaults(), lists: k.Lists,
		kind: k.Name, log: log, metrics: m}
}

// policy returns p with Incident set as last decided.
func (g *incident) policy(p policy.Policy) policy.Policy {
	if g != nil {
		p.Incident = g.active.Load()
	}
	return p
}

func (g *incident) buckets(now time.Time) []string {
	return incidentBuckets(g.lists, g.guard.Window, now)
}

// incidentBuckets returns the keys of the per-minute buckets of a window
// ending at now, the current minute's first.
func incidentBuckets(l redisio.Lists, window time.Duration, now time.Time) []string {
	n := int((window + time.Minute - 1) / time.Minute)
	m := now.Unix() / 60
	keys := make([]string, n)
	for i := range keys {
		keys[i] = l.IncidentBucket(m - int64(i))
	}
	return keys
}

// decide reads the window at now, adds batch (the results in hand, not yet
// counted) and decides whether the kind is in an incident. A Redis error
// keeps the last decision and is returned for the log.
func (g *incident) decide(ctx context.Context, now time.Time, batch policy.Window) (bool, error) {
	if g == nil || g.guard.Off {
		return false, nil
	}
	g.mu.Lock()
	g.checked = time.Now()
	pending := g.pending
	g.pending = nil // sent now, and never again: a lost count is better than a double one
	g.mu.Unlock()
	results, failures, worker, err := g.rdb.CountThenRead(ctx, pending, g.buckets(now), g.lists.IncidentWorker())
	if err != nil {
		return g.active.Load(), err
	}
	w := policy.Window{Results: results + batch.Results, Failures: failures + batch.Failures, Worker: worker || batch.Worker}
	on := g.guard.Incident(w)
	if was := g.active.Swap(on); was != on {
		if on {
			g.log.Warn("incident: most results fail; failures do not count toward giving up and disable nobody until the rate falls",
				"results", w.Results, "failures", w.Failures, "worker_scope", w.Worker, "window", g.guard.Window)
		} else {
			g.log.Info("incident ended: failures count again", "results", w.Results, "failures", w.Failures)
		}
	}
	v := 0.0
	if on {
		v = 1
	}
	g.metrics.Incident.WithLabelValues(g.kind).Set(v)
	return on, nil
}

// due reports whether the window should be read again by an idle poller:
// it has not been for idleCheck, or counts wait to be written.
func (g *incident) due() bool {
	if g == nil || g.guard.Off {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.pending) > 0 || time.Since(g.checked) >= idleCheck
}

// waiting reports whether counts wait to be written (see countLater).
func (g *incident) waiting() bool {
	if g == nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.pending) > 0
}

// countLater keeps a committed batch's counts at now for the next decide,
// which writes them before it reads (see incident).
func (g *incident) countLater(now time.Time, batch policy.Window) {
	if g == nil || g.guard.Off || (batch.Results == 0 && !batch.Worker) {
		return
	}
	g.mu.Lock()
	g.pending = append(g.pending, g.tally(now, batch))
	g.mu.Unlock()
}

// tally is batch's count in the window's bucket of now, with the worker
// flag when a result said "scope":"worker".
func (g *incident) tally(now time.Time, batch policy.Window) redisio.Tally {
	t := redisio.Tally{Key: g.buckets(now)[0], Results: batch.Results, Failures: batch.Failures, TTL: g.guard.Window + time.Minute}
	if batch.Worker {
		t.FlagTTL = g.guard.Window
	}
	return t
}

// record adds counts to the window at now at once (the dispatcher's
// timeouts; the poller's batches wait for the next read, countLater).
func (g *incident) record(ctx context.Context, now time.Time, batch policy.Window) error {
	if g == nil || g.guard.Off || (batch.Results == 0 && !batch.Worker) {
		return nil
	}
	return g.rdb.Add(ctx, []redisio.Tally{g.tally(now, batch)}, g.lists.IncidentWorker())
}

// window counts the results of a batch for the guard, as read (a stale
// result counts too: the share is what matters): successes and
// failures (status reports are progress, not outcomes; throttled answers,
// "scope":"group", are neither), the non-permanent failures among them, and whether one says "scope":"worker".
func window(msgs []redisio.Message) policy.Window {
	var w policy.Window
	for _, m := range msgs {
		if m.Err != nil {
			continue
		}
		switch m.Result.Type {
		case redisio.ResultSuccess:
			w.Results++
		case redisio.ResultFailure:
			if m.Result.Scope == redisio.ScopeGroup && !m.Result.Permanent {
				continue // throttled: neither the model's nor the worker's failure
			}
			w.Results++
			if !m.Result.Permanent {
				w.Failures++
			}
			if m.Result.Scope == redisio.ScopeWorker {
				w.Worker = true
			}
		}
	}
	return w
}
