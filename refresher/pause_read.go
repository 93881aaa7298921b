package refresher

import (
	"context"
	"errors"

	"github.com/refresher/refresher/redisio"
)

// A dispatcher's pass reads the operator's pauses of its kind and the
// throttle holds once (redisio.Client.ReadDispatchState, one round trip).
// While a kind has a backlog the passes follow one another at once and the
// claim is the cycle's critical path; with the push behind (push_behind.go)
// that read was the only wait left between two claims (docs/performance.md,
// "Where the full cycle waits"). So when the last read found the kind not
// paused, the pass reads beside its claim: the read runs in a goroutine of
// its own while the pass checks the input list and claims, and the pass
// waits for it after ClaimDue returned and before it decides a row
// (dispatcher.pass). If the read finds the kind paused, the claim's
// transaction rolls back (errKindPaused): nothing is saved nor pushed, and
// the pass ends as a paused pass does. A read that fails rolls the claim
// back too and fails the pass. The paused models and the holds it read
// apply to the batch as before (dispatcher.decide).
//
// When the last read found the kind paused, failed, or there was none yet,
// the pass reads first and claims only if the kind is not paused, as
// before: a paused kind does not claim (and lock) its rows every max_sleep.
//
// A kind paused while a pass claims is seen by that pass or by the next
// one, depending on when the read runs: the same race as when the read came
// first and the pause was set just after it. Admin.PauseKind does not wait
// for the passes in flight either way.

// errKindPaused rolls back the claim of a pass whose read of the pauses,
// beside the claim, found the kind paused.
var errKindPaused = errors.New("kind paused by the operator")

// pauseRead is the read of the pauses of one pass.
type pauseRead struct {
	beside bool          // the read runs beside the claim, in a goroutine
	done   chan struct{} // closed when the read returned
	st     redisio.DispatchState
	err    error
	// panicked is what the read beside the claim panicked with: join
	// panics with it in the dispatcher's goroutine.
	panicked any
	applied  bool // waitPauses applied st to the dispatcher
}

// readPauses starts the read of the pauses of the pass in hand: beside the
// claim when the last read found the kind not paused, else at once. The
// pass waits for it with waitPauses, and for a read beside the claim with
// join before it returns.
func (d *dispatcher) readPauses(ctx context.Context) *pauseRead {
	r := &pauseRead{beside: d.pausesKnown && !d.paused.kind, done: make(chan struct{})}
	now := d.clock.Now()
	read := func() {
		if f := d.faults.beforeReadPauses; f != nil {
			if r.err = f(d.kind.Name); r.err != nil {
				return
			}
		}
		r.st, r.err = d.rdb.ReadDispatchState(ctx, d.kind.Lists, d.throttle.groups(), now)
	}
	if !r.beside {
		read()
		close(r.done)
		return r
	}
	go func() {
		defer close(r.done)
		defer func() { r.panicked = recover() }()
		read()
	}()
	return r
}

// join waits for the read to return, and panics with what a read beside
// the claim panicked with, once. A pass does not return before its read
// did.
func (r *pauseRead) join() {
	<-r.done
	if p := r.panicked; p != nil {
		r.panicked = nil
		panic(p)
	}
}

// waitPauses waits for r and reports whether the kind is paused. The first
// call applies what r read to the dispatcher (see applyPauses); the next
// ones return the same answer at once, so a pass that claims again (after
// errUnprepared) reads the pauses once.
func (d *dispatcher) waitPauses(r *pauseRead) (kindPaused bool, err error) {
	r.join()
	if r.err != nil {
		d.pausesKnown = false // the next pass reads before it claims
		return false, r.err
	}
	if !r.applied {
		r.applied = true
		d.applyPauses(r.st)
	}
	return d.paused.kind, nil
}

// applyPauses keeps what a read found: whether the kind is paused and which
// of its models are, and the throttle holds of its groups into d.holds
// (when the kind names a group column; see throttle). A paused kind is
// logged when the pause starts and ends, not on every pass.
func (d *dispatcher) applyPauses(st redisio.DispatchState) {
	d.pausesKnown = true
	d.holds = st.Holds
	if d.throttle.groups() {
		d.metrics.ThrottledGroups.WithLabelValues(d.kind.Name).Set(float64(len(d.holds)))
	}
	paused := st.KindPause != nil
	if paused != d.paused.kind {
		if paused {
			d.log.Warn("kind paused by the operator, not dispatching", "by", st.KindPause.By, "note", st.KindPause.Note)
		} else {
			d.log.Info("kind resumed by the operator")
		}
	}
	d.paused.kind = paused
	clear(d.paused.models)
	if len(st.PausedModels) > 0 && d.paused.models == nil {
		d.paused.models = make(map[string]struct{}, len(st.PausedModels))
	}
	for _, k := range st.PausedModels {
		d.paused.models[k] = struct{}{}
	}
}
