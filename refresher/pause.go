package refresher

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

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
// The keys derive from the input list's name, so they share its Redis
// Cluster hash tag, if any.

// PauseInfo is who paused a kind or a model, when, and why.
type PauseInfo struct {
	Note string    `json:"note"`
	By   string    `json:"by"`
	At   time.Time `json:"at"`
}

// PauseKeys returns the Redis keys of a kind's pause and of its paused
// models.
func PauseKeys(l redisio.Lists) (kind, models string) {
	return l.Input + ":paused", l.Input + ":paused-models"
}

// PauseKind pauses a whole kind: no instance dispatches its rows until
// ResumeKind. Pausing a paused kind replaces its note.
func PauseKind(ctx context.Context, rdb redis.UniversalClient, l redisio.Lists, info PauseInfo) error {
	b, _ := json.Marshal(info)
	key, _ := PauseKeys(l)
	if err := rdb.Set(ctx, key, b, 0).Err(); err != nil {
		return fmt.Errorf("pause kind: set %s: %w", key, err)
	}
	return nil
}

// ResumeKind ends a kind's pause; it reports whether the kind was paused.
func ResumeKind(ctx context.Context, rdb redis.UniversalClient, l redisio.Lists) (bool, error) {
	key, _ := PauseKeys(l)
	n, err := rdb.Del(ctx, key).Result()
	if err != nil {
		return false, fmt.Errorf("resume kind: delete %s: %w", key, err)
	}
	return n > 0, nil
}

// KindPause returns a kind's pause, nil when it is not paused.
func KindPause(ctx context.Context, rdb redis.UniversalClient, l redisio.Lists) (*PauseInfo, error) {
	key, _ := PauseKeys(l)
	b, err := rdb.Get(ctx, key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	return decodePause(b), nil
}

// PausedModels returns a kind's paused models by key.
func PausedModels(ctx context.Context, rdb redis.UniversalClient, l redisio.Lists) (map[string]PauseInfo, error) {
	_, key := PauseKeys(l)
	m, err := rdb.HGetAll(ctx, key).Result()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	out := make(map[string]PauseInfo, len(m))
	for k, v := range m {
		out[k] = *decodePause([]byte(v))
	}
	return out, nil
}

// decodePause reads a PauseInfo; a value that is not one (written by hand)
// still pauses, with its text as the note.
func decodePause(b []byte) *PauseInfo {
	var p PauseInfo
	if json.Unmarshal(b, &p) != nil {
		p = PauseInfo{Note: string(b)}
	}
	return &p
}

// Pause pauses models: they are recorded as paused (so that every instance's
// dispatcher leaves them alone) and their refresh_at is cleared
// (policy.Pause). A running attempt's result still applies. Pausing a paused
// model replaces its note. Keys without a row are reported as not found and
// not recorded.
func Pause(ctx context.Context, store models.Store, rdb redis.UniversalClient, t models.Table, l redisio.Lists,
	keys []string, info PauseInfo) ([]Change, error) {
	_, hash := PauseKeys(l)
	b, _ := json.Marshal(info)
	fields := make([]any, 0, 2*len(keys))
	for _, k := range keys {
		fields = append(fields, k, b)
	}
	// Recorded first: from then on a dispatcher that claims the row pauses
	// it again rather than starting it.
	if err := rdb.HSet(ctx, hash, fields...).Err(); err != nil {
		return nil, fmt.Errorf("pause: record in %s: %w", hash, err)
	}
	changes, err := change(ctx, store, t, keys, func(st policy.State) (policy.State, string) {
		note := "paused; nothing is planned until it is resumed"
		switch {
		case st.Running():
			note = fmt.Sprintf("paused; attempt %s still runs and its result will apply", st.AttemptUID)
		case st.Disabled():
			note = "paused; it is also disabled"
		}
		return policy.Pause(st), note
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
	if len(missing) > 0 {
		if derr := rdb.HDel(context.WithoutCancel(ctx), hash, missing...).Err(); derr != nil {
			err = errors.Join(err, fmt.Errorf("pause: forget the keys not paused in %s: %w", hash, derr))
		}
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
func Resume(ctx context.Context, store models.Store, rdb redis.UniversalClient, t models.Table, l redisio.Lists,
	keys []string, now time.Time, schedFor func(key, rule string) policy.Nexter) ([]Change, error) {
	_, hash := PauseKeys(l)
	// Forgotten first, so that a dispatcher that claims the row once it is
	// planned starts it rather than pausing it again; put back on failure.
	before, err := rdb.HMGet(ctx, hash, keys...).Result()
	if err != nil {
		return nil, fmt.Errorf("resume: read %s: %w", hash, err)
	}
	if err := rdb.HDel(ctx, hash, keys...).Err(); err != nil {
		return nil, fmt.Errorf("resume: delete from %s: %w", hash, err)
	}
	was := map[string]bool{}
	for i, v := range before {
		was[keys[i]] = v != nil
	}
	changes, err := changeRows(ctx, store, t, keys, func(row models.Row) (policy.State, string) {
		st := policy.Resume(row.State, now, schedFor(row.Key, row.Rule))
		return st, resumeNote(st, was[row.Key])
	})
	if err != nil {
		return nil, restorePauses(ctx, rdb, hash, keys, before, err)
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

// restorePauses puts back the pause entries Resume deleted before it failed
// with err.
func restorePauses(ctx context.Context, rdb redis.UniversalClient, hash string, keys []string, before []any, err error) error {
	var fields []any
	for i, v := range before {
		if s, ok := v.(string); ok {
			fields = append(fields, keys[i], s)
		}
	}
	if len(fields) > 0 {
		if rerr := rdb.HSet(context.WithoutCancel(ctx), hash, fields...).Err(); rerr != nil {
			err = errors.Join(err, fmt.Errorf("put the pauses back in %s: %w", hash, rerr))
		}
	}
	return err
}

// pauses is what a dispatcher pass knows of the operator's pauses of its
// kind, read once per pass.
type pauses struct {
	kind   bool
	models map[string]struct{}
}

// readPauses reads, in one round trip, whether the kind is paused and which
// of its models are, and the throttle holds of its groups into d.holds
// (when the kind names a group column; see throttle). A paused kind is
// logged when the pause starts and ends, not on every pass.
func (d *dispatcher) readPauses(ctx context.Context) (kindPaused bool, err error) {
	kindKey, hash := PauseKeys(d.kind.Lists)
	p := d.rdb.Redis().Pipeline()
	get, keys := p.Get(ctx, kindKey), p.HKeys(ctx, hash)
	held := d.throttle.queueHeld(ctx, p, d.clock.Now())
	if _, err := p.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return false, fmt.Errorf("read the operator's pauses: %w", err)
	}
	if d.holds, err = held(); err != nil {
		return false, err
	}
	paused := get.Err() == nil
	if paused != d.paused.kind {
		if paused {
			info := decodePause([]byte(get.Val()))
			d.log.Warn("kind paused by the operator, not dispatching", "by", info.By, "note", info.Note)
		} else {
			d.log.Info("kind resumed by the operator")
		}
	}
	d.paused.kind = paused
	clear(d.paused.models)
	if len(keys.Val()) > 0 && d.paused.models == nil {
		d.paused.models = make(map[string]struct{}, len(keys.Val()))
	}
	for _, k := range keys.Val() {
		d.paused.models[k] = struct{}{}
	}
	return paused, nil
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
