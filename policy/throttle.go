package policy

import (
	"fmt"
	"time"
)

// Scope says whose fault a failure is, as a worker reports it in a result's
// "scope" (docs/protocol.md, "Results").
type Scope string

// The scopes of a failure.
const (
	// ScopeModel (no scope): the model's own failure; it counts toward
	// giving up.
	ScopeModel Scope = ""
	// ScopeGroup: the model's throttle group is throttled (an HTTP 429 of
	// the host or credential it shares with others): the attempt does not
	// count (Throttled).
	ScopeGroup Scope = "group"
	// ScopeWorker: the worker or its upstream is broken, not the model: the
	// kind enters an incident (Guard), during which failures do not count.
	ScopeWorker Scope = "worker"
)

// DefaultThrottleWait is how long a throttled row waits when its result
// gives no retry_after_seconds.
const DefaultThrottleWait = time.Minute

// BranchThrottled: the attempt was throttled with its group (Throttled); it
// does not count and refresh_at is the end of the wait.
const BranchThrottled Branch = "throttled"

// DueHeld: the row was due but its throttle group is held (Held); it waits
// for the hold's end without starting an attempt.
const DueHeld DueAction = "held"

// GroupHold returns until when the group of a result read at now must be
// held: r is a non-permanent failure with a RetryAfter above zero, whatever
// its scope, and the hold ends at now + RetryAfter, capped by
// MaxRetryAfter. ok is false for every other result. Which group is the
// shell's business (the result's throttle_key).
func (p Policy) GroupHold(r Result, now time.Time) (until time.Time, ok bool) {
	p = p.WithDefaults()
	if r.Type != ResultFailure || r.Permanent || r.RetryAfter <= 0 {
		return time.Time{}, false
	}
	return now.Add(min(r.RetryAfter, p.MaxRetryAfter)), true
}

// Throttled ends the current attempt at now without counting it: the worker
// answered "throttled" (a failure with "scope":"group"), so the model never
// got its chance. attempt_no goes back to what it was before the attempt
// started, failing_since is left as it was (a throttled wait is no failure
// and never counts toward giving up, by attempts or by age), f.Reason
// becomes last_error, the status is cleared and refresh_at is now + the wait:
// f.RetryAfter capped by MaxRetryAfter, or DefaultThrottleWait (1m) when it
// is zero or negative. The wait is not aligned to the schedule: the row must
// not start before it ends, and a planned occurrence inside it is served by
// the attempt at its end.
func (p Policy) Throttled(s State, now time.Time, f Failure) (State, Decision) {
	p = p.WithDefaults()
	wait := min(f.RetryAfter, p.MaxRetryAfter)
	if wait <= 0 {
		wait = DefaultThrottleWait
	}
	s.AttemptUID = ""
	s.TimeoutAt = time.Time{}
	s.Status = ""
	s.AttemptNo = max(s.AttemptNo-1, 0)
	s.LastError = Truncate(f.Reason, MaxLastErrorLen)
	s.RefreshAt = now.Add(wait)
	return s, Decision{Branch: BranchThrottled, Delay: wait, RetryAt: s.RefreshAt, RefreshAt: s.RefreshAt,
		Reason: fmt.Sprintf("throttled with its group: wait %s; the attempt does not count", FormatDuration(wait))}
}

// Held is the dispatcher's rule for a row whose throttle group is held
// until until, applied to what Due decided (s and d) at now: a row Due
// started does not start; it goes back to the state it started from
// (d.BeforeStart: after its timeout, when one was declared) with refresh_at
// = until, so no attempt is counted, and the decision becomes DueHeld (a
// timeout declared first stays in d). Any other decision, or a hold that
// ended (until <= now), is returned as it is.
func Held(s State, d DueDecision, until, now time.Time) (State, DueDecision) {
	if d.Action != DueStarted || !until.After(now) {
		return s, d
	}
	s = d.BeforeStart
	s.RefreshAt = until
	return s, DueDecision{Action: DueHeld, TimedOut: d.TimedOut, Timeout: d.Timeout}
}
