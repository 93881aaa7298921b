package main

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/refresher"
)

// benchKindPriority is the kind's level in --priority's lane variant; its
// lane is level 0, the level of the triggers.
const benchKindPriority = 10

// priorityLanes are the service child's lanes: level 0 with --child-lanes.
func priorityLanes(on bool) []int {
	if on {
		return []int{0}
	}
	return nil
}

// triggerer triggers rows "refresh now" at priority 0 during a run, one
// every triggerEvery, through the service's own Admin.TriggerAt (as the
// API and the CLI do). It picks the rows due last in the plan, which are
// still waiting in the backlog, and starts once a twentieth of the run is
// dispatched, so that the input list is full of jobs queued before them.
type triggerer struct {
	e       *env
	n       int
	p       *plan
	w       *workerPool
	once    sync.Once
	done    chan error
	cancel  context.CancelFunc
	started bool
}

const triggerEvery = 20 * time.Millisecond

// newTriggerer returns a triggerer of n rows; n 0 does nothing.
func (e *env) newTriggerer(n int, p *plan, w *workerPool) *triggerer {
	return &triggerer{e: e, n: n, p: p, w: w, done: make(chan error, 1), cancel: func() {}}
}

// startAt starts the triggers once dispatched reaches a twentieth of the
// run, and stops them at four fifths, so that every row triggered is still
// in the backlog and is dispatched before the run ends.
func (t *triggerer) startAt(ctx context.Context, dispatched int64) {
	if t.n == 0 || dispatched < t.p.active/20 {
		return
	}
	if dispatched >= t.p.active*4/5 {
		t.cancel()
		return
	}
	t.once.Do(func() {
		t.started = true
		ctx, t.cancel = context.WithCancel(ctx)
		go func() { t.done <- t.run(ctx) }()
	})
}

func (t *triggerer) run(ctx context.Context) error {
	store, err := t.e.st.openService(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	level := 0
	trigger := refresher.NewAdmin(store, nil).TriggerAt(&level)
	table := models.Table{Name: benchTable, Key: "id", Payload: []string{"input_url"}}
	picked := 0
	tick := time.NewTicker(triggerEvery)
	defer tick.Stop()
	for id := t.p.rows; id >= 1 && picked < t.n; id-- {
		if _, ok := t.p.refreshAt(id); !ok {
			continue
		}
		uid := strconv.FormatInt(id, 10)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		// Watched from before the trigger: its job may be popped before
		// the call returns. The wait measured includes the trigger's own
		// transaction.
		t.w.watched.Store(uid, time.Now())
		changes, err := trigger(context.WithoutCancel(ctx), table, []string{uid}, time.Now().UTC())
		if err != nil {
			return fmt.Errorf("trigger row %s: %w", uid, err)
		}
		if c := changes[0]; !c.Found || c.Before.Running() {
			t.w.watched.Delete(uid) // already started: not a row waiting in the backlog
			t.w.received.Delete(uid)
			continue
		}
		picked++
	}
	return nil
}

// stop ends the triggers of a run that failed.
func (t *triggerer) stop() { t.cancel() }

// result waits for the triggers and returns the time each triggered row
// waited for a worker; a triggered row no worker received is an error.
func (t *triggerer) result() ([]time.Duration, error) {
	if !t.started {
		if t.n > 0 {
			return nil, fmt.Errorf("the run ended before the triggers started")
		}
		return nil, nil
	}
	if err := <-t.done; err != nil {
		return nil, err
	}
	var out []time.Duration
	t.w.received.Range(func(_, v any) bool { out = append(out, v.(time.Duration)); return true })
	missed := 0
	t.w.watched.Range(func(_, _ any) bool { missed++; return true })
	if missed > 0 {
		return nil, fmt.Errorf("%d triggered rows never reached a worker", missed)
	}
	return out, nil
}
