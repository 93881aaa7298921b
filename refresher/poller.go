package refresher

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/refresher/refresher/internal/redact"
	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
)

// poller applies the results of one kind.
type poller struct {
	*kindRunner
	drain     *redisio.Drain
	schedules schedules
	wake      chan<- struct{} // tells the dispatcher a row became due early
	// entries are the ledger's entries of the batch in hand; nil when the
	// ledger is off.
	entries *ledgerBatch
	// requeue is set when a batch could not be applied: its messages are
	// still in this instance's processing list and go back to the output
	// list before anything else is fetched.
	requeue bool
	// next is the batch fetched ahead (Drain.Next) while the database
	// applied the previous one; it is in flight in the processing list and
	// the next pass applies it without fetching.
	next []redisio.Message
	// asked is how many messages the Next that fetched next asked for.
	asked int
	tally tally // the counts of the batch in hand
	// counted sums the committed transactions' counts of the batch in
	// hand for the charts (applied one by one, a batch commits several).
	counted redisio.StatsCount
	// holds are the throttle holds the committed results of the batch in
	// hand decided, by group (see throttle).
	holds map[string]time.Time
	// leases are the answers to the requests for more time of the batch
	// in hand, in order, written after its commit (see writeLeases).
	leases []redisio.LeaseAnswer
	// idle is set after a fetch that found nothing: the next one blocks
	// for idleFetchBlock instead of FetchBlock.
	idle bool
	// outcomes are what became of the results of the batch in hand, for
	// their apply spans; nil without a Tracer (trace.go).
	outcomes map[traceKey]string
	// fastSkip is how many more batches are applied without
	// SaveSuccesses, and fastPenalty how many the last miss skipped (see
	// fastMissed).
	fastSkip, fastPenalty int
	// fastBuf and fastSeen are fastSuccesses's memory, kept from batch to
	// batch so that a batch allocates none of it (one batch at a time).
	fastBuf  fastBatch
	fastSeen map[string]int
}

// maxIdleFetchBlock caps idleFetchBlock.
const maxIdleFetchBlock = 5 * time.Second

// idleFetchBlock is how long a poller whose last fetch found nothing blocks
// on the empty output list: FetchBlock, or longer, up to a third of the
// Heartbeat and at most 5 s. A result that arrives wakes the blocked fetch
// at once, so the wait adds no latency; what it saves is the fetch script's
// round trip at the end of every FetchBlock (with 200 idle kinds, most of
// the idle CPU). Heartbeat and recovery wait at most that long.
func idleFetchBlock(cfg Config) time.Duration {
	return max(cfg.FetchBlock, min(cfg.Heartbeat/3, maxIdleFetchBlock))
}

// loop runs passes until ctx is cancelled. It heartbeats, and takes over the
// results of dead instances once per heartbeat period.
func (p *poller) loop(ctx context.Context) {
	var lastBeat, lastRecover time.Time
	retry := backoff{limit: 5 * time.Second}
	crashed := false
	defer func() {
		if !crashed { // a killed process writes nothing more
			p.flushIncident()
		}
	}()
	for ctx.Err() == nil {
		now := time.Now() // pacing only; no decision depends on it
		if now.Sub(lastBeat) >= p.cfg.Heartbeat/3 {
			if err := p.beat(ctx); err == nil {
				lastBeat = now
			}
		}
		if p.requeue || now.Sub(lastRecover) >= p.cfg.Heartbeat {
			// With a batch fetched ahead (a backlog), the periodic
			// recovery takes over only the lists of dead instances: the
			// full one would move that batch back to the output list.
			recover := p.recover
			if !p.requeue && p.next != nil {
				recover = p.recoverOthers
			}
			if err := recover(ctx); err != nil {
				p.fail(ctx, "recover", err, &retry)
				continue
			}
			lastRecover = now
		}
		n, err := p.runOnce(ctx)
		if errors.Is(err, errCrashed) {
			crashed = true
			return // crashed by a test hook: what is in flight stays, as after a kill
		}
		if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
			break // a fetch cut short by shutdown
		}
		if err != nil {
			p.fail(ctx, "poll", err, &retry)
			continue
		}
		retry.reset()
		if n > 0 && p.observer.AfterApply != nil {
			p.observer.AfterApply(p.kind.Name, n)
		}
	}
	p.release()
}

// release gives the batch fetched ahead, if any, back to the output list
// at shutdown, so that another instance applies it at once rather than
// after this one's heartbeat expires.
func (p *poller) release() {
	if p.next == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.OpTimeout)
	defer cancel()
	if err := p.recover(ctx); err != nil {
		p.log.Warn("cannot give back the results fetched ahead; another instance takes them over after the heartbeat", "err", err)
	}
}

// flushIncident writes the counts of the last batches to the incident
// window when the poller stops (see incident.countLater).
func (p *poller) flushIncident() {
	if !p.incident.waiting() {
		return
	}
	ctx, cancel := p.batchContext(context.Background())
	defer cancel()
	if err := p.incident.flush(ctx, p.clock.Now()); err != nil {
		p.log.Warn("cannot count results for the incident guard", "err", err)
	}
}

func (p *poller) beat(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.OpTimeout)
	defer cancel()
	return p.drain.Heartbeat(ctx)
}

func (p *poller) recover(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.OpTimeout)
	defer cancel()
	p.next = nil // in the processing list: moved back too
	n, err := p.drain.Recover(ctx)
	if err != nil {
		return fmt.Errorf("recover unapplied results: %w", err)
	}
	p.requeue = false
	if n > 0 {
		p.log.Info("took over unapplied results", "results", n)
	}
	return nil
}

// recoverOthers takes over the results of dead instances, leaving this
// one's batches in flight alone (see redisio.Drain.RecoverOthers).
func (p *poller) recoverOthers(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.OpTimeout)
	defer cancel()
	n, err := p.drain.RecoverOthers(ctx)
	if err != nil {
		return fmt.Errorf("recover results of dead instances: %w", err)
	}
	if n > 0 {
		p.log.Info("took over unapplied results of a dead instance", "results", n)
	}
	return nil
}

// fail logs a failed pass and sleeps retry's next wait (up to 5s) or
// until ctx is done.
func (p *poller) fail(ctx context.Context, what string, err error, retry *backoff) {
	p.metrics.Errors.WithLabelValues(p.kind.Name, "poll").Inc()
	p.log.Error(what+" pass failed", "err", err)
	sleep(ctx, retry.failed())
}

// runOnce takes one batch of results (the one fetched ahead, with what
// arrived since when it came short: see catchUp; or a new fetch), topped
// up to BatchSize results (see topUp), applies it in one
// transaction and only then removes it from Redis. After a full batch it
// fetches the next one (Drain.Next) while the database applies this one, so
// that Redis's part of a batch (reading it, and stubbing its oversized
// messages inside Redis) and the database's overlap. It returns the number
// of messages handled.
func (p *poller) runOnce(ctx context.Context) (int, error) {
	msgs := p.next
	p.next = nil
	asked := p.asked
	ahead := msgs != nil
	if msgs == nil {
		asked = p.cfg.BatchSize
		block := p.cfg.FetchBlock
		if p.idle {
			block = idleFetchBlock(p.cfg)
		}
		fctx, cancel := context.WithTimeout(ctx, block+p.cfg.OpTimeout)
		var err error
		msgs, err = p.drain.Fetch(fctx, p.cfg.BatchSize, block)
		cancel()
		if err != nil {
			return 0, err // the drain's error names the list
		}
	}
	p.idle = len(msgs) == 0
	if len(msgs) == 0 {
		if p.incident.due() {
			// Without results, timeouts may start an incident, and one
			// ends when the window empties; the counts of the last batch
			// are written.
			// Not cut short by shutdown: it writes the counts in hand.
			ictx, cancel := p.batchContext(ctx)
			_, err := p.incident.decide(ictx, p.clock.Now(), policy.Window{})
			cancel()
			if err != nil {
				p.log.Warn("cannot read the incident window", "err", err)
			}
		}
		return 0, nil
	}
	// From here on the batch finishes even if ctx is cancelled.
	start := p.traceStart()
	bctx, cancel := p.batchContext(ctx)
	defer cancel()
	p.requeue = true // until acknowledged, the batch sits in the processing list
	full := len(msgs) >= asked
	if ahead && !full {
		var err error
		if msgs, full, err = p.catchUp(bctx, msgs, asked); err != nil {
			return 0, err
		}
	}
	if full {
		var err error
		if msgs, full, err = p.topUp(bctx, msgs); err != nil {
			return 0, err
		}
	}

	// The incident guard decides on the window with this batch in it, so a
	// batch of failures can start an incident for itself.
	batch := window(msgs)
	decided := p.decideIncident(bctx, batch)
	defer decided.wait()
	clear(p.holds)
	p.leases = p.leases[:0]
	p.counted = redisio.StatsCount{}

	// A full batch suggests more are queued: fetch the next one, as large
	// as this one, meanwhile. The drain is not used by this goroutine
	// until fetched is closed.
	var next []redisio.Message
	var nextErr error
	fetched := make(chan struct{})
	nextAsk := min(len(msgs), maxBatchMessages(p.cfg))
	if full && ctx.Err() == nil {
		go func() {
			defer close(fetched)
			next, nextErr = p.drain.Next(bctx, nextAsk)
		}()
	} else {
		close(fetched)
	}
	defer func() { <-fetched }() // on an error, Recover takes it back with the batch

	dead, earliest, err := p.applyBatch(bctx, msgs, decided)
	if err != nil && p.class(err) == models.ValueRefused {
		// A value the database cannot hold (a uid the key column's
		// character set cannot compare, a reason its charset cannot
		// store, a value a trigger rejects) fails the whole statement;
		// applied one by one, the others go through and the results that
		// carry such values go to the dead letters (see applyEach).
		p.log.Warn("the database refused a value in a batch of results; applying them one by one", "err", err)
		dead, earliest, err = p.applyEach(bctx, msgs, decided)
	}
	decided.wait() // made with the window as it was before this batch's counts
	if err != nil {
		return 0, fmt.Errorf("apply %d results: %w", len(msgs), err)
	}
	now := p.clock.Now()
	if err := p.throttle.hold(bctx, p.holds, now); err != nil {
		p.metrics.Errors.WithLabelValues(p.kind.Name, "poll").Inc()
		p.log.Error("cannot hold throttle groups; their rows are dispatched meanwhile", "err", err)
	}
	p.writeLeases(bctx, now)
	<-fetched
	if errors.Is(nextErr, redisio.ErrRecovered) {
		err = nextErr // the batch in hand was taken back with the next one
	} else {
		err = p.ack(bctx, msgs, dead)
	}
	if err != nil {
		if errors.Is(err, redisio.ErrRecovered) {
			// The batch took longer than the heartbeat and another instance
			// took it over: it applies the results again, as stale ones.
			p.log.Warn("batch was taken over before its ack; the results are applied and come back stale", "results", len(msgs))
			p.requeue = false
			return len(msgs), nil
		}
		// Applied but not removed: recovery puts them back and they come
		// back stale, which changes nothing.
		return len(msgs), fmt.Errorf("remove applied results from the processing list: %w", err)
	}
	// Counted once acknowledged: a batch that comes back (its Ack failed,
	// or another instance took it over) is counted when read again.
	stats := p.counted
	stats.Dead = int64(len(dead))
	p.incident.countLater(now, batch, stats) // written with the next read of the window
	p.traceApplied(start, msgs, dead)

	p.requeue = nextErr != nil // what Next may have moved goes back first
	if nextErr != nil {
		p.log.Warn("cannot fetch the next batch ahead; it is fetched again", "err", nextErr)
	} else if len(next) > 0 {
		p.next, p.asked = next, nextAsk
	}
	p.metrics.DeadLetters.WithLabelValues(p.kind.Name).Add(float64(len(dead)))
	p.activity.addDead(len(dead))
	for _, m := range dead {
		p.log.Warn("dead letter", "list", p.kind.Lists.Dead, "err", m.Err)
	}
	if !earliest.IsZero() && !earliest.After(p.clock.Now().Add(p.cfg.MaxSleep)) {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
	return len(msgs), nil
}

// decideIncident makes the incident guard's decision with batch in the
// window (incident.decide); its wait returns once it is made.
// The window's read, a round trip to Redis, runs in a goroutine of its
// own while the batch's transaction begins and writes its plain successes
// (Tx.SaveSuccesses), which do not depend on the decision: applyTx waits
// for it only before it decides other results (policy.Policy.Apply with
// the incident's policy), and a batch of plain successes commits without
// waiting for it (runOnce waits before the ack). With the ledger on, a
// decision that opens or closes an incident writes an entry to the
// database, which on SQLite would wait for the poller's own transaction:
// the decision is then made before the transaction begins, as before.
func (p *poller) decideIncident(ctx context.Context, batch policy.Window) *decision {
	d := &decision{done: make(chan struct{})}
	decide := func() {
		if p.faults.beforeIncidentRead != nil {
			p.faults.beforeIncidentRead(p.kind.Name)
		}
		if _, err := p.incident.decide(ctx, p.clock.Now(), batch); err != nil {
			p.log.Warn("cannot read the incident window; keeping the last decision", "err", err)
		}
	}
	if p.ledger != nil {
		decide()
		close(d.done)
		return d
	}
	go func() {
		defer close(d.done) // after panicked is set
		defer func() { d.panicked = recover() }()
		decide()
	}()
	return d
}

// decision is the incident guard's decision for one batch, made beside its
// transaction (decideIncident).
type decision struct {
	done chan struct{} // closed once it is made
	// panicked is what the decision's goroutine panicked with: wait panics
	// with it in the poller's goroutine, where Run makes it fatal as a
	// panic of the poller's own.
	panicked any
}

// wait waits for the decision, and panics with what its goroutine panicked
// with, once.
func (d *decision) wait() {
	<-d.done
	if v := d.panicked; v != nil {
		d.panicked = nil
		panic(v)
	}
}

// maxBatchMessages bounds the messages of one batch, garbage included
// (see topUp): twice BatchSize.
func maxBatchMessages(cfg Config) int { return 2 * cfg.BatchSize }

// topUp adds to msgs, a full fetch, the messages that follow in the output
// list (Drain.Next) until the batch holds BatchSize results to apply, or
// maxBatchMessages messages, or the output list has no more: messages that
// cannot be applied (not JSON, wrong shape, oversized) would otherwise
// share a batch, its transaction and its round trips with fewer results,
// and a flood of them would take more batches, not only more bytes. Each
// Next asks for what the garbage share seen so far says the missing
// results take, so a batch may hold a few more than BatchSize results
// (never more than maxBatchMessages messages).
// full reports whether the last fetch returned all it asked for (more may
// be queued). On an error the batch is in the processing list; the caller
// leaves it to Recover.
func (p *poller) topUp(ctx context.Context, msgs []redisio.Message) (_ []redisio.Message, full bool, _ error) {
	limit := maxBatchMessages(p.cfg)
	valid := countValid(msgs)
	for valid < p.cfg.BatchSize && len(msgs) < limit {
		ask := limit - len(msgs)
		if valid > 0 {
			// The messages that take the rest at the share seen so far.
			ask = min(ask, ((p.cfg.BatchSize-valid)*len(msgs)+valid-1)/valid)
		}
		fctx, cancel := context.WithTimeout(ctx, p.cfg.OpTimeout)
		more, err := p.drain.Next(fctx, ask)
		cancel()
		if err != nil {
			return nil, false, fmt.Errorf("top up a batch of %d results: %w", len(msgs), err)
		}
		msgs = append(msgs, more...)
		valid += countValid(more)
		if len(more) < ask {
			return msgs, false, nil
		}
	}
	return msgs, true, nil
}

// catchUp adds to msgs, a batch fetched ahead (Drain.Next) that came
// short of asked, the messages that reached the output list since, up to
// asked in all, with one more Next: the read-ahead ran while the previous
// batch was applied and took what had arrived by then (near the end of a
// backlog, 200 of the last 1000 results), and what arrived during that
// apply would otherwise wait for a transaction of its own after it. full
// reports whether the batch now holds asked messages (more may be
// queued). On an error the batch is in the processing list; the caller
// leaves it to Recover.
func (p *poller) catchUp(ctx context.Context, msgs []redisio.Message, asked int) (_ []redisio.Message, full bool, _ error) {
	fctx, cancel := context.WithTimeout(ctx, p.cfg.OpTimeout)
	more, err := p.drain.Next(fctx, asked-len(msgs))
	cancel()
	if err != nil {
		return nil, false, fmt.Errorf("add to a batch of %d results fetched ahead: %w", len(msgs), err)
	}
	msgs = append(msgs, more...)
	return msgs, len(msgs) >= asked, nil
}

// ack is Drain.Ack, unless faults.beforeAck fails it first.
func (p *poller) ack(ctx context.Context, msgs, dead []redisio.Message) error {
	if p.faults.beforeAck != nil {
		if err := p.faults.beforeAck(p.kind.Name); err != nil {
			return err
		}
	}
	return p.drain.Ack(ctx, msgs, dead)
}

// countValid counts the messages that decoded (Err nil).
func countValid(msgs []redisio.Message) int {
	n := 0
	for i := range msgs {
		if msgs[i].Err == nil {
			n++
		}
	}
	return n
}

// applyBatch applies msgs in one transaction and counts them once it
// commits. It returns the messages for the dead-letter list (undecodable, or
// naming no row) and the earliest refresh_at it planned.
//
// The rows' own rules are parsed, and their next occurrences computed,
// with no lock held: a transaction that locks rows whose rules this poller
// has not parsed yet rolls back at once, the rules are parsed, and it runs
// again (see schedules.prepare). `now` is read before, so that the
// occurrences computed then are the ones the transaction uses.
//
// The successes among msgs (see fastSuccesses) are written first without
// reading their rows (Tx.SaveSuccesses); only the results it did not write
// are locked, read and decided one by one.
func (p *poller) applyBatch(ctx context.Context, msgs []redisio.Message, decided *decision) (dead []redisio.Message, earliest time.Time, err error) {
	now := p.clock.Now()
	fast := p.fastSuccesses(msgs, now)
	p.schedules.prepare(p.knownRules(msgs), now)
	for round := 1; ; round++ {
		var pending []keyRule
		dead, earliest, pending, err = p.applyTx(ctx, msgs, now, round < maxPrepareRounds, fast, decided)
		if errors.Is(err, models.ErrUnmatched) {
			// The store cannot tell which rows took their success: the
			// transaction rolled back, and the batch is read and decided.
			p.fastMissed()
			fast = fastBatch{}
			continue
		}
		if !errors.Is(err, errUnprepared) {
			if err == nil && len(fast.succ) > 0 {
				p.fastPenalty = 0
			}
			return dead, earliest, err
		}
		p.schedules.prepare(pending, now)
	}
}

// knownRules returns the rules the rows of msgs were last read with, for
// those that had one of their own (ownRules), so that applyBatch prepares
// them before its transaction locks the rows.
func (p *poller) knownRules(msgs []redisio.Message) []keyRule {
	var out []keyRule
	for i := range msgs {
		m := &msgs[i]
		if m.Err != nil {
			continue
		}
		if rule, ok := p.schedules.own.rule(m.Result.UID); ok {
			out = append(out, keyRule{m.Result.UID, rule})
		}
	}
	return out
}

// fastBatch is what a batch's successes write without reading their rows:
// succ for Tx.SaveSuccesses, and for each message the index of its
// success in succ (-1: read and decided).
type fastBatch struct {
	succ []models.Success
	at   []int
}

// maxFastPenalty bounds the batches applied without SaveSuccesses after
// the store reported models.ErrUnmatched (see fastMissed).
const maxFastPenalty = 64

// fastSuccesses returns the successes of msgs whose write needs nothing of
// their row but its key: success results whose key occurs once among the
// batch's results (results of one row apply in order, so a repeated key
// is read and decided), with the kind's schedule spread by the row's
// offset. Whether the row has no rule of its own, still runs that attempt
// and is not late, the store checks as it writes (Tx.SaveSuccesses); the
// columns are policy.Succeeded's, the same Apply writes. A success whose
// next run the schedule cannot compute is read and decided (Apply disables
// the row), and so is one whose row was last read with a rule of its own
// (ownRules). After a models.ErrUnmatched, it returns nothing for a few
// batches (fastMissed).
func (p *poller) fastSuccesses(msgs []redisio.Message, now time.Time) fastBatch {
	if p.fastSkip > 0 {
		p.fastSkip--
		return fastBatch{}
	}
	if p.schedules.kindDefault == nil {
		return fastBatch{}
	}
	seen := p.fastSeen
	if seen == nil {
		seen = make(map[string]int, len(msgs))
		p.fastSeen = seen
	}
	clear(seen)
	for i := range msgs {
		if m := &msgs[i]; m.Err == nil {
			seen[m.Result.UID]++
		}
	}
	f := fastBatch{at: slices.Grow(p.fastBuf.at[:0], len(msgs))[:len(msgs)], succ: p.fastBuf.succ[:0]}
	defer func() { p.fastBuf = f }()
	for i := range msgs {
		m := &msgs[i]
		f.at[i] = -1
		if m.Err != nil || m.Result.Type != redisio.ResultSuccess || m.Result.AttemptUID == "" || seen[m.Result.UID] != 1 {
			continue
		}
		if _, own := p.schedules.own.rule(m.Result.UID); own {
			continue // read with a rule of its own: SaveSuccesses would not match it
		}
		sched, err := p.schedules.lookup(m.Result.UID, "")
		if err != nil {
			continue
		}
		w, err := policy.Succeeded(policyResult(m.Result), now, sched)
		if err != nil {
			continue
		}
		f.at[i] = len(f.succ)
		f.succ = append(f.succ, models.Success{Key: m.Result.UID, AttemptUID: m.Result.AttemptUID, State: w})
	}
	if len(f.succ) == 0 {
		return fastBatch{}
	}
	return f
}

// fastMissed notes a models.ErrUnmatched: the next batches (1, then twice
// as many after each miss in a row, up to maxFastPenalty) are read and
// decided without trying SaveSuccesses first, so that a kind whose
// batches often hold rows it does not match (rules of their own, stale or
// late results) on a store that cannot tell which does not pay for a
// rolled-back write every batch.
func (p *poller) fastMissed() {
	p.fastPenalty = min(max(2*p.fastPenalty, 1), maxFastPenalty)
	p.fastSkip = p.fastPenalty
}

// applyTx is one transaction of applyBatch. With prepared, it rolls back
// with errUnprepared, returning the rows to prepare, as soon as it has
// locked rows whose rules are not parsed yet.
func (p *poller) applyTx(ctx context.Context, msgs []redisio.Message, now time.Time, prepared bool, fast fastBatch, decided *decision) (dead []redisio.Message, earliest time.Time, pending []keyRule, err error) {
	var holds map[string]time.Time // allocated for the first hold only
	var leases []redisio.LeaseAnswer
	err = p.store.Tx(ctx, func(tx models.Tx) error {
		dead, earliest = dead[:0], time.Time{}
		p.tally.reset()
		p.entries.reset()
		var written []bool
		if len(fast.succ) > 0 {
			var err error
			if written, err = tx.SaveSuccesses(ctx, p.kind.Table, now, fast.succ); err != nil {
				return err
			}
		}
		wrote := func(i int) bool { return written != nil && fast.at[i] >= 0 && written[fast.at[i]] }
		keys := make([]string, 0, len(msgs))
		for i := range msgs {
			if m := &msgs[i]; m.Err == nil && !wrote(i) {
				keys = append(keys, m.Result.UID)
			}
		}
		rows := map[string]models.Row{}
		if len(keys) > 0 {
			var err error
			if rows, err = tx.LockByKeys(ctx, p.kind.Table, keys); err != nil {
				return err
			}
		}
		if prepared {
			if pending = p.schedules.unprepared(slices.Collect(maps.Values(rows)), now, nil); len(pending) > 0 {
				return errUnprepared
			}
		}
		pol := p.kind.Policy // not used: every result was written or is dead
		if len(keys) > 0 {
			decided.wait() // see decideIncident
			pol = p.incident.policy(p.kind.Policy)
		}
		holds, leases = nil, leases[:0]
		changed := make(map[string]struct{}, len(rows))
		fastApplied := 0 // results written by SaveSuccesses, all successes
		// By pointer: a message is about 200 bytes, and copying each twice
		// per batch showed in the profile. msgs stays as given: a message
		// that turns out dead goes to dead as a copy with its error.
		for i := range msgs {
			m := &msgs[i]
			if m.Err != nil {
				dead = append(dead, *m)
				continue
			}
			if wrote(i) {
				// What Apply decides for a current, on-time success,
				// counted after the loop.
				fastApplied++
				p.note(m.Result, string(policy.OutcomeApplied))
				at := fast.succ[fast.at[i]].State.RefreshAt
				if !at.IsZero() && (earliest.IsZero() || at.Before(earliest)) {
					earliest = at
				}
				if p.entries != nil {
					p.entries.succeeded(m.Result.UID, m.Result.AttemptUID, attemptTime(m.Result.AttemptUID), at, now)
				}
				continue
			}
			row, ok := rows[m.Result.UID]
			if !ok {
				d := *m
				d.Err = fmt.Errorf("unknown model: no row in table %s with %s = %q", p.kind.Table.Name, p.kind.Table.Key, m.Result.UID)
				p.tally.result(m.Result.Type, "unknown_model")
				dead = append(dead, d)
				continue
			}
			sched, serr := p.schedules.get(row.Key, row.Rule)
			pr := policyResult(m.Result)
			st, dec := pol.Apply(row.State, pr, now, sched, serr, p.rand())
			p.tally.apply(m.Result.UID, m.Result.Type, dec)
			p.note(m.Result, string(dec.Outcome))
			p.entries.apply(m.Result.UID, pr, row.State, st, dec, pol, now)
			if pr.Extend > 0 {
				leases = append(leases, leaseAnswer(pr, st, dec))
			}
			if dec.Outcome == policy.OutcomeStale {
				continue
			}
			if g := m.Result.ThrottleKey; g != "" && dec.Outcome == policy.OutcomeApplied {
				if until, ok := pol.GroupHold(pr, now); ok && until.After(holds[g]) {
					if holds == nil {
						holds = map[string]time.Time{}
					}
					holds[g] = until
				}
			}
			row.State = st
			rows[m.Result.UID] = row
			changed[m.Result.UID] = struct{}{}
			if at := row.State.RefreshAt; !at.IsZero() && (earliest.IsZero() || at.Before(earliest)) {
				earliest = at
			}
		}
		p.tally.applied(redisio.ResultSuccess, fastApplied)
		if len(changed) > 0 {
			save := make([]models.Row, 0, len(changed))
			for key := range changed {
				save = append(save, rows[key])
			}
			if err := tx.Save(ctx, p.kind.Table, save); err != nil {
				return err
			}
		}
		p.entries.holds(holds, now)
		if err := p.entries.write(ctx, tx); err != nil {
			return err
		}
		if p.faults.beforeCommit != nil {
			if err := p.faults.beforeCommit(p.kind.Name); err != nil {
				return fmt.Errorf("%w: %v", errCrashed, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, time.Time{}, pending, err
	}
	p.tally.flush(p.metrics, p.activity, p.kind.Name) // committed: counted once
	c := p.tally.stats()
	p.counted.Applied += c.Applied
	p.counted.Failed += c.Failed
	if p.holds == nil {
		p.holds = map[string]time.Time{}
	}
	for g, until := range holds {
		if until.After(p.holds[g]) {
			p.holds[g] = until
		}
	}
	p.leases = append(p.leases, leases...)
	return dead, earliest, nil, nil
}

// applyEach applies msgs one transaction each, after the database refused
// a value of their batch. A message whose own transaction is refused for a
// value (models.ValueRefused) goes to the dead letters with the database's
// error, even when every message of the batch is like that. Any other error
// (an outage, a missing table or privilege, a read-only server) stops at
// once: the batch waits in Redis to be tried again.
func (p *poller) applyEach(ctx context.Context, msgs []redisio.Message, decided *decision) (dead []redisio.Message, earliest time.Time, err error) {
	for _, m := range msgs {
		d, e, err := p.applyBatch(ctx, []redisio.Message{m}, decided)
		if err != nil {
			if p.class(err) != models.ValueRefused {
				return nil, time.Time{}, err
			}
			m.Err = fmt.Errorf("cannot apply this result: the database refused it: %w", err)
			dead = append(dead, m)
			continue
		}
		dead = append(dead, d...)
		if !e.IsZero() && (earliest.IsZero() || e.Before(earliest)) {
			earliest = e
		}
	}
	return dead, earliest, nil
}

// class classifies an error of the store; a stop by a test hook is
// transient.
func (p *poller) class(err error) models.ErrorClass {
	if errors.Is(err, errCrashed) {
		return models.Transient
	}
	return p.store.Classify(err)
}

// policyResult converts a decoded result to the policy's. The codec bounds
// retry_after_seconds so that the duration cannot overflow; the policy caps
// it (Policy.MaxRetryAfter). The texts a worker wrote are stored in the row
// and shown by the API and the dashboard, so every URL in them is redacted
// (redact.Text) here, whatever the worker did: a third-party worker that
// quotes input_url whole does not leak its password or token.
func policyResult(r redisio.Result) policy.Result {
	return policy.Result{
		AttemptUID:         r.AttemptUID,
		Type:               policy.ResultType(r.Type),
		Reason:             redact.Text(r.Reason),
		UserFriendlyReason: redact.Text(r.UserFriendlyReason),
		Permanent:          r.Permanent,
		RetryAfter:         time.Duration(r.RetryAfterSeconds) * time.Second,
		Status:             redact.Text(r.Status),
		Scope:              policy.Scope(r.Scope),
		Extend:             time.Duration(r.Seconds) * time.Second,
	}
}

// leaseAnswer is the answer to r, a request for more time, that Apply
// decided with st and d: the attempt's timeout_at while it still runs, or
// that it is over (stale, late, or its row disabled).
func leaseAnswer(r policy.Result, st policy.State, d policy.ApplyDecision) redisio.LeaseAnswer {
	a := redisio.LeaseAnswer{AttemptUID: r.AttemptUID}
	if d.Outcome == policy.OutcomeApplied && st.Running() && st.AttemptUID == r.AttemptUID {
		a.Running, a.TimeoutAt, a.Capped = true, st.TimeoutAt, string(d.Lease.Cap)
	}
	return a
}

// writeLeases tells the workers what became of the requests for more time
// of the committed batch (redisio.Client.WriteLeases). A failed write
// loses only the answers: the leases are in the database.
func (p *poller) writeLeases(ctx context.Context, now time.Time) {
	if err := p.rdb.WriteLeases(ctx, p.kind.Lists, p.leases, now); err != nil {
		p.metrics.Errors.WithLabelValues(p.kind.Name, "poll").Inc()
		p.log.Error("cannot answer requests for more time; their leases are granted all the same", "err", err)
	}
}
