package refresher

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/schedule"
)

// WhyKind is what Admin.Why needs to know of a kind.
type WhyKind struct {
	Name  string
	Table models.Table
	// ThrottleGroup is the kind's throttle_group column ("" for none): the
	// holds of the row's own group explain a delay.
	ThrottleGroup string
	// Schedule is the kind's default rule (rows with refresh_rrule NULL).
	Schedule *schedule.Schedule
	Policy   policy.Policy
	// Keep is how long the ledger keeps entries (0: unknown), so that an
	// answer about a time older than that says the entries are gone.
	Keep time.Duration
	// RowMax is how many entries of a row the ledger keeps
	// (ledger.max_entries; 0: unknown), so that an answer about a time
	// before the oldest one left says the count bound pruned it.
	RowMax int
	// LedgerOff: the ledger is off (ledger.enabled: false). The answer then
	// rests on the schedule and the row's columns only; entries left from
	// when it was on are not read as if nothing happened since.
	LedgerOff bool
}

// ErrNoLedger is Why's error when the kind's store keeps no ledger (it
// does not implement models.LedgerReader).
var ErrNoLedger = errors.New("its database's store keeps no ledger, so there is no history to explain")

// ErrNoModel is Why's error when no row has the key.
var ErrNoModel = errors.New("no such model")

// WhyLimit bounds the entries one answer reads.
const WhyLimit = 5000

// WhyAnswer is Admin.Why's answer: the explanation and the entries read.
type WhyAnswer struct {
	policy.Why
	// Read are every entry read over [From, To] (the explanation cites
	// some of them: Why.Entries).
	Read     []policy.Entry
	From, To time.Time
	// Loc is the zone the sentence shows times in.
	Loc *time.Location
}

// Why explains what happened to the model key's occurrence at or nearest
// at (policy.Explain), from the ledger of the kind's store, the row's
// schedule (its own refresh_rrule or the kind's, spread as the service
// spreads it) and its state now. The CLI (`refresher why`) and the API both
// call it.
func (a *Admin) Why(ctx context.Context, k WhyKind, key string, at, now time.Time) (WhyAnswer, error) {
	lr, ok := a.store.(models.LedgerReader)
	if !ok {
		return WhyAnswer{}, fmt.Errorf("kind %s: %w", k.Name, ErrNoLedger)
	}
	t := models.Table{Name: k.Table.Name, Key: k.Table.Key}
	if k.ThrottleGroup != "" {
		t.Payload = []string{k.ThrottleGroup}
	}
	row, found, err := a.store.Get(ctx, t, key)
	if err != nil {
		return WhyAnswer{}, fmt.Errorf("read model %q: %w", key, err)
	}
	if !found {
		return WhyAnswer{}, fmt.Errorf("model %q of table %s: %w", key, k.Table.Name, ErrNoModel)
	}
	q := policy.WhyQuery{At: at, Now: now, Policy: k.Policy, Row: row.State, Keep: k.Keep,
		Group: ThrottleGroupOf(row, k.ThrottleGroup)}
	q.Schedule, q.Loc, q.ScheduleError = WhySchedule(k.Name, k.Schedule, k.Policy.Spread, key, row.Rule)
	ans := WhyAnswer{Loc: q.Loc}
	ans.From, ans.To = policy.WhyRange(q.Schedule, k.Policy, at, now)
	if q.Entries, err = lr.Ledger(ctx, k.Name, key, ans.From, ans.To, WhyLimit); err != nil {
		return WhyAnswer{}, fmt.Errorf("read the ledger: %w", err)
	}
	q.To = ans.To
	if k.LedgerOff {
		if len(q.Entries) > 0 {
			q.LedgerLast = q.Entries[len(q.Entries)-1].At
		}
		q.LedgerOff, q.Entries = true, nil
		ans.Why = policy.Explain(q)
		return ans, nil
	}
	if err := readRoutine(ctx, lr, k, key, &q, ans.From, ans.To); err != nil {
		return WhyAnswer{}, err
	}
	ans.Why = policy.Explain(q)
	if ans.Why.ReadToNow {
		// A pause still on where the read ends: its resume, and the
		// dispatch after it, lie between there and now.
		ans.To, q.To = now, now
		if q.Entries, err = lr.Ledger(ctx, k.Name, key, ans.From, ans.To, WhyLimit); err != nil {
			return WhyAnswer{}, fmt.Errorf("read the ledger: %w", err)
		}
		if err := readRoutine(ctx, lr, k, key, &q, ans.From, ans.To); err != nil {
			return WhyAnswer{}, err
		}
		ans.Why = policy.Explain(q)
	}
	ans.Read = q.Entries
	return ans, nil
}

// readRoutine reads what policy.Explain needs beyond the row's entries to
// tell a routine cycle: the kind's batches of routine successes from the
// occurrence explained to, the oldest WhyLimit (those nearest it), and
// the time of the oldest the ledger holds; and, when the row holds as many
// entries as k.RowMax, its oldest one's time.
func readRoutine(ctx context.Context, lr models.LedgerReader, k WhyKind, key string, q *policy.WhyQuery, from, to time.Time) error {
	var err error
	if q.Schedule != nil {
		// Batches from the occurrence on: those before it cannot hold its
		// success.
		if occ := policy.Nearest(q.Schedule, q.At); !occ.IsZero() && occ.After(from) {
			from = occ
		}
	}
	if q.Routine, err = lr.LedgerRoutine(ctx, k.Name, from, to, WhyLimit); err != nil {
		return fmt.Errorf("read the ledger: %w", err)
	}
	// Where the kind's batches begin: before it, a routine cycle cannot be
	// told.
	first, err := lr.LedgerRoutine(ctx, k.Name, time.Time{}, time.Time{}, 1)
	if err != nil {
		return fmt.Errorf("read the ledger: %w", err)
	}
	if len(first) == 1 {
		q.RoutineSince = first[0].At
	}
	if k.RowMax <= 0 {
		return nil
	}
	n, oldest, err := lr.LedgerRowSpan(ctx, k.Name, key)
	if err != nil {
		return fmt.Errorf("read the ledger: %w", err)
	}
	if n >= k.RowMax {
		q.RowSince, q.RowMax = oldest, k.RowMax
	}
	return nil
}

// WhySchedule is the schedule of the row key whose refresh_rrule is rule
// ("": the kind's default, kindDefault), moved by its spread offset as the
// loops move it, and the zone its times read in; nil with the parser's
// message when the rule does not parse, nil with "" when there is none.
func WhySchedule(kind string, kindDefault *schedule.Schedule, spread policy.Spread, key, rule string) (policy.Nexter, *time.Location, string) {
	sched := kindDefault
	if rule != "" {
		s, err := schedule.Parse(rule)
		if err != nil {
			return nil, nil, err.Error()
		}
		sched = s
	}
	if sched == nil {
		return nil, nil, ""
	}
	return policy.Spreaded(sched, spread.Offset(kind, key, rule != "")), sched.Location(), ""
}

// WhyReport is the answer as JSON: `refresher why --json` and the API's
// GET /api/v1/kinds/{kind}/models/{uid}/why.
type WhyReport struct {
	Kind string    `json:"kind"`
	UID  string    `json:"uid"`
	At   time.Time `json:"at"`
	// Occurrence is the planned occurrence explained; absent when none
	// (no rule, or a refresh asked for by hand is explained).
	Occurrence *time.Time `json:"occurrence,omitempty"`
	Cause      string     `json:"cause"`
	Sentence   string     `json:"sentence"`
	// TimeZone is the zone of the sentence's times.
	TimeZone string `json:"time_zone"`
	// From and To are the range of the ledger read.
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// Entries are those the sentence is built on, oldest first.
	Entries []LedgerEntry `json:"entries"`
}

// LedgerEntry is a policy.Entry as JSON: the fields its event uses.
type LedgerEntry struct {
	At       time.Time  `json:"at"`
	UID      *string    `json:"uid"` // null for an entry of the whole kind
	Event    string     `json:"event"`
	Attempt  string     `json:"attempt_uid,omitempty"`
	Planned  *time.Time `json:"planned,omitempty"`
	Next     *time.Time `json:"next,omitempty"`
	Bound    string     `json:"bound,omitempty"`
	Until    *time.Time `json:"until,omitempty"`
	Reason   string     `json:"reason,omitempty"`
	Disabled bool       `json:"disabled,omitempty"`
	Priority *int       `json:"priority,omitempty"`
	By       string     `json:"by,omitempty"`
	Note     string     `json:"note,omitempty"`
	Group    string     `json:"group,omitempty"`
	// Count, Dispatched and DispatchedLast: a batch of routine successes
	// (event "routine"): how many, and the range of their dispatches.
	Count          int        `json:"count,omitempty"`
	Dispatched     *time.Time `json:"dispatched,omitempty"`
	DispatchedLast *time.Time `json:"dispatched_last,omitempty"`
}

// LedgerEntries converts entries to JSON, times in UTC.
func LedgerEntries(entries []policy.Entry) []LedgerEntry {
	tp := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		t = t.UTC()
		return &t
	}
	out := make([]LedgerEntry, 0, len(entries))
	for _, e := range entries {
		j := LedgerEntry{At: e.At.UTC(), Event: string(e.Event), Attempt: e.Attempt, Planned: tp(e.Planned), Next: tp(e.Next),
			Bound: e.Bound, Until: tp(e.Until), Reason: e.Reason, Disabled: e.Disabled, Priority: e.Priority, By: e.By, Note: e.Note, Group: e.Group,
			Count: e.Count}
		if e.Event == policy.EventRoutine {
			j.Dispatched, j.DispatchedLast = tp(e.Dispatched), tp(e.DispatchedLast)
		}
		if !e.Whole {
			k := e.Key
			j.UID = &k
		}
		out = append(out, j)
	}
	return out
}

// Report is the answer as JSON, about the model key of kind at at.
func (a WhyAnswer) Report(kind, key string, at time.Time) WhyReport {
	r := WhyReport{Kind: kind, UID: key, At: at.UTC(), Cause: string(a.Cause), Sentence: a.Sentence, TimeZone: "UTC",
		From: a.From.UTC(), To: a.To.UTC(), Entries: LedgerEntries(a.Entries)}
	if a.Loc != nil {
		r.TimeZone = a.Loc.String()
	}
	if !a.Occurrence.IsZero() {
		o := a.Occurrence.UTC()
		r.Occurrence = &o
	}
	return r
}
