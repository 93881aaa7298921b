package refresher

import (
	"cmp"
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
	// kind, by and now are Recording's: the ledger's kind ("" records
	// nothing), who acts, and the clock of the entries of a whole kind.
	kind, by string
	now      func() time.Time
}

// NewAdmin returns the Admin of store and rdb. Either may be nil when the
// caller uses only what needs the other: store for the actions on whole
// kinds (PauseKind, ResumeKind) and the reads of Redis, which never touch
// the database; rdb for Enable and Trigger, which change only the table.
func NewAdmin(store models.Store, rdb *redisio.Client) *Admin {
	return &Admin{store: store, rdb: rdb}
}

// Recording returns a copy of a that records its actions in the ledger
// (see LedgerConfig) as entries of the kind named kind, done by by (the
// API token's name, "cli"): enable, trigger, pause and resume, each row's
// entry in the transaction that changes the row, a whole kind's in a
// statement of its own, at now() for ResumeKind (the others take their
// time from their arguments). Without it an Admin records nothing; with a
// store that keeps no ledger the entries are skipped.
func (a *Admin) Recording(kind, by string, now func() time.Time) *Admin {
	c := *a
	c.kind, c.by, c.now = kind, by, now
	return &c
}

// rowEntries returns the ledger entries of changes made at now, ev's
// event and note for each change found; nil when a records nothing.
func (a *Admin) rowEntries(changes []Change, now time.Time, ev func(c Change) (policy.Entry, bool)) []policy.Entry {
	if a.kind == "" {
		return nil
	}
	var out []policy.Entry
	for _, c := range changes {
		if !c.Found {
			continue
		}
		if e, ok := ev(c); ok {
			e.At, e.Kind, e.Key, e.By = now, a.kind, c.Key, a.by
			out = append(out, e)
		}
	}
	return out
}

// ledger returns a's store's ledger when a records and the ledger's table
// exists (a database not migrated since the upgrade has none: the action
// then records nothing rather than fail).
func (a *Admin) ledger(ctx context.Context) models.LedgerStore {
	ls, ok := a.store.(models.LedgerStore)
	if a.kind == "" || !ok || ls.LedgerReady(ctx) != nil {
		return nil
	}
	return ls
}

// recordKind writes a kind's entry e at now in a statement of its own.
func (a *Admin) recordKind(ctx context.Context, e policy.Entry, now time.Time) error {
	ls := a.ledger(ctx)
	if ls == nil {
		return nil
	}
	e.At, e.Kind, e.By, e.Whole = now, a.kind, a.by, true
	if err := ls.AppendLedger(ctx, []policy.Entry{e}); err != nil {
		return fmt.Errorf("record %s in the ledger: %w", e.Event, err)
	}
	return nil
}

// appendRows appends the entries to tx when a records and tx's store keeps
// a ledger.
func appendRows(ctx context.Context, tx models.Tx, entries []policy.Entry) error {
	lt, ok := tx.(models.LedgerTx)
	if len(entries) == 0 || !ok {
		return nil
	}
	return lt.AppendLedger(ctx, entries)
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
	return a.changeRows(ctx, t, keys, func(row models.Row) (policy.State, string) {
		note := "enabled, refresh due now"
		if !row.State.Disabled() {
			note = "was not disabled; counters reset, refresh due now"
		}
		return policy.Enable(row.State, now), note
	}, nil, func(tx models.Tx, changes []Change) error {
		return appendRows(ctx, tx, a.rowEntries(changes, now, func(c Change) (policy.Entry, bool) {
			return policy.Entry{Event: policy.EventEnabled, Note: c.Note}, true
		}))
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
		return a.changeRows(ctx, t, keys, func(row models.Row) (policy.State, string) {
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
		}, func(tx models.Tx, changes []Change) error {
			return appendRows(ctx, tx, a.rowEntries(changes, now, func(c Change) (policy.Entry, bool) {
				e := policy.Entry{Event: policy.EventTriggered, Note: c.Note}
				if urgent[c.Key] {
					e.Priority = level
				}
				return e, true
			}))
		})
	}
}

// changeRows locks the rows of keys, sets each row's state to what fn
// returns for it and saves them, in one transaction. A key that names no
// row is a Change with Found unset. then, when not nil, runs in the
// transaction after the save, and record (the ledger's entries), when not
// nil, after it.
func (a *Admin) changeRows(ctx context.Context, t models.Table, keys []string,
	fn func(models.Row) (policy.State, string), then func(tx models.Tx) error,
	record func(tx models.Tx, changes []Change) error) ([]Change, error) {
	if record != nil && a.ledger(ctx) == nil {
		record = nil
	}
	var changes []Change
	err := a.store.Tx(ctx, func(tx models.Tx) error {
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
		if err := tx.Save(ctx, t, save); err != nil {
			return err
		}
		if then != nil {
			if err := then(tx); err != nil {
				return err
			}
		}
		if record != nil {
			return record(tx, changes)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("update %s: %w", t.Name, err)
	}
	return changes, nil
}

// PauseKind pauses the kind of l: no instance dispatches its rows until
// ResumeKind. Pausing a paused kind replaces its note.
func (a *Admin) PauseKind(ctx context.Context, l redisio.Lists, info PauseInfo) error {
	if err := a.rdb.PauseKind(ctx, l, info); err != nil {
		return err
	}
	if a.kind == "" {
		return nil
	}
	return a.recordKind(ctx, policy.Entry{Event: policy.EventPaused, Note: info.Note}, cmp.Or(info.At, a.now()))
}

// ResumeKind ends a kind's pause; it reports whether the kind was paused.
func (a *Admin) ResumeKind(ctx context.Context, l redisio.Lists) (bool, error) {
	was, err := a.rdb.ResumeKind(ctx, l)
	if err != nil || !was {
		return was, err
	}
	if a.kind == "" {
		return was, nil
	}
	return was, a.recordKind(ctx, policy.Entry{Event: policy.EventResumed}, a.now())
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
