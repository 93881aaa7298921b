package refresher

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/refresher/refresher/models"
)

// dueWatch looks for due rows on behalf of the dispatchers of idle kinds,
// so that an idle kind costs no query, timer or goroutine wake-up of its
// own.
//
// A dispatcher whose pass found nothing due before the next MaxSleep parks
// (see dispatcher.loop): it waits on its wake channel only. Every MaxSleep
// while any kind is parked, the watch asks each database for the earliest
// refresh_at of its parked kinds' tables in one Store.NextDueMany (one
// statement per 100 tables), and wakes the dispatchers whose earliest row
// is due before the watch's next look; each then runs a pass of its own and
// sleeps until that row exactly, as before it parked. A parked dispatcher
// is also woken by its poller (a result planned a row within MaxSleep) and
// by shutdown. So a row that the application sets due with its own SQL is
// still found within MaxSleep (plus the query's time), as
// docs/configuration.md says of max_sleep; 200 idle kinds cost one query per MaxSleep instead of 200.
//
// When a database's query fails, the watch wakes every parked dispatcher
// of its kinds: each then asks for its own table, meets the error itself
// (a table dropped, the database down) and reports and backs off as it
// does for any error, and the others park again.
//
// Each look counts as a pass of the kinds that stay parked:
// Observer.AfterDispatch fires for each with 0 attempts started, so tests
// that wait for passes see the idle kind's looks.
type dueWatch struct {
	clock    Clock
	interval time.Duration // MaxSleep
	timeout  time.Duration // OpTimeout, for one look
	log      *slog.Logger
	observer Observer

	mu     sync.Mutex
	parked map[*dispatcher]struct{}
	kick   chan struct{} // a dispatcher parked while none was (cap 1)
}

func newDueWatch(cfg Config) *dueWatch {
	return &dueWatch{clock: cfg.Clock, interval: cfg.MaxSleep, timeout: cfg.OpTimeout,
		log: cfg.Logger, observer: cfg.Observer, parked: map[*dispatcher]struct{}{}, kick: make(chan struct{}, 1)}
}

// park hands d's looks to the watch until the watch wakes d (through
// d.wake) or d calls unpark.
func (w *dueWatch) park(d *dispatcher) {
	w.mu.Lock()
	w.parked[d] = struct{}{}
	first := len(w.parked) == 1
	w.mu.Unlock()
	if first {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
}

// unpark takes d back, after it was woken by anything.
func (w *dueWatch) unpark(d *dispatcher) {
	w.mu.Lock()
	delete(w.parked, d)
	w.mu.Unlock()
}

// loop looks every interval (from the start of one look to the next, at
// least minSleep apart) while any dispatcher is parked, and waits without a
// timer while none is, until ctx is cancelled. A dispatcher that parks has
// just looked itself, so the first look after a quiet spell comes one
// interval after the kick.
func (w *dueWatch) loop(ctx context.Context) {
	wait := w.interval
	for {
		w.mu.Lock()
		idle := len(w.parked) == 0
		w.mu.Unlock()
		if idle {
			if !sleepOrWake(ctx, forever, w.kick) {
				return
			}
			wait = w.interval
		}
		if !sleep(ctx, wait) {
			return
		}
		start := time.Now() // pacing only
		w.look(ctx)
		wait = max(w.interval-time.Since(start), minSleep)
	}
}

// look asks for the parked kinds' earliest refresh_at, one Store.NextDueMany
// per database (kinds on several databases: their stores are asked one
// after the other), and wakes those due before the next look, or every one
// of a database whose query fails.
func (w *dueWatch) look(ctx context.Context) {
	w.mu.Lock()
	groups := map[models.Store][]*dispatcher{}
	for d := range w.parked {
		groups[d.kind.Store] = append(groups[d.kind.Store], d)
	}
	w.mu.Unlock()
	for store, ds := range groups {
		if ctx.Err() != nil {
			return
		}
		w.lookAt(ctx, store, ds)
	}
}

// lookAt is look for the parked dispatchers ds of the kinds on store.
func (w *dueWatch) lookAt(ctx context.Context, store models.Store, ds []*dispatcher) {
	tables := make([]models.Table, len(ds))
	for i, d := range ds {
		tables[i] = d.kind.Table
	}
	qctx, cancel := context.WithTimeout(ctx, w.timeout)
	next, err := store.NextDueMany(qctx, tables)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return // shutting down: the dispatchers stop by themselves
		}
		w.log.Warn("cannot look for due rows of the idle kinds; each looks itself", "kinds", len(ds), "err", err)
	}
	horizon := w.clock.Now().Add(w.interval)
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, d := range ds {
		if _, ok := w.parked[d]; !ok {
			continue // woken meanwhile
		}
		if err == nil && (!next[i].OK || !next[i].At.Before(horizon)) {
			// Called with the lock held, so that it never overlaps the
			// kind's own pass: a woken dispatcher unparks (takes the lock)
			// before it runs one.
			if w.observer.AfterDispatch != nil {
				w.observer.AfterDispatch(d.kind.Name, 0)
			}
			continue
		}
		delete(w.parked, d)
		select {
		case d.wake <- struct{}{}:
		default:
		}
	}
}
