package policy

import "time"

// Event is one kind of decision the service takes about a row or a kind,
// as the ledger records it. The words are stored and shown; never rename
// one (add a new word instead).
type Event string

// Row events: what happened to one row.
const (
	// EventDispatched: an attempt started and its job was pushed
	// (Entry.Attempt, Entry.Planned: the refresh_at it ran for,
	// Entry.Priority when raised). A routine start (RoutineStart) has
	// none: its outcome's Entry.Dispatched says when it started, and the
	// schedule what for.
	EventDispatched Event = "dispatched"
	// EventSucceeded: a success was applied; Entry.Next is the next
	// planned occurrence (zero when the rule has none left).
	EventSucceeded Event = "succeeded"
	// EventFailed: a failure was applied or an attempt timed out
	// (Entry.Reason); Entry.Next is the retry planned and Entry.Bound what
	// bounded it, or the row was disabled (Entry.Disabled).
	EventFailed Event = "failed"
	// EventTimedOut: the running attempt passed its timeout_at (found by
	// the dispatcher, or a result read after it); fields as EventFailed.
	EventTimedOut Event = "timed_out"
	// EventStale: a result for an attempt that is not running was ignored.
	EventStale Event = "stale"
	// EventLate: a result read at or after timeout_at was ignored (the
	// attempt ended as timed out: an EventTimedOut entry follows).
	EventLate Event = "late"
	// EventExtended: a lease was granted (Entry.Until: the new timeout_at).
	EventExtended Event = "extended"
	// EventMisfireSkipped: the row had been due past the catchup window and
	// did not run (Entry.Planned: the occurrence missed, Entry.Next: the
	// next one).
	EventMisfireSkipped Event = "misfire_skipped"
	// EventDisabled: the row was disabled (Entry.Reason): a permanent
	// failure, retries exhausted, an invalid rule, or the rule ended.
	EventDisabled Event = "disabled"
	// EventEnabled: the row was enabled (Entry.By when the API or CLI did
	// it; the application's own SQL leaves no entry).
	EventEnabled Event = "enabled"
	// EventTriggered: "refresh now" (Entry.By, Entry.Priority).
	EventTriggered Event = "triggered"
	// EventUndone: the job of a dispatched attempt (Entry.Attempt) could
	// not be pushed to Redis; the row was restored as it was before, so
	// the attempt does not count and the row is due again (a row whose
	// attempt changed meanwhile, enabled by the user, is left as it is).
	EventUndone Event = "undone"
)

// EventRoutine is an entry of the whole kind (Entry.Whole) that stands for
// the plain successes one batch applied (Entry.Count of them: a success of
// the running attempt, on time, with a next occurrence planned), when
// ledger.routine is "batches": such a success writes no row entry of its
// own. Entry.At is when the batch was applied, Entry.Dispatched and
// Entry.DispatchedLast the first and last dispatch of its attempts, to
// the second (their xids' time). Every other outcome of an attempt keeps
// its row entry, written in the same transaction as the row, so that
// Explain tells a routine cycle from the absence of anything else
// (see Explain, "routine cycles").
const EventRoutine Event = "routine"

// Kind and operator events: what held every row of a kind (Entry.Key is
// empty) or one model (Entry.Key set) back.
const (
	// EventPaused and EventResumed: an operator paused or resumed the kind
	// or one model (Entry.By, Entry.Note, Entry.Until when the pause ends
	// by itself).
	EventPaused  Event = "paused"
	EventResumed Event = "resumed"
	// EventThrottleHold: a throttle group held the kind's dispatch
	// (Entry.Group, Entry.Until).
	EventThrottleHold Event = "throttle_hold"
	// EventIncidentOpened and EventIncidentClosed: the incident guard's
	// window (Entry.Reason: the window's figures).
	EventIncidentOpened Event = "incident_opened"
	EventIncidentClosed Event = "incident_closed"
)

// Retry bounds: what set a planned retry's time (Entry.Bound).
const (
	BoundRetryList      = "retry list"
	BoundNextOccurrence = "next occurrence"
	BoundRetryAfter     = "Retry-After"
	BoundIncidentFloor  = "incident floor"
)

// Entry is one line of the ledger: a decision, when it was taken, and what
// it needs to be explained later. Fields a given Event does not use are
// zero.
type Entry struct {
	At   time.Time
	Kind string
	// Key is the row's key; "" for an entry of the whole kind (Whole), and
	// for the entries of a row whose key is the empty string.
	Key string
	// Whole: an entry of the whole kind (a kind's pause, a throttle hold
	// of its group, an incident, a batch of routine successes), not of a
	// row; Key is then "".
	Whole bool
	Event Event
	// Attempt is the attempt UID the decision concerns.
	Attempt string
	// Planned is the occurrence (refresh_at) the decision is about.
	Planned time.Time
	// Dispatched is when Attempt was dispatched, on the entries that end
	// an attempt (succeeded, failed, timed_out, late), on extended and on
	// undone: a
	// routine start writes no dispatched entry of its own (see
	// PlannedDerivable), so its outcome carries the dispatch. Zero when
	// unknown.
	Dispatched time.Time
	// Next is the refresh_at written: the next occurrence or the retry.
	Next  time.Time
	Bound string
	// Until is when a pause, hold or lease ends.
	Until    time.Time
	Reason   string
	Disabled bool
	Priority *int
	// By names who did it (a token's name, "cli"); "" for the service.
	By    string
	Note  string
	Group string
	// Count is how many successes an EventRoutine entry stands for;
	// DispatchedLast the last dispatch among them (Dispatched the first).
	Count          int
	DispatchedLast time.Time
}

// RetryBound names what set d.RefreshAt, the decision p.Failure (or
// Throttled) took for a failure whose worker asked for retryAfter
// (Result.RetryAfter; 0 for a timeout), for Entry.Bound:
// BoundNextOccurrence when the planned occurrence serves as the retry;
// else the largest of the retry policy's delay (BoundRetryList), the
// Retry-After as p caps it (BoundRetryAfter) and, during an incident,
// Guard.Retry (BoundIncidentFloor); a throttled wait is BoundRetryAfter
// when the worker gave one. "" for a disabled row. A tie between the
// retry policy's delay and another names the other.
func (p Policy) RetryBound(d Decision, retryAfter time.Duration) string {
	p = p.WithDefaults()
	ra := min(max(retryAfter, 0), p.MaxRetryAfter)
	switch d.Branch {
	case BranchPlanned:
		return BoundNextOccurrence
	case BranchThrottled:
		if ra > 0 {
			return BoundRetryAfter
		}
		return ""
	case BranchRetry:
		if d.Incident && d.Delay == p.Guard.Retry && p.Guard.Retry > ra {
			return BoundIncidentFloor
		}
		if ra > 0 && d.Delay == ra {
			return BoundRetryAfter
		}
		return BoundRetryList
	}
	return ""
}

// RoutineStart reports whether the attempt d started at now is routine:
// its dispatch needs no entry of its own, because Explain tells all of it
// from the entry that ends it (Entry.Dispatched) and from sched. It is so
// when the start is not a retry, follows no timeout or misfire, and its
// refresh_at (d.BeforeStart.RefreshAt) is an occurrence of sched and the
// last one at or before the dispatch, read to the second either way (the
// dispatch time an outcome carries may be the attempt's xid's, whole
// seconds). The shell adds its own condition: the kind's priority.
func RoutineStart(d DueDecision, sched Nexter, now time.Time) bool {
	planned := d.BeforeStart.RefreshAt
	if d.Action != DueStarted || d.TimedOut || !d.MissedSince.IsZero() || d.BeforeStart.AttemptNo != 0 || sched == nil {
		return false
	}
	sec := now.Truncate(time.Second)
	if planned.IsZero() || planned.After(sec) || !sched.Next(planned.Add(-time.Nanosecond)).Equal(planned) {
		return false
	}
	n := sched.Next(planned)
	return n.IsZero() || n.After(sec.Add(time.Second))
}

// routinePlanned is the occurrence a routine start dispatched at
// dispatched ran for (see RoutineStart): the last of sched at or before
// it, read to the second.
func routinePlanned(sched Nexter, dispatched time.Time) time.Time {
	return previous(sched, dispatched.Truncate(time.Second).Add(time.Nanosecond))
}
