package refresher

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/refresher/refresher/internal/tracing"
	"github.com/refresher/refresher/redisio"
)

// A dispatcher's pass is a claim transaction, then the push of its jobs to
// Redis. While a kind has a backlog, the passes follow one another at once
// and the claim is the cycle's critical path: a push in the same goroutine
// (encoding a batch's jobs and one round trip, a few percent of a pass)
// left the database idle for the next claim meanwhile. So after a full
// batch, the push runs behind: in a goroutine of its own, while the next
// pass reads the pauses and claims the next batch. At most one push is in
// flight, and the next pass waits for it before it pushes its own jobs, so
// the jobs reach the input list in the order of their claims, as before. A
// short batch, the urgent dispatcher's and a pass after a failed push
// push in the dispatcher's goroutine, and every pass waits for the push
// behind before it returns unless it started one itself: a dispatcher that
// sleeps or stops has nothing in flight (see dispatcher.loop).
//
// The attempts of a push that fails are undone (dispatcher.undo) in the
// push's goroutine, as they were after a failed push in the dispatcher's
// (their rows are not the next claim's: they are planned at their
// timeout); the pass that waits for it returns its error.

// pushBatch is what the push of one pass needs: the jobs of the attempts
// it started, their input lists (Kind.inputList), the rows to undo if the
// push fails, and the jobs' dispatch spans (with a Tracer).
type pushBatch struct {
	jobs   []redisio.Job
	lists  []string
	starts []started
	spans  []tracing.Span
}

// pushInFlight is a push running behind the next pass.
type pushInFlight struct {
	done   chan struct{} // closed when the push returned
	batch  pushBatch
	queued int64 // the input list's length after the push
	err    error
	// panicked is what the push panicked with: joinPush panics with it
	// in the dispatcher's goroutine, where Run makes it fatal as before.
	panicked any
}

// takeBatch moves the batch in hand out of d, giving d the buffers of the
// last batch pushed (spare), emptied, for its next claim.
func (d *dispatcher) takeBatch() pushBatch {
	b := pushBatch{jobs: d.jobs, lists: d.lists, starts: d.starts, spans: d.spans}
	s := d.spare
	clear(s.jobs[:cap(s.jobs)])
	clear(s.starts[:cap(s.starts)])
	d.jobs, d.lists, d.starts, d.spans = s.jobs[:0], s.lists[:0], s.starts[:0], s.spans[:0]
	d.spare = pushBatch{}
	return b
}

// pushJobs pushes b's jobs, counted for the charts and in the Started
// metric, and undoes their attempts when the push fails. It returns the input list's length after
// the push. It touches nothing of d but what is safe to share with the
// dispatcher's goroutine (see pushBehind).
func (d *dispatcher) pushJobs(ctx context.Context, b *pushBatch, start time.Time) (int64, error) {
	if d.faults.beforePush != nil {
		d.faults.beforePush(d.kind.Name)
	}
	d.traceJobs(start, b)
	// Counted for the charts in the push's round trip.
	queued, err := d.rdb.PushCounting(ctx, d.kind.Lists, b.lists, b.jobs, d.clock.Now())
	d.endJobSpans(b, err)
	if err != nil {
		d.metrics.PushFailures.WithLabelValues(d.kind.Name).Inc()
		// The undo gets its own time: the failed push may have used up the
		// batch's.
		uctx, ucancel := d.batchContext(ctx)
		undone, uerr := d.undo(uctx, b.starts)
		ucancel()
		return 0, errors.Join(fmt.Errorf("%w (undid %d attempts)", err, undone), uerr)
	}
	// Counted as soon as the jobs are in the list, not when the next pass
	// joins the push: a worker may answer them before that.
	d.metrics.Started.WithLabelValues(d.kind.Name).Add(float64(len(b.jobs)))
	d.activity.addStarted(len(b.jobs))
	return queued, nil
}

// pushed takes the input list's length after b's push, in the
// dispatcher's goroutine, and keeps b's buffers for a later claim. It returns how many
// jobs were pushed.
func (d *dispatcher) pushed(b pushBatch, queued int64, err error) (int, error) {
	d.spare = b
	if err != nil {
		return 0, err
	}
	if queued > 0 { // 0: no job went to the input list
		d.setQueued(queued)
	}
	return len(b.jobs), nil
}

// pushBehind starts the push of b in a goroutine of its own (see the top
// of this file); joinPush waits for it.
func (d *dispatcher) pushBehind(ctx context.Context, b pushBatch, start time.Time) {
	f := &pushInFlight{done: make(chan struct{}), batch: b}
	d.inFlight = f
	go func() {
		defer close(f.done)
		defer func() { f.panicked = recover() }()
		// Not cut short by shutdown: the attempts are committed.
		bctx, cancel := d.batchContext(ctx)
		defer cancel()
		f.queued, f.err = d.pushJobs(bctx, &f.batch, start)
	}()
}

// joinPush waits for the push behind, if one is in flight, and adds what
// it did to the pass in hand's (d.joined, d.joinErr).
func (d *dispatcher) joinPush() {
	f := d.inFlight
	if f == nil {
		return
	}
	<-f.done
	d.inFlight = nil
	if f.panicked != nil {
		panic(f.panicked)
	}
	n, err := d.pushed(f.batch, f.queued, f.err)
	d.joined, d.joinErr = d.joined+n, errors.Join(d.joinErr, err)
}

// joinPushAfterClaim is joinPush for a pass that has committed attempts
// of its own: when the push behind panicked, those attempts are undone
// first, so that the panic leaves only the last batch's attempts running
// with no job (as a panic in a push of the dispatcher's own goroutine
// does), not this one's too.
func (d *dispatcher) joinPushAfterClaim(ctx context.Context) {
	if f := d.inFlight; f != nil && len(d.starts) > 0 {
		<-f.done
		if f.panicked != nil {
			uctx, cancel := d.batchContext(context.WithoutCancel(ctx))
			if _, err := d.undo(uctx, d.starts); err != nil {
				d.log.Error("cannot undo the attempts of a pass whose push behind panicked", "err", err)
			}
			cancel()
		}
	}
	d.joinPush()
}

// takeJoined returns what the pushes joined since the last call did, and
// forgets it.
func (d *dispatcher) takeJoined() (int, error) {
	n, err := d.joined, d.joinErr
	d.joined, d.joinErr = 0, nil
	return n, err
}

// settlePush waits for the push behind, if any, and returns what the
// pushes joined since the last takeJoined did: for a dispatcher that stops,
// and for tests and benchmarks that run passes one by one.
func (d *dispatcher) settlePush() (int, error) {
	d.joinPush()
	return d.takeJoined()
}
