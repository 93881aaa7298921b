package refresher

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/schedule"
)

var _ policy.CheckedNexter = (*schedule.Schedule)(nil)

// schedules hands out the schedule of each row for one loop (not safe for
// concurrent use: the dispatcher and the poller each have their own copy).
// The copies of one newSchedules share its parse cache (schedule.Cache is
// safe for concurrent use), so the poller finds the rules of the rows it
// applies parsed by the dispatcher that started them. Within a batch most
// rows share the kind's rule and the same `now`, so each schedule remembers
// its last Next call and computes Next(now) once per batch instead of once
// per row (rows of a spread kind each ask their own time, so they miss the
// memo); the memo is each copy's own, made on first use.
type schedules struct {
	kind        string
	spread      policy.Spread
	kindDefault *schedule.Schedule
	cache       *schedule.Cache // parsed refresh_rrule texts; made on first use when nil
	memo        map[*schedule.Schedule]*memoNext
	// own is shared by the copies: the keys of the rows read with a rule
	// of their own (see ownRules).
	own *ownRules
}

// maxMemo bounds the memo and the parse cache; rows with rules of their own
// each add one entry.
const maxMemo = 4096

// newSchedules returns the schedules of kind k, for its dispatcher and its
// poller to copy.
func newSchedules(k Kind) schedules {
	return schedules{kind: k.Name, spread: k.Policy.Spread, kindDefault: k.Schedule, cache: schedule.NewCache(maxMemo), own: &ownRules{}}
}

// errUnprepared rolls back a transaction that found rows whose own rules
// are not parsed yet: they are parsed (schedules.prepare) with no lock
// held, and the transaction runs again.
var errUnprepared = errors.New("rows with rules not parsed yet")

// maxPrepareRounds bounds the transactions rolled back to parse rules
// outside them; a rule that changes under every round (an app rewriting
// it continuously) is then parsed inside the last one.
const maxPrepareRounds = 3

// keyRule is a row's key and its own rule text.
type keyRule struct{ key, rule string }

// unprepared returns the rows among rows whose own rule is not ready for
// `now`: not parsed yet by this kind's loops, or, for rows for which
// needNext holds (nil: every row), whose next occurrence after now (as get
// hands it out, spread by the row's offset) this loop has not computed yet.
func (s *schedules) unprepared(rows []models.Row, now time.Time, needNext func(policy.State) bool) []keyRule {
	var out []keyRule
	for _, r := range rows {
		if r.Rule != "" && !s.ready(r.Key, r.Rule, now, needNext == nil || needNext(r.State)) {
			out = append(out, keyRule{r.Key, r.Rule})
		}
	}
	return out
}

// ready reports whether the row's own rule is parsed and, when it parsed
// and next is set, its next occurrence after now is in the memo.
func (s *schedules) ready(key, rule string, now time.Time, next bool) bool {
	if s.cache == nil || !s.cache.Has(rule) {
		return false
	}
	sched, err := s.cache.Parse(rule) // in the cache: no parse
	if err != nil || !next {
		return true // nothing to evaluate (an invalid rule: the policy disables the row)
	}
	m := s.memo[sched]
	return m != nil && m.covers(now.Add(-s.spread.Offset(s.kind, key, true)))
}

// prepare parses the rules of rows, and computes each one's next
// occurrence after now as get hands it out (spread by the row's offset), so
// that a transaction holding the rows' locks only looks them up: a user's
// rule is never parsed or evaluated while its row is locked (for Next at
// another time, e.g. after a retry delay, the engine's bounded cost applies).
func (s *schedules) prepare(rows []keyRule, now time.Time) {
	for _, r := range rows {
		n, err := s.get(r.key, r.rule)
		if err != nil {
			continue // the parse error is kept in the cache
		}
		if c, ok := n.(policy.CheckedNexter); ok {
			_, _ = c.NextChecked(now)
		}
	}
}

// get returns the schedule of the row with the given key: its own
// refresh_rrule, or the kind's default when that is NULL, spread by the
// row's offset when the kind spreads (policy.Spread), so that Due and Apply
// align to the row's own occurrences.
// It notes whether the row has a rule of its own (ownRules).
func (s *schedules) get(key, rule string) (policy.Nexter, error) {
	s.own.note(key, rule)
	return s.lookup(key, rule)
}

// lookup is get without noting the row's rule: the poller asks it for
// rows it has not read (fastSuccesses).
func (s *schedules) lookup(key, rule string) (policy.Nexter, error) {
	sched := s.kindDefault
	if rule != "" {
		if s.cache == nil {
			s.cache = schedule.NewCache(maxMemo)
		}
		var err error
		if sched, err = s.cache.Parse(rule); err != nil {
			return nil, err
		}
	}
	if s.memo == nil || len(s.memo) >= maxMemo {
		s.memo = make(map[*schedule.Schedule]*memoNext)
	}
	m := s.memo[sched]
	if m == nil {
		m = &memoNext{s: sched}
		s.memo[sched] = m
	}
	return policy.Spreaded(m, s.spread.Offset(s.kind, key, rule != "")), nil
}

// memoNext is a schedule that remembers its last answer.
type memoNext struct {
	s           *schedule.Schedule
	after, next time.Time
	err         error
	ok          bool
}

var _ policy.CheckedNexter = (*memoNext)(nil)

// Next returns s.Next(after), from the memo when after is the last one asked.
func (m *memoNext) Next(after time.Time) time.Time {
	t, _ := m.NextChecked(after)
	return t
}

// covers reports whether the memo answers NextChecked(after): after is the
// last one asked, or lies between it and the occurrence it found (no
// occurrence lies in between, so the answer is the same).
func (m *memoNext) covers(after time.Time) bool {
	if !m.ok || after.Before(m.after) {
		return false
	}
	return after.Equal(m.after) || (m.err == nil && !m.next.IsZero() && after.Before(m.next))
}

// NextChecked returns s.NextChecked(after), from the memo when it covers
// after: the policy disables a row whose next occurrence lies beyond the
// engine's horizon (schedule.ErrTooFar).
func (m *memoNext) NextChecked(after time.Time) (time.Time, error) {
	if !m.covers(after) {
		m.next, m.err = m.s.NextChecked(after)
		m.after, m.ok = after, true
	}
	return m.next, m.err
}

// maxOwnRules bounds ownRules; beyond it, further keys are not noted.
const maxOwnRules = 100_000

// ownRules holds the keys of a kind's rows that had a rule of their own
// when one of its loops last read them (the dispatcher claiming them, the
// poller locking them), with that rule. The poller does not offer their
// successes to Tx.SaveSuccesses, which would not match them (on MySQL,
// where a partial match rolls the whole batch back, models.ErrUnmatched,
// one such row among a batch's successes would cost the batch its fast
// write), and it prepares their rules for the batch before its
// transaction (schedules.prepare), so that the transaction does not lock
// them, find them unprepared and roll back first. It is a hint, never a
// decision: SaveSuccesses checks the rule itself, the transaction still
// checks that every rule it reads is prepared, and a row whose rule went
// away is noted again when read without one. Safe for concurrent use; a
// nil *ownRules notes nothing.
type ownRules struct {
	n    atomic.Int64 // len(keys), read without the lock
	mu   sync.Mutex
	keys map[string]string // key -> its rule as last read
}

// note records the rule the row with key was read with ("": none).
func (o *ownRules) note(key, rule string) {
	if o == nil || (rule == "" && o.n.Load() == 0) {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if rule == "" {
		delete(o.keys, key)
	} else if _, ok := o.keys[key]; ok || len(o.keys) < maxOwnRules {
		if o.keys == nil {
			o.keys = map[string]string{}
		}
		o.keys[key] = rule
	}
	o.n.Store(int64(len(o.keys)))
}

// rule returns the rule the row with key was last read with, if it had
// one of its own.
func (o *ownRules) rule(key string) (string, bool) {
	if o == nil || o.n.Load() == 0 {
		return "", false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	r, ok := o.keys[key]
	return r, ok
}
