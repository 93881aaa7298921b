package refresher

import (
	"context"
	"fmt"
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
//
// The same writes carry the batches' counts for the dashboard's charts
// (redisio.StatsAdd: applied, failed, dead-lettered, and the incident
// mark), so the charts cost no round trip of their own. With the guard
// off, nothing else is written per batch: the counts then wait and go in
// one write every idleCheck at most.
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
	// ledger writes a ledger entry of the kind (kindRunner.recordKind);
	// nil when the ledger is off.
	ledger func(ctx context.Context, e policy.Entry)
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
	if g == nil {
		return false, nil
	}
	if g.guard.Off {
		return false, g.writeStats(ctx, false)
	}
	g.mu.Lock()
	g.checked = time.Now()
	pending := g.pending
	g.pending = nil // sent now, and never again: a lost count is better than a double one
	g.mu.Unlock()
	if g.active.Load() {
		// The charts mark the minutes the kind spent in an incident.
		pending = append(pending, redisio.Tally{Stats: redisio.StatsAdd{Lists: g.lists, At: now, Incident: true}})
	}
	results, failures, worker, err := g.rdb.CountThenRead(ctx, pending, g.buckets(now), g.lists.IncidentWorker())
	if err != nil {
		return g.active.Load(), err
	}
	w := policy.Window{Results: results + batch.Results, Failures: failures + batch.Failures, Worker: worker || batch.Worker}
	on := g.guard.Incident(w)
	if was := g.active.Swap(on); was != on {
		ev := policy.EventIncidentClosed
		if on {
			ev = policy.EventIncidentOpened
			// The charts mark this minute too: written with the next read
			// (the next batch, or at once by an idle poller, see due).
			g.mu.Lock()
			g.pending = append(g.pending, redisio.Tally{Stats: redisio.StatsAdd{Lists: g.lists, At: now, Incident: true}})
			g.mu.Unlock()
			g.log.Warn("incident: most results fail; failures do not count toward giving up and disable nobody until the rate falls",
				"results", w.Results, "failures", w.Failures, "worker_scope", w.Worker, "window", g.guard.Window)
		} else {
			g.log.Info("incident ended: failures count again", "results", w.Results, "failures", w.Failures)
		}
		if g.ledger != nil {
			// Each instance decides for itself: each records its own.
			g.ledger(ctx, policy.Entry{At: now, Event: ev, Reason: fmt.Sprintf("%d failures of %d results in the last %s (threshold %g of at least %d)%s",
				w.Failures, w.Results, policy.FormatDuration(g.guard.Window), g.guard.Threshold, g.guard.MinResults, workerWords(w.Worker))})
		}
	}
	v := 0.0
	if on {
		v = 1
	}
	g.metrics.Incident.WithLabelValues(g.kind).Set(v)
	return on, nil
}

// workerWords says that a result blamed the worker fleet, for the ledger.
func workerWords(worker bool) string {
	if worker {
		return `; a result had "scope":"worker"`
	}
	return ""
}

// due reports whether the window should be read again by an idle poller:
// it has not been for idleCheck, or counts wait to be written. With the
// guard off: counts for the charts have waited idleCheck.
func (g *incident) due() bool {
	if g == nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.guard.Off {
		return len(g.pending) > 0 && time.Since(g.checked) >= idleCheck
	}
	return len(g.pending) > 0 || time.Since(g.checked) >= idleCheck
}

// writeStats writes the counts waiting for the charts, with the guard off
// (no read of the window carries them): all of them when force is set,
// else only once idleCheck has passed since the last write.
func (g *incident) writeStats(ctx context.Context, force bool) error {
	g.mu.Lock()
	if len(g.pending) == 0 || (!force && time.Since(g.checked) < idleCheck) {
		g.mu.Unlock()
		return nil
	}
	g.checked = time.Now()
	adds := make([]redisio.StatsAdd, len(g.pending))
	for i, t := range g.pending {
		adds[i] = t.Stats
	}
	g.pending = nil
	g.mu.Unlock()
	return g.rdb.AddStats(ctx, adds)
}

// flush writes every count waiting (the poller stops).
func (g *incident) flush(ctx context.Context, now time.Time) error {
	if g == nil {
		return nil
	}
	if g.guard.Off {
		return g.writeStats(ctx, true)
	}
	_, err := g.decide(ctx, now, policy.Window{})
	return err
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
// which writes them before it reads (see incident): batch for the window,
// stats for the charts.
func (g *incident) countLater(now time.Time, batch policy.Window, stats redisio.StatsCount) {
	if g == nil {
		return
	}
	t := g.tally(now, batch, stats)
	if t.Results == 0 && t.FlagTTL == 0 && t.Stats.Empty() {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if n := len(g.pending); n > 0 {
		// Same minute: one write instead of two (with the guard off,
		// counts wait up to idleCheck).
		last := &g.pending[n-1]
		if merged, ok := last.Stats.Merge(t.Stats); ok && last.Key == t.Key && last.FlagTTL == 0 && t.FlagTTL == 0 {
			last.Results += t.Results
			last.Failures += t.Failures
			last.Stats = merged
			return
		}
	}
	g.pending = append(g.pending, t)
}

// tally is batch's count in the window's bucket of now, with the worker
// flag when a result said "scope":"worker", and stats for the charts. With
// the guard off, it counts for the charts only.
func (g *incident) tally(now time.Time, batch policy.Window, stats redisio.StatsCount) redisio.Tally {
	t := redisio.Tally{Stats: redisio.StatsAdd{Lists: g.lists, At: now, Count: stats}}
	if g.guard.Off || (batch.Results == 0 && !batch.Worker) {
		return t
	}
	t.Key, t.Results, t.Failures, t.TTL = g.buckets(now)[0], batch.Results, batch.Failures, g.guard.Window+time.Minute
	if batch.Worker {
		t.FlagTTL = g.guard.Window
	}
	return t
}

// record adds counts to the window at now at once (the dispatcher's
// timeouts; the poller's batches wait for the next read, countLater), with
// stats for the charts.
func (g *incident) record(ctx context.Context, now time.Time, batch policy.Window, stats redisio.StatsCount) error {
	if g == nil {
		return nil
	}
	t := g.tally(now, batch, stats)
	if t.Results == 0 && t.FlagTTL == 0 && t.Stats.Empty() {
		return nil
	}
	return g.rdb.Add(ctx, []redisio.Tally{t}, g.lists.IncidentWorker())
}

// window counts the results of a batch for the guard, as read (a stale
// result counts too: the share is what matters): successes and
// failures (status reports are progress, not outcomes; throttled answers,
// "scope":"group", are neither), the non-permanent failures among them, and whether one says "scope":"worker".
func window(msgs []redisio.Message) policy.Window {
	var w policy.Window
	for i := range msgs {
		m := &msgs[i]
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
