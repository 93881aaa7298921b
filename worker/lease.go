package worker

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/refresher/refresher/redisio"
)

// leaseShare: a job whose work runs asks for more time every lease/3, so
// that two requests may be lost or late before its attempt times out.
const leaseShare = 3

// minLeaseEvery bounds how often a job asks for more time.
const minLeaseEvery = 100 * time.Millisecond

// keepLease keeps job's attempt alive while its work runs
// (docs/protocol.md, "Leases"): every lease/3 it pushes an extend result
// asking for lease again, where lease is Config.Lease, or else the time
// the job had left when its work began. Before each request but the first
// it reads the service's answer to the last one (redisio.ReadLease): when
// the attempt is over (it timed out meanwhile, or the row was enabled
// again, so any result would be stale), it calls cancel, which stops the
// work. stop ends the requests, waits for the last one, and reports
// whether the attempt was over, and until, the attempt's timeout_at as the
// service last answered (it reads the answer once more when a request was
// sent since the last read): the time the result may still be pushed
// until, later than job.TimeoutAt when an extension was granted; the zero
// time when no answer said so. Without Redis, with a negative
// Config.Lease, or with neither Config.Lease nor a timeout_at, it does
// nothing.
func (w *Worker) keepLease(ctx context.Context, job redisio.Job, cancel context.CancelFunc) (stop func() (over bool, until time.Time)) {
	lease := w.cfg.Lease
	if lease == 0 && !job.TimeoutAt.IsZero() {
		lease = job.TimeoutAt.Sub(w.cfg.Now())
	}
	if w.cfg.Redis == nil || lease <= 0 {
		return func() (bool, time.Time) { return false, time.Time{} }
	}
	ask := redisio.Result{UID: job.UID, AttemptUID: job.AttemptUID, Type: redisio.ResultExtend,
		Seconds: min(max(int((lease+time.Second-1)/time.Second), 1), redisio.MaxExtendSeconds), TraceParent: job.TraceParent}
	data, _ := json.Marshal(ask) // strings and an int: cannot fail
	lists := redisio.Lists{Output: w.cfg.Output}
	log := w.cfg.Logger.With("kind", w.cfg.Kind, "uid", job.UID, "attempt_uid", job.AttemptUID)

	done := make(chan struct{})
	var over atomic.Bool
	var wg sync.WaitGroup
	// Written by the goroutine, read by stop after it ends: the last
	// answer's timeout_at, and whether a request was sent since the last
	// read.
	var until time.Time
	unread := false
	wg.Go(func() {
		tick := time.NewTicker(max(lease/leaseShare, minLeaseEvery)) // pacing only
		defer tick.Stop()
		asked, capped := false, ""
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if asked {
				a, ok, err := redisio.ReadLease(ctx, w.cfg.Redis, lists, job.AttemptUID)
				unread = unread && err != nil
				if ok && a.Running {
					until = a.TimeoutAt
				}
				switch {
				case err != nil:
					log.Warn("cannot read the answer to a request for more time", "err", err)
				case ok && !a.Running:
					log.Warn("attempt is over (timed out, or its row was enabled again): stop its work")
					over.Store(true)
					cancel()
					return
				case ok && a.Capped != "" && a.Capped != capped:
					capped = a.Capped
					log.Warn("more time refused beyond timeout_at", "timeout_at", a.TimeoutAt, "capped_by", a.Capped)
				}
			}
			if err := w.cfg.Redis.RPush(ctx, w.cfg.Output, data).Err(); err != nil {
				log.Warn("cannot ask for more time", "list", w.cfg.Output, "err", err)
				continue
			}
			asked, unread = true, true
		}
	})
	return func() (bool, time.Time) {
		close(done)
		wg.Wait()
		if unread && !over.Load() {
			// The answer to the last request, which the loop did not read:
			// it may have granted more time.
			if a, ok, err := redisio.ReadLease(ctx, w.cfg.Redis, lists, job.AttemptUID); err == nil && ok && a.Running {
				until = a.TimeoutAt
			}
		}
		return over.Load(), until
	}
}
