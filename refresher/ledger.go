package refresher

import (
	"cmp"
	"context"
	"time"

	"github.com/rs/xid"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
)

// The ledger (docs/operating.md, "The ledger"): every decision the service
// takes about a row or a kind, recorded as it takes it, so that `refresher
// why` can say why a row did or did not run. A row's entries go into the
// kind's database (models.LedgerTable) in the transaction of the batch
// that decided them, in one INSERT per batch, with the batch's one entry
// for its plain successes (policy.EventRoutine; ledgerBatch.succeeded):
// a batch that rolls back leaves none, and every instance writes its own
// (the throttle holds a batch sets go with it, as entries of the kind). The events that belong
// to no batch's transaction (a pause of the whole kind, an incident, an
// undone push) are written in a statement of their own. A periodic
// task per database prunes the ledger to its bounds (LedgerConfig).

// Defaults of LedgerConfig; config.Defaults names these.
const (
	DefaultLedgerMaxEntries     = 100
	DefaultLedgerKindMaxEntries = 1000
	// DefaultLedgerRoutineMaxEntries: a kind's batches of routine
	// successes kept, 140-250 bytes each (docs/operating.md, "The
	// ledger").
	DefaultLedgerRoutineMaxEntries = 100000
	DefaultLedgerMaxAge            = 30 * 24 * time.Hour
	DefaultLedgerPruneEvery        = time.Minute
	DefaultLedgerPruneChunk        = 1000
)

// LedgerConfig is Config.Ledger. The zero value records nothing.
type LedgerConfig struct {
	// On records the decisions. Off (the default) costs nothing: no
	// statement and no allocation per row. On, a routine cycle (a start
	// from its occurrence and its plain success) costs no entry of its
	// own: one entry per applied batch stands for its plain successes
	// (policy.EventRoutine), unless RoutineRows.
	On bool
	// RoutineRows records each plain success as a row entry of its own
	// (`ledger: routine: rows`): one index insert per model per cycle,
	// which a service whose database is its bottleneck pays in throughput
	// (docs/performance.md, "The ledger"), for a history that names every
	// success.
	RoutineRows bool
	// Bounds are what the ledger keeps (zero fields: the defaults): the
	// last MaxEntries entries of each row, KindMaxEntries of each kind's
	// own and RoutineMaxEntries of its routine batches, none older than
	// MaxAge; Chunk bounds one pruning step.
	Bounds models.LedgerBounds
	// PruneEvery is how often each database's ledger is pruned: a round
	// prunes by age until a step finds nothing old, then walks every
	// (kind, key) group once (models.LedgerPrune). Default 1m.
	PruneEvery time.Duration
}

// WithDefaults returns l with every zero field set to its default.
func (l LedgerConfig) WithDefaults() LedgerConfig {
	l.Bounds.MaxEntries = cmp.Or(l.Bounds.MaxEntries, DefaultLedgerMaxEntries)
	l.Bounds.KindMaxEntries = cmp.Or(l.Bounds.KindMaxEntries, DefaultLedgerKindMaxEntries)
	l.Bounds.RoutineMaxEntries = cmp.Or(l.Bounds.RoutineMaxEntries, DefaultLedgerRoutineMaxEntries)
	l.Bounds.MaxAge = cmp.Or(l.Bounds.MaxAge, DefaultLedgerMaxAge)
	l.Bounds.Chunk = cmp.Or(l.Bounds.Chunk, DefaultLedgerPruneChunk)
	l.PruneEvery = cmp.Or(l.PruneEvery, DefaultLedgerPruneEvery)
	return l
}

// ledgerBatch is the entries of one batch (of a dispatcher's pass or a
// poller's batch), written in its transaction. Nil (the ledger off), it
// records nothing and costs a nil check per row.
type ledgerBatch struct {
	kind    string
	entries []policy.Entry
	// rows: each plain success gets a row entry (LedgerConfig.RoutineRows);
	// else plain counts them for the batch's one EventRoutine entry.
	rows  bool
	plain policy.Entry
	// routine is the last answer of policy.RoutineStart: the rows of a
	// batch mostly share their schedule, refresh_at and second, and the
	// answer costs two schedule evaluations.
	routine struct {
		sched         policy.Nexter
		planned, from time.Time
		ok, set       bool
	}
}

// newLedgerBatch returns the batch of kind, nil when the ledger is off.
func newLedgerBatch(kind string, l LedgerConfig) *ledgerBatch {
	if !l.On {
		return nil
	}
	return &ledgerBatch{kind: kind, rows: l.RoutineRows}
}

// reset forgets the entries of the last transaction (its try may roll
// back and run again).
func (b *ledgerBatch) reset() {
	if b == nil {
		return
	}
	clear(b.entries)
	b.entries = b.entries[:0]
	b.plain = policy.Entry{}
}

func (b *ledgerBatch) add(e policy.Entry) {
	e.Kind = b.kind
	b.entries = append(b.entries, e)
}

// write appends the entries to tx, and the batch's routine entry when it
// counted plain successes, when tx's store keeps a ledger.
func (b *ledgerBatch) write(ctx context.Context, tx models.Tx) error {
	if b == nil {
		return nil
	}
	if b.plain.Count > 0 {
		b.add(b.plain)
		b.plain = policy.Entry{}
	}
	if len(b.entries) == 0 {
		return nil
	}
	lt, ok := tx.(models.LedgerTx)
	if !ok {
		return nil
	}
	return lt.AppendLedger(ctx, b.entries)
}

// failure records a failure decision f (from a worker's failure, EventFailed,
// or a timeout, EventTimedOut) of attempt, dispatched at dispatched, about
// key at now.
func (b *ledgerBatch) failure(ev policy.Event, key, attempt string, dispatched time.Time, reason string, f policy.Decision, bound string, at time.Time) {
	e := policy.Entry{At: at, Key: key, Event: ev, Attempt: attempt, Dispatched: dispatched, Reason: policy.Truncate(reason, policy.MaxLastErrorLen),
		Next: f.RefreshAt, Bound: bound}
	if f.Branch == policy.BranchDisabled {
		e.Disabled = true
		b.add(e)
		b.add(policy.Entry{At: at, Key: key, Event: policy.EventDisabled, Attempt: attempt, Reason: f.Reason})
		return
	}
	b.add(e)
}

// due records what the dispatcher decided for row at now: before is the
// row's state as claimed, sched its schedule (nil when it has none), p
// the kind's policy (for the bound of a timeout's retry). A routine start
// (policy.RoutineStart, at the kind's priority) records nothing: the entry
// that ends the attempt carries its dispatch, so that a routine cycle
// costs one entry.
func (b *ledgerBatch) due(row *models.Row, before *policy.State, d *policy.DueDecision, sched policy.Nexter, p *policy.Policy, now time.Time) {
	if b == nil {
		return
	}
	if d.TimedOut {
		b.failure(policy.EventTimedOut, row.Key, before.AttemptUID, before.AttemptAt, row.State.LastError, d.Timeout, p.RetryBound(d.Timeout, 0), now)
	}
	switch d.Action {
	case policy.DueStarted:
		if row.Priority.Source == models.PriorityKind && b.routineStart(d, sched, now) {
			return
		}
		e := policy.Entry{At: now, Key: row.Key, Event: policy.EventDispatched, Attempt: d.AttemptUID,
			Planned: d.BeforeStart.RefreshAt}
		if !d.MissedSince.IsZero() {
			e.Planned = d.MissedSince
		}
		if row.Priority.Source != models.PriorityKind {
			level := row.Priority.Level
			e.Priority = &level
		}
		b.add(e)
	case policy.DueInvalidSchedule:
		b.add(policy.Entry{At: now, Key: row.Key, Event: policy.EventDisabled, Reason: row.State.DisabledReason})
	case policy.DueMisfireSkipped:
		b.add(policy.Entry{At: now, Key: row.Key, Event: policy.EventMisfireSkipped, Planned: d.MissedSince, Next: row.State.RefreshAt})
		if row.State.RefreshAt.IsZero() {
			b.ruleEnded(row.Key, now)
		}
	case policy.DueHeld:
		// Planned: the refresh_at it was held from; its dispatch, at the
		// hold's end, runs for Until.
		b.add(policy.Entry{At: now, Key: row.Key, Event: policy.EventThrottleHold, Planned: before.RefreshAt, Until: row.State.RefreshAt})
	}
}

// routineStart is policy.RoutineStart(d, sched, now), from the last
// answer when that was for the same schedule, refresh_at and second. The
// schedules compared are the dispatcher's (pointers, or spread values of
// pointers: comparable).
func (b *ledgerBatch) routineStart(d *policy.DueDecision, sched policy.Nexter, now time.Time) bool {
	m := &b.routine
	sec := now.Truncate(time.Second)
	plain := d.Action == policy.DueStarted && !d.TimedOut && d.MissedSince.IsZero() && d.BeforeStart.AttemptNo == 0
	if !plain || sched == nil {
		return false
	}
	if m.set && m.sched == sched && m.planned.Equal(d.BeforeStart.RefreshAt) && m.from.Equal(sec) {
		return m.ok
	}
	m.ok = policy.RoutineStart(*d, sched, now)
	m.sched, m.planned, m.from, m.set = sched, d.BeforeStart.RefreshAt, sec, true
	return m.ok
}

// countPlain counts a plain success of an attempt dispatched at
// dispatched (zero: unknown), applied at now, in the batch's routine
// entry: its dispatches' range to the second, as the attempts' xids give
// it.
func (b *ledgerBatch) countPlain(dispatched, now time.Time) {
	p := &b.plain
	if p.Count == 0 {
		*p = policy.Entry{At: now, Whole: true, Event: policy.EventRoutine}
	}
	p.Count++
	if dispatched.IsZero() {
		return
	}
	d := dispatched.Truncate(time.Second)
	if p.Dispatched.IsZero() || d.Before(p.Dispatched) {
		p.Dispatched = d
	}
	if d.After(p.DispatchedLast) {
		p.DispatchedLast = d
	}
}

// ruleEnded records that key's rule has no occurrence left: nothing is
// planned until the application changes the row.
func (b *ledgerBatch) ruleEnded(key string, now time.Time) {
	b.add(policy.Entry{At: now, Key: key, Event: policy.EventDisabled, Reason: "the rule has no occurrence left"})
}

// succeeded records a success of attempt, dispatched at dispatched, on
// key at now, with the next occurrence planned. A plain success (one with
// a next occurrence: every other outcome is an entry of its row) is
// counted in the batch's routine entry unless b.rows.
func (b *ledgerBatch) succeeded(key, attempt string, dispatched, next, now time.Time) {
	if b == nil {
		return
	}
	if !b.rows && !next.IsZero() {
		b.countPlain(dispatched, now)
		return
	}
	b.add(policy.Entry{At: now, Key: key, Event: policy.EventSucceeded, Attempt: attempt, Dispatched: dispatched, Next: next})
	if next.IsZero() {
		b.ruleEnded(key, now)
	}
}

// apply records what the poller decided for result r of key at now:
// before and st are the row's state before and after, p the kind's policy.
func (b *ledgerBatch) apply(key string, r policy.Result, before, st policy.State, d policy.ApplyDecision, p policy.Policy, now time.Time) {
	if b == nil {
		return
	}
	var dispatched time.Time // of r's attempt, when it is the row's
	if before.AttemptUID == r.AttemptUID {
		dispatched = before.AttemptAt
	}
	switch d.Outcome {
	case policy.OutcomeStale:
		b.add(policy.Entry{At: now, Key: key, Event: policy.EventStale, Attempt: r.AttemptUID})
		return
	case policy.OutcomeLate:
		b.add(policy.Entry{At: now, Key: key, Event: policy.EventLate, Attempt: r.AttemptUID, Dispatched: dispatched})
	}
	switch {
	case d.InvalidSchedule:
		b.add(policy.Entry{At: now, Key: key, Event: policy.EventDisabled, Attempt: r.AttemptUID, Reason: st.DisabledReason})
	case d.TimedOut:
		b.failure(policy.EventTimedOut, key, r.AttemptUID, dispatched, st.LastError, d.Failure, p.RetryBound(d.Failure, 0), now)
	case d.Failed:
		b.failure(policy.EventFailed, key, r.AttemptUID, dispatched, r.Reason, d.Failure, p.RetryBound(d.Failure, r.RetryAfter), now)
	case d.Extended:
		b.add(policy.Entry{At: now, Key: key, Event: policy.EventExtended, Attempt: r.AttemptUID, Dispatched: dispatched, Until: st.TimeoutAt})
	case r.Type == policy.ResultSuccess:
		b.succeeded(key, r.AttemptUID, dispatched, st.RefreshAt, now)
	}
}

// attemptTime is when the service made the attempt uid (its xid's time,
// to the second): the dispatch time of an attempt whose row is not read.
// Zero when uid is not an xid.
func attemptTime(uid string) time.Time {
	id, err := xid.FromString(uid)
	if err != nil {
		return time.Time{}
	}
	return id.Time().UTC()
}

// holds records the throttle holds a batch set, as entries of the kind.
func (b *ledgerBatch) holds(holds map[string]time.Time, now time.Time) {
	if b == nil {
		return
	}
	for g, until := range holds {
		b.add(policy.Entry{At: now, Whole: true, Event: policy.EventThrottleHold, Group: g, Until: until})
	}
}

// recordKind writes entries of a kind outside any row's transaction
// (a kind's pause, an incident): a failure is logged and loses only them.
func (r *kindRunner) recordKind(ctx context.Context, e policy.Entry) {
	if r.ledger == nil {
		return
	}
	e.Kind, e.Whole = r.kind.Name, true
	if err := r.ledger.AppendLedger(ctx, []policy.Entry{e}); err != nil {
		r.log.Warn("cannot record in the ledger", "event", e.Event, "err", err)
	}
}

// ledgers returns, of the service's stores, those that keep the ledger,
// when it is on: a store whose table is missing (`refresher migrate` not
// run since the upgrade) is left out with a warning, and its kinds record
// nothing.
func (s *Service) ledgers(ctx context.Context) map[models.Store]models.LedgerStore {
	out := map[models.Store]models.LedgerStore{}
	if !s.cfg.Ledger.On {
		return out
	}
	for _, st := range s.stores() {
		ls, ok := st.store.(models.LedgerStore)
		if !ok {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, s.cfg.OpTimeout)
		err := ls.LedgerReady(cctx)
		cancel()
		if err != nil {
			s.cfg.Logger.Warn("the ledger is off for these kinds: its table cannot be read", "kinds", st.kinds, "err", err)
			continue
		}
		out[st.store] = ls
	}
	return out
}

// pruneLedger prunes ls every PruneEvery until ctx ends: each round takes
// steps (models.LedgerStore.PruneLedger), by age until a step finds
// nothing old, then along the (kind, key) groups until the walk is back at
// its start; each statement is one bounded chunk.
func (s *Service) pruneLedger(ctx context.Context, ls models.LedgerStore) {
	cfg := s.cfg.Ledger
	var from models.LedgerPrune
	t := time.NewTicker(cfg.PruneEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for ctx.Err() == nil {
			pctx, cancel := context.WithTimeout(ctx, s.cfg.OpTimeout)
			_, next, err := ls.PruneLedger(pctx, cfg.Bounds, s.cfg.Clock.Now(), from)
			cancel()
			if err != nil {
				s.cfg.Logger.Warn("cannot prune the ledger", "err", err)
				break
			}
			round := from.Counting && !next.Counting
			from = next
			if round {
				break // the walk is back at its start: next round, next tick
			}
		}
	}
}
