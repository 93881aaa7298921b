package refresher

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
	"github.com/refresher/refresher/schedule"
)

// The operator's pause (docs/operating.md, "Pause"), distinct from the
// user's disable. It lives in Redis, beside the kind's lists, so every
// instance sees it and it survives restarts:
//
//   - a kind's pause is one key, "<input list>:paused", holding a PauseInfo
//     as JSON; while it exists no instance claims the kind's rows;
//   - paused models are the hash "<input list>:paused-models": key ->
//     PauseInfo as JSON. Pausing also clears the row's refresh_at
//     (policy.Pause), so the dispatcher does not claim it; a row it claims
//     anyway (a running attempt's result planned it again, or the
//     application set refresh_at) is paused again instead of started.
//
// Results still apply either way: the poller is not paused. Resuming a
// model plans its next occurrence (policy.Resume); resuming a kind lets the
// dispatcher claim what became due meanwhile, each row once, as after the
// service was down.
//
// The keys are redisio's (Lists.KindPause, Lists.PausedModels); the
// actions are Admin's.

// PauseInfo is who paused a kind or a model, when, and why (stored by
// redisio, which owns the pause keys).
type PauseInfo = redisio.PauseInfo

// Pause pauses models: they are recorded as paused (so that every instance's
// dispatcher leaves them alone) and their refresh_at is cleared
// (policy.Pause). A running attempt's result still applies. Pausing a paused
// model replaces its note. Keys without a row are reported as not found and
// not recorded.
func (a *Admin) Pause(ctx context.Context, t models.Table, l redisio.Lists, keys []string, info PauseInfo) ([]Change, error) {
	// Recorded first: from then on a dispatcher that claims the row pauses
	// it again rather than starting it.
	if err := a.rdb.PauseModels(ctx, l, keys, info); err != nil {
		return nil, err
	}
	now := info.At
	if now.IsZero() && a.now != nil {
		now = a.now()
	}
	changes, err := a.changeRows(ctx, t, keys, func(row models.Row) (policy.State, string) {
		st := row.State
		note := "paused; nothing is planned until it is resumed"
		switch {
		case st.Running():
			note = fmt.Sprintf("paused; attempt %s still runs and its result will apply", st.AttemptUID)
		case st.Disabled():
			note = "paused; it is also disabled"
		}
		return policy.Pause(st), note
	}, nil, func(tx models.Tx, changes []Change) error {
		return appendRows(ctx, tx, a.rowEntries(changes, now, func(Change) (policy.Entry, bool) {
			return policy.Entry{Event: policy.EventPaused, Note: info.Note}, true
		}))
	})
	var missing []string
	for _, c := range changes {
		if !c.Found {
			missing = append(missing, c.Key)
		}
	}
	if err != nil {
		missing = keys
	}
	if derr := a.rdb.ForgetPaused(context.WithoutCancel(ctx), l, missing); derr != nil {
		err = errors.Join(err, fmt.Errorf("pause: forget the keys not paused: %w", derr))
	}
	return changes, err
}

// Resume ends the pause of models and plans their next step
// (policy.Resume): the next occurrence of the row's schedule after now, or
// a running attempt's timeout; missed runs are not fired. schedFor returns
// the schedule of the row with the given key from its refresh_rrule ("" for
// the kind's), spread as the service spreads it, nil when it has none that
// parses (see ResumeSchedules). A model that was not paused is planned the
// same way.
func (a *Admin) Resume(ctx context.Context, t models.Table, l redisio.Lists, keys []string, now time.Time,
	schedFor func(key, rule string) policy.Nexter) ([]Change, error) {
	// Forgotten first, so that a dispatcher that claims the row once it is
	// planned starts it rather than pausing it again; put back on failure.
	before, err := a.rdb.Unpause(ctx, l, keys)
	if err != nil {
		return nil, err
	}
	changes, err := a.changeRows(ctx, t, keys, func(row models.Row) (policy.State, string) {
		st := policy.Resume(row.State, now, schedFor(row.Key, row.Rule))
		_, was := before[row.Key]
		return st, resumeNote(st, was)
	}, nil, func(tx models.Tx, changes []Change) error {
		return appendRows(ctx, tx, a.rowEntries(changes, now, func(c Change) (policy.Entry, bool) {
			return policy.Entry{Event: policy.EventResumed, Note: c.Note}, true
		}))
	})
	if err != nil {
		if rerr := a.rdb.RestorePauses(context.WithoutCancel(ctx), l, before); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return nil, err
	}
	return changes, nil
}

// ResumeSchedules returns Resume's schedFor for the kind named kind whose
// default rule is kindDefault (nil: none) and whose spread is spread: a
// row's own refresh_rrule when it has one, else the kind's, moved by the
// row's spread offset (policy.Spread.Offset) as the dispatcher and the
// poller move it, so that a resumed row is planned at its own spread
// occurrence; nil when the rule is missing or does not parse (Resume then
// makes the row due now, and the dispatcher disables it with the usual
// reason, as any row without a valid rule). It hands out the schedules as
// the loops do (schedules.get), so the function is for one goroutine. The
// API and the CLI both resume with it.
func ResumeSchedules(kind string, kindDefault *schedule.Schedule, spread policy.Spread) func(key, rule string) policy.Nexter {
	s := schedules{kind: kind, spread: spread, kindDefault: kindDefault}
	return func(key, rule string) policy.Nexter {
		if rule == "" && kindDefault == nil {
			return nil
		}
		sched, err := s.get(key, rule)
		if err != nil {
			return nil
		}
		return sched
	}
}

// resumeNote says in words what Resume planned.
func resumeNote(after policy.State, wasPaused bool) string {
	note := "resumed"
	if !wasPaused {
		note = "was not paused"
	}
	switch {
	case after.Disabled():
		return note + "; it is disabled, so nothing is planned until it is enabled"
	case after.Running():
		return note + fmt.Sprintf("; attempt %s still runs and times out at %s", after.AttemptUID, after.TimeoutAt.UTC().Format(time.RFC3339))
	case after.RefreshAt.IsZero():
		return note + "; its schedule has no more occurrences, so nothing is planned"
	}
	return note + "; next refresh at " + after.RefreshAt.UTC().Format(time.RFC3339)
}

// pauses is what a dispatcher pass knows of the operator's pauses of its
// kind, read once per pass (see readPauses).
type pauses struct {
	kind   bool
	models map[string]struct{}
}

// keepPaused pauses again a claimed row whose model the operator paused
// (policy.Pause) and reports whether it did: the dispatcher then neither
// starts it nor times its attempt out.
func (d *dispatcher) keepPaused(row *models.Row) bool {
	if _, ok := d.paused.models[row.Key]; !ok {
		return false
	}
	row.State = policy.Pause(row.State)
	return true
}
