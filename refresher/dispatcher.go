package refresher

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/xid"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
)

// dispatcher starts the attempts of one kind's due rows.
type dispatcher struct {
	*kindRunner
	// gate is the store as the dispatcher claims through it: a pass with
	// nothing due skips its claim transaction (see dueGate). The claims and
	// NextDue go through it, never through kindRunner.store.
	gate      *dueGate
	wake      chan struct{} // the poller planned a row earlier than the next pass
	schedules schedules
	tally     tally // the counts of the batch in hand
	// cursor is where the next claim starts scanning refresh_at (see
	// models.Tx.ClaimDue); zero scans from the start of the index. It is
	// advanced after a full batch and reset after a short one and every
	// cursorReset, so rows whose refresh_at moved earlier are not missed.
	cursor      time.Time
	cursorSince time.Time
	// queued is the input list's length as last seen (by LLEN, or returned
	// by the last RPUSH) at queuedAt (wall clock); see throttled.
	queued   int64
	queuedAt time.Time
	// jobs and starts are the batch in hand, reused from pass to pass.
	jobs   []redisio.Job
	starts []started
	// claimed is how many rows the pass in hand claimed.
	claimed int
	// holds are the throttle groups held in the pass in hand (see throttle),
	// read with the pauses (readPauses).
	holds  map[string]time.Time
	paused pauses // the operator's pauses, read each pass (pause.go)
	// watch looks for due rows while the kind is idle (see dueWatch); nil:
	// the dispatcher looks itself every MaxSleep.
	watch *dueWatch
}

// queuedRecheck is how long the dispatcher trusts the input list length it
// last saw while that is well below MaxQueued: other instances push too, and
// workers pop.
const queuedRecheck = time.Second

// cursorReset is how long the claim cursor may be used before the scan
// starts from the beginning of the index again.
const cursorReset = 5 * time.Second

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
	for {
		started, full, throttled, err := d.runOnce(ctx)
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

// started is one attempt started in a pass, kept to undo it if its push fails.
type started struct {
	before models.Row // the row as it was before the start (after a timeout)
	uid    string
}

// runOnce claims one batch of due rows, applies timeouts, starts attempts,
// commits, then pushes the jobs. full reports a full batch (more may be
// due); throttled reports that nothing was claimed because the input list
// holds MaxQueued jobs or more.
func (d *dispatcher) runOnce(ctx context.Context) (n int, full, throttled bool, err error) {
	k := d.kind
	bctx, cancel := d.batchContext(ctx)
	defer cancel()

	if due, err := d.gate.Due(bctx); err != nil || !due {
		d.cursor = time.Time{} // as after a short batch
		return 0, false, false, err
	}
	if paused, err := d.readPauses(bctx); err != nil || paused { // a paused kind waits as a throttled one
		return 0, false, paused, err
	}
	if throttled, err := d.throttled(bctx); err != nil || throttled {
		return 0, false, throttled, err
	}

	if d.throttle != nil && d.throttle.column != "" {
		d.metrics.ThrottledGroups.WithLabelValues(k.Name).Set(float64(len(d.holds)))
	}

	// The claimed rows' own rules are parsed, and their next occurrences
	// computed, with no lock held: a transaction that claims rows whose
	// rules are not parsed yet rolls back at once, the rules are parsed,
	// and it claims again (see schedules.prepare).
	now := d.clock.Now()
	if !d.cursor.IsZero() && now.Sub(d.cursorSince) > cursorReset {
		d.cursor = time.Time{}
	}
	for round := 1; ; round++ {
		var pending []keyRule
		err = d.gate.Tx(bctx, func(tx models.Tx) error {
			rows, err := tx.ClaimDue(bctx, k.Table, now, d.cursor, d.cfg.BatchSize)
			if err != nil {
				return err
			}
			if round < maxPrepareRounds {
				if pending = d.schedules.unprepared(rows, now, d.asksSchedule(now)); len(pending) > 0 {
					return errUnprepared
				}
			}
			return d.claimTx(bctx, tx, rows, now)
		})
		if !errors.Is(err, errUnprepared) {
			break
		}
		d.schedules.prepare(pending, now)
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
	jobs := d.jobs
	if len(jobs) == 0 {
		return 0, full, false, nil
	}
	if d.faults.beforePush != nil {
		d.faults.beforePush(k.Name)
	}
	queued, err := d.rdb.PushCounting(bctx, k.Lists, jobs, d.clock.Now()) // counted for the charts in the same round trip
	if err != nil {
		d.metrics.PushFailures.WithLabelValues(k.Name).Inc()
		// The undo gets its own time: the failed push may have used up the
		// batch's.
		uctx, ucancel := d.batchContext(ctx)
		undone, uerr := d.undo(uctx, d.starts)
		ucancel()
		return 0, false, false, errors.Join(fmt.Errorf("%w (undid %d attempts)", err, undone), uerr)
	}
	d.setQueued(queued)
	d.metrics.Started.WithLabelValues(k.Name).Add(float64(len(jobs)))
	d.activity.addStarted(len(jobs))
	return len(jobs), full, false, nil
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
// after a full batch.
func (d *dispatcher) claimTx(ctx context.Context, tx models.Tx, rows []models.Row, now time.Time) error {
	// Cleared, so that the last batch's rows and payloads can be freed.
	clear(d.jobs[:cap(d.jobs)])
	clear(d.starts[:cap(d.starts)])
	d.jobs, d.starts = d.jobs[:0], d.starts[:0]
	d.tally.reset()
	d.claimed = len(rows)
	if d.claimed == d.cfg.BatchSize {
		if d.cursor.IsZero() {
			d.cursorSince = now
		}
		d.cursor = rows[d.claimed-1].State.RefreshAt
	} else {
		d.cursor = time.Time{}
	}
	for i := range rows {
		d.decide(&rows[i], now)
	}
	return tx.Save(ctx, d.kind.Table, rows)
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

// decide applies policy.Due to one claimed row in place and keeps the
// attempt it started, if any, with its job.
func (d *dispatcher) decide(row *models.Row, now time.Time) {
	if d.keepPaused(row) {
		return
	}
	sched, err := d.schedules.get(row.Key, row.Rule)
	var dec policy.DueDecision
	row.State, dec = d.incident.policy(d.kind.Policy).Due(row.State, now, sched, err, xid.NewWithTime(now).String(), d.rand())
	if until := d.throttle.until(d.holds, row); !until.IsZero() {
		row.State, dec = policy.Held(row.State, dec, until, now)
	}
	d.tally.due(row.Key, dec)
	if dec.Action == policy.DueStarted {
		before := *row
		before.State = dec.BeforeStart
		d.starts = append(d.starts, started{before: before, uid: dec.AttemptUID})
		d.jobs = append(d.jobs, d.job(*row))
	}
}

// job builds the message for a row whose attempt just started.
func (d *dispatcher) job(row models.Row) redisio.Job {
	return redisio.Job{
		Kind:       d.kind.Name,
		UID:        row.Key,
		AttemptUID: row.State.AttemptUID,
		AttemptNo:  row.State.AttemptNo,
		TimeoutAt:  row.State.TimeoutAt,
		Payload:    row.Payload,
	}
}

// undo restores the rows of attempts whose jobs could not be pushed, so the
// attempts do not count against their models and the rows are due again. A
// row whose attempt UID changed meanwhile (enabled by the user) is left alone.
func (d *dispatcher) undo(ctx context.Context, starts []started) (int, error) {
	rows := make([]models.Row, len(starts))
	uids := make([]string, len(starts))
	for i, s := range starts {
		rows[i], uids[i] = s.before, s.uid
	}
	n, err := d.store.SaveIfAttempt(ctx, d.kind.Table, rows, uids)
	if err != nil {
		return n, fmt.Errorf("undo attempts after failed push (they will time out and retry): %w", err)
	}
	return n, nil
}
