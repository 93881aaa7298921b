package redisio

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// The operator's pauses as Redis holds them (Lists.KindPause and
// Lists.PausedModels); what a pause does to the rows is refresher's.

// PauseInfo is who paused a kind or a model, when, and why.
type PauseInfo struct {
	Note string    `json:"note"`
	By   string    `json:"by"`
	At   time.Time `json:"at"`
}

// decodePause reads a PauseInfo; a value that is not one (written by hand)
// still pauses, with its text as the note.
func decodePause(s string) PauseInfo {
	var p PauseInfo
	if json.Unmarshal([]byte(s), &p) != nil {
		p = PauseInfo{Note: s}
	}
	return p
}

// PauseKind pauses the kind of l; pausing a paused kind replaces its note.
func (c *Client) PauseKind(ctx context.Context, l Lists, info PauseInfo) error {
	b, _ := json.Marshal(info)
	if err := c.rdb.Set(ctx, l.KindPause(), b, 0).Err(); err != nil {
		return fmt.Errorf("pause kind: set %s: %w", l.KindPause(), err)
	}
	return nil
}

// resumeKindScript deletes the kind's pause, once per call (newOnceScript):
// a DEL sent again after a lost reply would report that the kind was not
// paused.
var resumeKindScript = newOnceScript(`return redis.call('DEL', KEYS[2])`)

// ResumeKind ends the kind's pause; it reports whether the kind was paused.
func (c *Client) ResumeKind(ctx context.Context, l Lists) (bool, error) {
	n, err := c.runOnce(ctx, resumeKindScript, []string{l.KindPause()})
	if err != nil {
		return false, fmt.Errorf("resume kind: delete %s: %w", l.KindPause(), err)
	}
	return n > 0, nil
}

// KindPause returns the kind's pause, nil when it is not paused.
func (c *Client) KindPause(ctx context.Context, l Lists) (*PauseInfo, error) {
	s, err := c.rdb.Get(ctx, l.KindPause()).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", l.KindPause(), err)
	}
	p := decodePause(s)
	return &p, nil
}

// PausedModels returns the kind's paused models by key.
func (c *Client) PausedModels(ctx context.Context, l Lists) (map[string]PauseInfo, error) {
	m, err := c.rdb.HGetAll(ctx, l.PausedModels()).Result()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", l.PausedModels(), err)
	}
	out := make(map[string]PauseInfo, len(m))
	for k, v := range m {
		out[k] = decodePause(v)
	}
	return out, nil
}

// ModelPaused reports whether the model with key is paused.
func (c *Client) ModelPaused(ctx context.Context, l Lists, key string) (bool, error) {
	ok, err := c.rdb.HExists(ctx, l.PausedModels(), key).Result()
	if err != nil {
		return false, fmt.Errorf("read %s: %w", l.PausedModels(), err)
	}
	return ok, nil
}

// PauseModels records the models of keys as paused with info (a paused
// model's note is replaced). No keys: no command.
func (c *Client) PauseModels(ctx context.Context, l Lists, keys []string, info PauseInfo) error {
	if len(keys) == 0 {
		return nil
	}
	b, _ := json.Marshal(info)
	fields := make([]any, 0, 2*len(keys))
	for _, k := range keys {
		fields = append(fields, k, b)
	}
	if err := c.rdb.HSet(ctx, l.PausedModels(), fields...).Err(); err != nil {
		return fmt.Errorf("pause: record in %s: %w", l.PausedModels(), err)
	}
	return nil
}

// ForgetPaused removes the models of keys from the paused models. No keys:
// no command.
func (c *Client) ForgetPaused(ctx context.Context, l Lists, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	if err := c.rdb.HDel(ctx, l.PausedModels(), keys...).Err(); err != nil {
		return fmt.Errorf("delete from %s: %w", l.PausedModels(), err)
	}
	return nil
}

// Unpause removes the models of keys from the paused models, in one round
// trip and one transaction, and returns the records it removed by key (raw,
// for RestorePauses); a model that was not paused has none.
func (c *Client) Unpause(ctx context.Context, l Lists, keys []string) (map[string]string, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	var get *redis.SliceCmd
	_, err := c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		get = p.HMGet(ctx, l.PausedModels(), keys...)
		p.HDel(ctx, l.PausedModels(), keys...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("resume: delete from %s: %w", l.PausedModels(), err)
	}
	before := make(map[string]string, len(keys))
	for i, v := range get.Val() {
		if s, ok := v.(string); ok {
			before[keys[i]] = s
		}
	}
	return before, nil
}

// RestorePauses puts back records Unpause removed (a resume that failed
// after it).
func (c *Client) RestorePauses(ctx context.Context, l Lists, before map[string]string) error {
	if len(before) == 0 {
		return nil
	}
	fields := make([]any, 0, 2*len(before))
	for k, v := range before {
		fields = append(fields, k, v)
	}
	if err := c.rdb.HSet(ctx, l.PausedModels(), fields...).Err(); err != nil {
		return fmt.Errorf("put the pauses back in %s: %w", l.PausedModels(), err)
	}
	return nil
}

// DispatchState is what a dispatcher pass reads of its kind before it
// claims rows: the operator's pauses and the throttle holds.
type DispatchState struct {
	// KindPause is the kind's pause, nil when it is not paused.
	KindPause *PauseInfo
	// PausedModels are the keys of the paused models.
	PausedModels []string
	// Holds are the throttle groups held after now, with the end of each
	// hold (nil when not asked for).
	Holds map[string]time.Time
}

// ReadDispatchState reads the kind's pauses and, when holds is set, the
// throttle groups held after now (by the caller's clock), in one round trip.
func (c *Client) ReadDispatchState(ctx context.Context, l Lists, holds bool, now time.Time) (DispatchState, error) {
	p := c.rdb.Pipeline()
	get, keys := p.Get(ctx, l.KindPause()), p.HKeys(ctx, l.PausedModels())
	held := func() (map[string]time.Time, error) { return nil, nil }
	if holds {
		held = queueHeld(ctx, p, l.Throttle(), now)
	}
	if _, err := p.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return DispatchState{}, fmt.Errorf("read the operator's pauses: %w", err)
	}
	var st DispatchState
	var err error
	if st.Holds, err = held(); err != nil {
		return DispatchState{}, err
	}
	if get.Err() == nil {
		info := decodePause(get.Val())
		st.KindPause = &info
	}
	st.PausedModels = keys.Val()
	return st, nil
}

// ListState is a kind's Redis state as the gauges and the dashboard show
// it.
type ListState struct {
	// Input, Output and Dead are the lengths of the kind's lists.
	Input, Output, Dead int64
	// PausedModels is the number of paused models.
	PausedModels int64
	// KindPause is the kind's pause, nil when it is not paused.
	KindPause *PauseInfo
}

// ReadListState reads the kind's list lengths and pauses in one round trip.
func (c *Client) ReadListState(ctx context.Context, l Lists) (ListState, error) {
	p := c.rdb.Pipeline()
	in, out, dead := p.LLen(ctx, l.Input), p.LLen(ctx, l.Output), p.LLen(ctx, l.Dead)
	paused, kind := p.HLen(ctx, l.PausedModels()), p.Get(ctx, l.KindPause())
	if _, err := p.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return ListState{}, fmt.Errorf("read the lengths of %s, %s and %s: %w", l.Input, l.Output, l.Dead, err)
	}
	st := ListState{Input: in.Val(), Output: out.Val(), Dead: dead.Val(), PausedModels: paused.Val()}
	if kind.Err() == nil {
		info := decodePause(kind.Val())
		st.KindPause = &info
	}
	return st, nil
}
