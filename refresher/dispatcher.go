package refresher

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/rs/xid"

	"github.com/refresher/refresher/internal/tracing"
	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
)

// dispatcher starts the attempts of one kind's due rows.
type dispatcher struct {
	*kindRunner
	// gate is the store as the dispatcher claims through it: a pass with
	// nothing due skips its claim transaction (see dueGate). The claims and
	// NextDue go through it, never through kindRunner.store; nil for the
	// urgent dispatcher, which claims from the store after Store.UrgentDue
	// found a row (see inClaimTx).
	gate      *dueGate
	wake      chan struct{} // the poller planned a row earlier than the next pass
	schedules schedules
	tally     tally // the counts of the batch in hand
	// cursor is where the next claim starts scanning refresh_at (see
	// models.Tx.ClaimDue); zero scans from the start of the index. It is
	// advanced after a full batch and reset after a short one and every
	// cursorReset, so rows whose refresh_at moved earlier are not missed.
	cursor      models.Cursor
	cursorSince time.Time
	// queued is the input list's length as last seen (by LLEN, or returned
	// by the last RPUSH) at queuedAt (wall clock); see throttled.
	queued   int64
	queuedAt time.Time
	// jobs and starts are the batch in hand, reused from pass to pass;
	// lists[i] is the list of jobs[i] (Kind.inputList).
	jobs   []redisio.Job
	lists  []string
	starts []started
	// spans are the dispatch spans of jobs, with a Tracer (trace.go).
	spans []tracing.Span
	// inFlight is the push of the last full batch while the next pass
	// claims (push_behind.go); nil when none is in flight. spare holds the
	// buffers of the batch pushed last, for a later claim.
	inFlight *pushInFlight
	spare    pushBatch
	// joined and joinErr are what the pushes joined in the pass in hand
	// did (joinPush): jobs pushed, and the error of one that failed.
	joined  int
	joinErr error
	// claimed is how many rows the pass in hand claimed.
	claimed int
	// dec is the decision of the row in hand (decide), kept here so that
	// it is neither copied nor zeroed on the stack per row.
	dec policy.DueDecision
	// holds are the throttle groups held in the pass in hand (see throttle),
	// read with the pauses (readPauses).
	holds  map[string]time.Time
	paused pauses // the operator's pauses, read each pass (pause_read.go)
	// pausesKnown says that the last read of the pauses succeeded: the
	// next one may run beside the claim unless it found the kind paused.
	pausesKnown bool
	// watch looks for due rows while the kind is idle (see dueWatch); nil:
	// the dispatcher looks itself every MaxSleep.
	watch *dueWatch
	// claims orders the kinds' claims by priority when connections are
	// short (Config.ClaimConnections); nil: no gate.
	claims *claimGate
	// entries are the ledger's entries of the pass in hand; nil when the
	// ledger is off.
	entries *ledgerBatch
	// urgent makes this the kind's urgent dispatcher (urgentLoop): it
	// claims only the rows more urgent than the kind's.
	urgent bool
	// backlog is shared by a kind's dispatcher, which sets it, and its
	// urgent dispatcher, which runs only while it is set; nil without lanes.
	backlog *backlogSignal
}

// backlogSignal says whether a kind's dispatcher has a backlog: its last
// pass was full, or the input list was full.
type backlogSignal struct {
	busy atomic.Bool
	wake chan struct{} // signalled when busy turns true
}

func newBacklogSignal() *backlogSignal { return &backlogSignal{wake: make(chan struct{}, 1)} }

func (b *backlogSignal) set(busy bool) {
	if b == nil {
		return
	}
	if !busy {
		b.busy.Store(false)
	} else if !b.busy.Swap(true) {
		select {
		case b.wake <- struct{}{}:
		default:
		}
	}
}

// queuedRecheck is how long the dispatcher trusts the input list length it
// last saw while that is well below MaxQueued: other instances push too, and
// workers pop.
const queuedRecheck = time.Second

// cursorReset is how long the claim cursor may be used before the scan
// starts from the beginning of the index again.
const cursorReset = 5 * time.Second

// urgentPoll is how often the urgent dispatcher of a kind with priority
// lanes looks for rows more urgent than the kind's (see urgentLoop): two
// index lookups when there are none (Store.UrgentDue).
const urgentPoll = 100 * time.Millisecond

// minSleep is the shortest wait after a pass that came back short. Rows
// can be due and yet not claimable by this dispatcher (another instance
// holds them for the moment, or their key is NULL); without a floor the loop
// would spin on them.
const minSleep = 20 * time.Millisecond

// loop runs passes until ctx is cancelled: at once after a full batch,
// otherwise when the earliest refresh_at is due (at most MaxSleep later), or
// when woken. When nothing is due within MaxSleep it parks at the watch,
// which then looks for it (see dueWatch) and wakes it in time.
func (d *dispatcher) loop(ctx context.Context) {
	retry := backoff{limit: 5 * d.cfg.MaxSleep}
	defer d.finishPush()
	for {
		started, full, throttled, err := d.runOnce(ctx)
		d.backlog.set(err == nil && (full || throttled))
		if d.observer.AfterDispatch != nil {
			d.observer.AfterDispatch(d.kind.Name, started)
		}
		wait, park := time.Duration(0), false
		switch {
		case err != nil:
			d.metrics.Errors.WithLabelValues(d.kind.Name, "dispatch").Inc()
			d.log.Error("dispatch pass failed", "err", err)
			wait = retry.failed()
		case throttled:
			// The input list is full: workers are down or behind.
			wait = d.cfg.MaxSleep
		case full:
			retry.reset()
		default:
			retry.reset()
			wait, park = d.sleepFor(ctx)
		}
		if park {
			d.watch.park(d)
			wait = forever
		}
		live := sleepOrWake(ctx, wait, d.wake)
		if park {
			d.watch.unpark(d)
		}
		if !live {
			return
		}
	}
}

// urgentLoop runs the passes of a kind's urgent dispatcher until ctx is
// cancelled: while the kind's dispatcher has a backlog (d.backlog), every
// urgentPoll, and at once after a full batch, it claims the rows more
// urgent than the kind's (models.Cursor.UrgentOnly) and pushes them to
// their lanes. A row triggered "refresh now" at a high priority thus starts
// within about urgentPoll, whatever the backlog, the batch size or a full
// input list; without a backlog the kind's dispatcher claims it first in
// its next pass, and the urgent one costs nothing. SKIP LOCKED keeps the
// two from claiming a row twice (on SQLite they take turns). Only passes
// that start attempts fire Observer.AfterDispatch.
func (d *dispatcher) urgentLoop(ctx context.Context) {
	backoff := time.Duration(0)
	for {
		if !d.backlog.busy.Load() {
			select {
			case <-ctx.Done():
				return
			case <-d.backlog.wake:
			}
			continue
		}
		// A few index lookups, no transaction nor Redis, while nothing
		// urgent is due; on an error the pass meets it.
		cctx, cancel := d.batchContext(ctx)
		due, err := d.store.UrgentDue(cctx, d.kind.Table, d.clock.Now())
		cancel()
		started, full := 0, false
		if err != nil || due {
			started, full, _, err = d.runOnce(ctx)
		}
		if started > 0 && d.observer.AfterDispatch != nil {
			d.observer.AfterDispatch(d.kind.Name, started)
		}
		wait := urgentPoll
		switch {
		case err != nil:
			d.metrics.Errors.WithLabelValues(d.kind.Name, "dispatch").Inc()
			d.log.Error("urgent dispatch pass failed", "err", err)
			backoff = min(max(2*backoff, 100*time.Millisecond), 5*d.cfg.MaxSleep)
			wait = backoff
		case full:
			backoff, wait = 0, 0
		default:
			backoff = 0
		}
		if wait == 0 {
			if ctx.Err() != nil {
				return
			}
			continue
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// finishPush waits for the push behind the last pass when the dispatcher
// stops (see pushBehind): its attempts are committed, so its jobs are pushed
// (or undone) before Run returns.
func (d *dispatcher) finishPush() {
	n, err := d.settlePush()
	if err != nil {
		d.metrics.Errors.WithLabelValues(d.kind.Name, "dispatch").Inc()
		d.log.Error("dispatch pass failed", "err", err)
	}
	if n > 0 && d.observer.AfterDispatch != nil {
		d.observer.AfterDispatch(d.kind.Name, n)
	}
}

// sleepFor returns how long to wait until the earliest planned refresh_at,
// at most MaxSleep, or park when nothing is due within MaxSleep and the
// dispatcher has a watch to park at.
func (d *dispatcher) sleepFor(ctx context.Context) (wait time.Duration, park bool) {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.OpTimeout)
	defer cancel()
	next, ok, err := d.gate.NextDue(ctx)
	if err != nil {
		return d.cfg.MaxSleep, false
	}
	if ok {
		wait = next.Sub(d.clock.Now())
	}
	if !ok || wait > d.cfg.MaxSleep {
		return d.cfg.MaxSleep, d.watch != nil
	}
	return min(max(wait, minSleep), d.cfg.MaxSleep), false
}

// started is one attempt started in a pass, kept to undo it if its push
// fails: of the row as it was before the start (after a timeout), what
// Store.SaveIfAttempt reads of it, which writes every column the row knows
// (see models.GroupByID with all): its key, its primary key when the claim
// read it (Loaded.ID), the columns the claim left unread (Loaded.Unread)
// and its state. Not the whole claimed row: that is twice the size, copied
// and then cleared for every row a pass starts.
//
// once and onceLevel keep the one-shot priority (refresh_priority_once, a
// SMALLINT) the claim cleared, when the row was claimed by it, so that the
// undo sets it back: the attempt it was for never ran (docs/schedules.md).
// They sit in the padding after unread: started is no larger for them.
type started struct {
	key, id   string
	unread    models.ColumnSet
	once      bool
	onceLevel int16
	state     policy.State // before the start
	uid       string
}

// appendStarted appends to starts the started record of row, claimed and
// just started with attempt uid; before is its state before the start. It
// appends the record in place rather than returning one: a pass copies a
// record per row it starts.
func appendStarted(starts []started, row *models.Row, before *policy.State, uid string) []started {
	starts = append(starts, started{key: row.Key, id: row.Loaded.ID, unread: row.Loaded.Unread, state: *before, uid: uid})
	if row.Priority.Source == models.PriorityOnce {
		s := &starts[len(starts)-1]
		s.once, s.onceLevel = true, int16(row.Priority.Level)
	}
	return starts
}

// row is the row SaveIfAttempt writes back to undo the start, with the
// one-shot priority it restores (Priority of source PriorityOnce) when the
// claim cleared one.
func (s *started) row() models.Row {
	r := models.Row{Key: s.key, State: s.state, Loaded: models.Loaded{ID: s.id, Unread: s.unread}}
	if s.once {
		r.Priority = models.Priority{Level: int(s.onceLevel), Source: models.PriorityOnce}
	}
	return r
}

// runOnce claims one batch of due rows, applies timeouts, starts attempts,
// commits, then pushes the jobs: after a full batch, behind the next pass
// (see pushBehind). n counts the jobs pushed during the pass, those of the
// push behind the last pass included. full reports a full batch (more may be
// due); throttled reports that nothing was claimed because the input list
// holds MaxQueued jobs or more.
func (d *dispatcher) runOnce(ctx context.Context) (n int, full, throttled bool, err error) {
	n, full, throttled, err = d.pass(ctx)
	if !full || err != nil {
		// The push behind the last pass ends within this one, unless the
		// pass started one of its own (after waiting for the last).
		d.joinPush()
	}
	m, jerr := d.takeJoined()
	return n + m, full, throttled, errors.Join(jerr, err)
}

// pass is runOnce but for what the push behind the last pass did: it waits
// for it (joinPush) before it pushes its own jobs.
func (d *dispatcher) pass(ctx context.Context) (n int, full, throttled bool, err error) {
	k := d.kind
	start := d.traceStart()
	bctx, cancel := d.batchContext(ctx)
	defer cancel()

	// The urgent dispatcher asked Store.UrgentDue before its pass.
	if d.gate != nil {
		if due, err := d.gate.Due(bctx); err != nil || !due {
			d.cursor = models.Cursor{} // as after a short batch
			return 0, false, false, err
		}
	}
	// A paused kind waits as a throttled one. The read runs beside the
	// claim unless the last one found the kind paused (see pause_read.go).
	pauses := d.readPauses(bctx)
	defer pauses.join()
	if !pauses.beside {
		if paused, err := d.waitPauses(pauses); err != nil || paused {
			return 0, false, paused, err
		}
	}
	from := d.cursor
	if d.urgent {
		// The lanes are not bounded by MaxQueued: a few urgent jobs.
		from = models.Cursor{UrgentOnly: true}
	} else if throttled, err := d.throttled(bctx); err != nil || throttled {
		// The read's error or pause counts as if it had come first.
		paused, perr := d.waitPauses(pauses)
		return 0, false, throttled || paused, errors.Join(perr, err)
	}

	// The claimed rows' own rules are parsed, and their next occurrences
	// computed, with no lock held: a transaction that claims rows whose
	// rules are not parsed yet rolls back at once, the rules are parsed,
	// and it claims again (see schedules.prepare).
	now := d.clock.Now()
	if !from.UrgentOnly && !d.cursor.At.IsZero() && now.Sub(d.cursorSince) > cursorReset {
		d.cursor, from = models.Cursor{}, models.Cursor{}
	}
	if d.claims != nil {
		if err := d.claims.acquire(bctx, k.Table.Priority); err != nil {
			return 0, false, false, fmt.Errorf("wait for a database connection: %w", err)
		}
		defer d.claims.release()
	}
	for round := 1; ; round++ {
		var pending []keyRule
		var claimed []models.Row
		err = d.inClaimTx(bctx, func(tx models.Tx) error {
			rows, err := tx.ClaimDue(bctx, k.Table, now, from, d.cfg.BatchSize)
			if err != nil {
				return err
			}
			claimed = rows
			// Before a row is decided: the pauses, the paused models and
			// the holds of the read beside the claim (read once per pass).
			if paused, err := d.waitPauses(pauses); err != nil || paused {
				return cmp.Or(err, errKindPaused) // rolled back: nothing saved nor pushed
			}
			if round < maxPrepareRounds {
				if pending = d.schedules.unprepared(rows, now, d.asksSchedule(now)); len(pending) > 0 {
					return errUnprepared
				}
			}
			return d.claimTx(bctx, tx, rows, now, from.UrgentOnly)
		})
		// Nothing refers to the claimed rows any more: the starts, the
		// jobs and the cursor hold copies (and the payloads).
		models.ReleaseRows(claimed)
		if !errors.Is(err, errUnprepared) {
			break
		}
		d.schedules.prepare(pending, now)
	}
	if errors.Is(err, errKindPaused) {
		return 0, false, true, nil // as a pass that read the pause first
	}
	if err != nil {
		return 0, false, false, err // the store's error names the step and the table
	}
	claimed := d.claimed

	d.tally.flush(d.metrics, d.activity, k.Name) // committed: counted once
	if n := d.tally.timeouts; n > 0 {
		// Timeouts are failures for the incident guard (a dead worker fleet
		// answers nothing) and for the charts.
		if err := d.incident.record(bctx, d.clock.Now(), policy.Window{Results: n, Failures: n}, d.tally.stats()); err != nil {
			d.log.Warn("cannot count timeouts for the incident guard", "err", err)
		}
	}
	full = claimed == d.cfg.BatchSize
	if d.gate != nil {
		d.gate.full = full
	}
	// The jobs of the last pass go to the input list before this one's.
	d.joinPushAfterClaim(bctx)
	if len(d.jobs) == 0 {
		return 0, full, false, nil
	}
	b := d.takeBatch()
	if full && !d.urgent && d.joinErr == nil {
		d.pushBehind(ctx, b, start)
		return 0, true, false, nil
	}
	queued, err := d.pushJobs(bctx, &b, start)
	n, err = d.pushed(b, queued, err)
	if err != nil {
		return 0, false, false, err
	}
	return n, full, false, nil
}

// inClaimTx runs fn on the pass's claim transaction: through the due gate,
// or on the kind's store for the urgent dispatcher, which has none.
func (d *dispatcher) inClaimTx(ctx context.Context, fn func(tx models.Tx) error) error {
	if d.gate == nil {
		return d.store.Tx(ctx, fn)
	}
	return d.gate.Tx(ctx, fn)
}

// asksSchedule returns whether policy.Due asks a claimed row's schedule
// for an occurrence at now: to time its attempt out, or to skip a misfire.
// A row it starts needs no occurrence, so its rule need only be parsed.
func (d *dispatcher) asksSchedule(now time.Time) func(policy.State) bool {
	c := d.incident.policy(d.kind.Policy).WithDefaults().Catchup
	return func(s policy.State) bool {
		m, misfired := c.Misfired(s, now)
		return s.Running() || (misfired && m == policy.MisfireSkip)
	}
}

// claimTx decides the claimed rows of one pass (timeouts, starts) and
// saves them, in the claim's transaction; it advances the claim cursor
// after a full batch, unless the claim was of urgent rows only.
func (d *dispatcher) claimTx(ctx context.Context, tx models.Tx, rows []models.Row, now time.Time, urgentOnly bool) error {
	// Cleared, so that the last batch's rows and payloads can be freed:
	// what this transaction's earlier round (or a pass that failed)
	// appended. Past their length the buffers are zero already (takeBatch
	// hands them over cleared, and only appends write them), so the half
	// megabyte of a full batch is not cleared twice per pass.
	clear(d.jobs)
	clear(d.starts)
	d.jobs, d.lists, d.starts = d.jobs[:0], d.lists[:0], d.starts[:0]
	d.tally.reset()
	d.entries.reset()
	d.claimed = len(rows)
	if urgentOnly {
		// The cursor stays where the full claims left it.
	} else if d.claimed == d.cfg.BatchSize {
		if d.cursor.At.IsZero() {
			d.cursorSince = now
		}
		d.cursor = models.CursorAfter(rows[d.claimed-1])
	} else {
		d.cursor = models.Cursor{}
	}
	// One policy for the batch: the incident state is read once, not per row.
	pol := d.incident.policy(d.kind.Policy).WithDefaults()
	for i := range rows {
		d.decide(&rows[i], now, &pol)
	}
	if err := tx.Save(ctx, d.kind.Table, rows); err != nil {
		return err
	}
	return d.entries.write(ctx, tx)
}

// throttled reports whether the input list holds MaxQueued jobs or more. It
// reads the list's length (LLEN) only when the last one seen is older than
// queuedRecheck or within a batch of the limit: the push of every pass
// returns the length anyway, so a busy dispatcher saves a round trip per
// batch. Other instances' pushes can make it overshoot by about a second's
// worth of their batches. Before an LLEN it asks the store's gate (see
// dueGate.Due) whether anything is due: an idle kind's pass then costs one
// NextDue and no Redis round trip.
func (d *dispatcher) throttled(ctx context.Context) (bool, error) {
	k := d.kind
	if time.Since(d.queuedAt) >= queuedRecheck || d.queued >= int64(k.MaxQueued-d.cfg.BatchSize) {
		n, err := d.rdb.Len(ctx, k.Lists.Input)
		if err != nil {
			return false, err
		}
		d.setQueued(n)
	}
	if f := d.inFlight; f != nil && d.queued+int64(len(f.batch.jobs)) >= int64(k.MaxQueued) {
		// The length read may predate the push behind, which would fill
		// the list: wait for it (its RPUSH answers the length with its jobs).
		d.joinPush()
	}
	if d.queued >= int64(k.MaxQueued) {
		d.log.Warn("input list is full, not dispatching", "queued", d.queued, "max_queued", k.MaxQueued)
		return true, nil
	}
	return false, nil
}

func (d *dispatcher) setQueued(n int64) {
	d.queued, d.queuedAt = n, time.Now() // pacing only, not a decision of the policy
	d.metrics.Queued.WithLabelValues(d.kind.Name).Set(float64(n))
}

// decide applies policy.Due under pol (the kind's, with the incident
// state of the batch and its defaults) to one claimed row in place and
// keeps the attempt it started, if any, with its job. It runs for every
// claimed row: the state, the decision and the policy are passed by
// pointer (policy.DueInPlace), not copied in and out per row, and the
// state before is copied only for the ledger.
func (d *dispatcher) decide(row *models.Row, now time.Time, pol *policy.Policy) {
	if d.keepPaused(row) {
		return
	}
	sched, err := d.schedules.get(row.Key, row.Rule)
	var before policy.State
	if d.entries != nil {
		before = row.State
	}
	dec := &d.dec
	pol.DueInPlace(&row.State, now, sched, err, xid.NewWithTime(now).String(), d.rand(), dec)
	if until := d.throttle.until(d.holds, row); !until.IsZero() {
		row.State, *dec = policy.Held(row.State, *dec, until, now)
	}
	d.tally.due(row.Key, dec)
	d.entries.due(row, &before, dec, sched, pol, now)
	if dec.Action == policy.DueStarted {
		d.starts = appendStarted(d.starts, row, &dec.BeforeStart, dec.AttemptUID)
		d.jobs = append(d.jobs, d.job(row))
		d.lists = append(d.lists, d.kind.inputList(row.Priority))
	}
}

// job builds the message for a row whose attempt just started.
func (d *dispatcher) job(row *models.Row) redisio.Job {
	return redisio.Job{
		Kind:       d.kind.Name,
		UID:        row.Key,
		AttemptUID: row.State.AttemptUID,
		AttemptNo:  row.State.AttemptNo,
		TimeoutAt:  row.State.TimeoutAt,
		Fields:     row.Payload,
	}
}

// undo restores the rows of attempts whose jobs could not be pushed, so the
// attempts do not count against their models and the rows are due again. A
// row whose attempt UID changed meanwhile (enabled by the user) is left alone.
// A row claimed by its one-shot priority gets it back, unless a newer
// trigger set one meanwhile (see Store.SaveIfAttempt).
func (d *dispatcher) undo(ctx context.Context, starts []started) (int, error) {
	rows := make([]models.Row, len(starts))
	uids := make([]string, len(starts))
	for i := range starts {
		rows[i], uids[i] = starts[i].row(), starts[i].uid
	}
	n, err := d.store.SaveIfAttempt(ctx, d.kind.Table, rows, uids)
	if err != nil {
		return n, fmt.Errorf("undo attempts after failed push (they will time out and retry): %w", err)
	}
	if d.ledger != nil {
		// In a statement of its own, as the undo: the dispatched entries
		// committed with the claim.
		now := d.clock.Now()
		entries := make([]policy.Entry, len(starts))
		for i, s := range starts {
			entries[i] = policy.Entry{At: now, Kind: d.kind.Name, Key: s.key, Event: policy.EventUndone, Attempt: s.uid,
				Planned: s.state.RefreshAt, Dispatched: attemptTime(s.uid)}
		}
		if lerr := d.ledger.AppendLedger(ctx, entries); lerr != nil {
			d.log.Warn("cannot record the undone attempts in the ledger", "err", lerr)
		}
	}
	return n, nil
}
