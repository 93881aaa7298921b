package refresher

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
)

// Admin is the operator's actions on models and kinds, and the reads the
// dashboard makes of what the service keeps in Redis: enable, trigger,
// pause and resume (of models and of whole kinds), paused models, throttle
// holds and the incident window. The API and the CLI both act through it,
// so a change made by one shows in the other. It is safe for concurrent
// use.
type Admin struct {
	store models.Store
	rdb   *redisio.Client
}

// NewAdmin returns the Admin of store and rdb. Either may be nil when the
// caller uses only what needs the other: store for the actions on whole
// kinds (PauseKind, ResumeKind) and the reads of Redis, which never touch
// the database; rdb for Enable and Trigger, which change only the table.
func NewAdmin(store models.Store, rdb *redisio.Client) *Admin {
	return &Admin{store: store, rdb: rdb}
}

// Change is what an operator command did to one model.
type Change struct {
	Key    string
	Found  bool
	Before policy.State
	After  policy.State
	// Note says in words what happened, e.g. "enabled, refresh due now".
	Note string
}

// Enable re-enables models as if the user had saved them (policy.Enable):
// disabled state and counters are cleared, a running attempt becomes stale,
// and the refresh is due at now.
func (a *Admin) Enable(ctx context.Context, t models.Table, keys []string, now time.Time) ([]Change, error) {
	return change(ctx, a.store, t, keys, func(st policy.State) (policy.State, string) {
		note := "enabled, refresh due now"
		if !st.Disabled() {
			note = "was not disabled; counters reset, refresh due now"
		}
		return policy.Enable(st, now), note
	})
}

// Trigger asks for a refresh now (policy.Trigger): a model whose attempt
// runs is left alone; a disabled model is enabled (the user asked for a
// refresh); any other is made due at now, keeping its failure counters.
func (a *Admin) Trigger(ctx context.Context, t models.Table, keys []string, now time.Time) ([]Change, error) {
	return a.TriggerAt(nil)(ctx, t, keys, now)
}

// TriggerAt returns Trigger at a priority: the models it makes due also get
// refresh_priority_once = *level, so that their next attempt is claimed, and
// pushed to its lane, before every row of a less urgent level; the claim
// clears it, and the row is back at its own priority after. A nil level is
// Trigger.
func (a *Admin) TriggerAt(level *int) func(ctx context.Context, t models.Table, keys []string, now time.Time) ([]Change, error) {
	return func(ctx context.Context, t models.Table, keys []string, now time.Time) ([]Change, error) {
		urgent := map[string]bool{} // by key: a retried transaction adds the same
		return changeRows(ctx, a.store, t, keys, func(row models.Row) (policy.State, string) {
			st := row.State
			after, action := policy.Trigger(st, now)
			note := "refresh due now"
			switch action {
			case policy.TriggerRunning:
				return after, fmt.Sprintf("attempt %s is running (times out at %s); left alone",
					st.AttemptUID, st.TimeoutAt.Format(time.RFC3339))
			case policy.TriggerEnabled:
				note = "was disabled; enabled, refresh due now"
			}
			if level != nil {
				urgent[row.Key] = true
				note += fmt.Sprintf(" at priority %d", *level)
			}
			return after, note
		}, func(tx models.Tx) error {
			if len(urgent) == 0 {
				return nil
			}
			return tx.SetPriorityOnce(ctx, t, slices.Sorted(maps.Keys(urgent)), level)
		})
	}
}

// change locks the rows of keys, sets each row's state to what fn returns
// for it and saves them, in one transaction. A key that names no row is a
// Change with Found unset.
func change(ctx context.Context, store models.Store, t models.Table, keys []string,
	fn func(policy.State) (policy.State, string)) ([]Change, error) {
	return changeRows(ctx, store, t, keys, func(row models.Row) (policy.State, string) { return fn(row.State) }, nil)
}

// changeRows is change for a fn that needs the whole row (its rule); then,
// when not nil, runs in the transaction after the save.
func changeRows(ctx context.Context, store models.Store, t models.Table, keys []string,
	fn func(models.Row) (policy.State, string), then func(tx models.Tx) error) ([]Change, error) {
	var changes []Change
	err := store.Tx(ctx, func(tx models.Tx) error {
		changes = changes[:0]
		rows, err := tx.LockByKeys(ctx, t, keys)
		if err != nil {
			return err
		}
		save := make([]models.Row, 0, len(rows))
		for _, key := range keys {
			row, ok := rows[key]
			if !ok {
				changes = append(changes, Change{Key: key, Note: fmt.Sprintf("no row in %s with %s = %q", t.Name, t.Key, key)})
				continue
			}
			c := Change{Key: key, Found: true, Before: row.State}
			row.State, c.Note = fn(row)
			c.After = row.State
			changes = append(changes, c)
			save = append(save, row)
		}
		if err := tx.Save(ctx, t, save); err != nil || then == nil {
			return err
		}
		return then(tx)
	})
	if err != nil {
		return nil, fmt.Errorf("update %s: %w", t.Name, err)
	}
	return changes, nil
}

// PauseKind pauses the kind of l: no instance dispatches its rows until
// ResumeKind. Pausing a paused kind replaces its note.
func (a *Admin) PauseKind(ctx context.Context, l redisio.Lists, info PauseInfo) error {
	return a.rdb.PauseKind(ctx, l, info)
}

// ResumeKind ends a kind's pause; it reports whether the kind was paused.
func (a *Admin) ResumeKind(ctx context.Context, l redisio.Lists) (bool, error) {
	return a.rdb.ResumeKind(ctx, l)
}

// KindPause returns a kind's pause, nil when it is not paused.
func (a *Admin) KindPause(ctx context.Context, l redisio.Lists) (*PauseInfo, error) {
	return a.rdb.KindPause(ctx, l)
}

// PausedModels returns a kind's paused models by key.
func (a *Admin) PausedModels(ctx context.Context, l redisio.Lists) (map[string]PauseInfo, error) {
	return a.rdb.PausedModels(ctx, l)
}

// ModelPaused reports whether the model with key is paused.
func (a *Admin) ModelPaused(ctx context.Context, l redisio.Lists, key string) (bool, error) {
	return a.rdb.ModelPaused(ctx, l, key)
}

// ListState returns a kind's list lengths and pauses, read in one round
// trip.
func (a *Admin) ListState(ctx context.Context, l redisio.Lists) (redisio.ListState, error) {
	return a.rdb.ReadListState(ctx, l)
}

// DeadLetters returns the length of a kind's dead-letter list and its
// entries from offset up to limit of them.
func (a *Admin) DeadLetters(ctx context.Context, l redisio.Lists, offset, limit int64) (int64, []string, error) {
	return a.rdb.DeadLetters(ctx, l, offset, limit)
}

// ReplayDead removes the dead letter whose text is entry and pushes msg,
// its original message, back onto the output list, in one atomic step; it
// reports false when the entry is no longer there.
func (a *Admin) ReplayDead(ctx context.Context, l redisio.Lists, entry, msg string) (bool, error) {
	return a.rdb.ReplayDead(ctx, l, entry, msg)
}

// DiscardDead removes the dead letter whose text is entry; it reports
// false when it is no longer there.
func (a *Admin) DiscardDead(ctx context.Context, l redisio.Lists, entry string) (bool, error) {
	return a.rdb.DiscardDead(ctx, l, entry)
}
