package policy

import "time"

// ResultType is the type of a worker's result.
type ResultType string

// The result types of the Redis protocol.
const (
	ResultSuccess ResultType = "success"
	ResultFailure ResultType = "failure"
	ResultStatus  ResultType = "status"
)

// Result is a worker's answer about one attempt, as the transitions need it
// (the shell converts the wire format to it).
type Result struct {
	// AttemptUID names the attempt the result answers.
	AttemptUID string
	Type       ResultType
	// Reason, UserFriendlyReason, Permanent and RetryAfter describe a
	// failure (see Failure); other types ignore them.
	Reason             string
	UserFriendlyReason string
	Permanent          bool
	RetryAfter         time.Duration
	// Status is text for the application's UI; "" when the result has none.
	Status string
	// Scope says whose fault a failure is (ScopeModel, ScopeGroup,
	// ScopeWorker); other types ignore it.
	Scope Scope
	// Extend asks for timeout_at = now + Extend (see Policy.Extend), with
	// ResultExtend or ResultStatus; zero asks for nothing. Other types
	// ignore it.
	Extend time.Duration
}

// Outcome is what became of a result.
type Outcome string

// The outcomes of Apply.
const (
	// OutcomeApplied: the result was applied (or the row was disabled for an
	// invalid schedule while its result was current and on time).
	OutcomeApplied Outcome = "applied"
	// OutcomeStale: the result names an attempt that is not running (it
	// ended, or the user enabled the row); nothing changed.
	OutcomeStale Outcome = "stale"
	// OutcomeLate: the result was read at or after the attempt's timeout_at.
	// It is not applied: the attempt ends as timed out, as the dispatcher's
	// timeout would end it (see ApplyDecision.Timeout).
	OutcomeLate Outcome = "late"
)

// Metric returns the outcome label of the results_total metric: a late
// result counts as stale, since it is not applied.
func (o Outcome) Metric() string {
	if o == OutcomeLate {
		return string(OutcomeStale)
	}
	return string(o)
}

// ApplyDecision says what Apply did, for the shell to count and log.
type ApplyDecision struct {
	Outcome Outcome
	// Failed: the attempt ended in a failure, from a failure result
	// (Failure) or because the result came late (TimedOut); Failure is that
	// decision.
	Failed  bool
	Failure Decision
	// TimedOut: the failure is the attempt's timeout (OutcomeLate).
	TimedOut bool
	// InvalidSchedule: the row's rule is unparsable or empty and the row was
	// disabled (DisableInvalidSchedule); ScheduleError is the parser's
	// message.
	InvalidSchedule bool
	ScheduleError   string
	// Extended: the result asked for more time and was applied; Lease is
	// what Extend decided.
	Extended bool
	Lease    Lease
}

// Apply is the poller's transition of one result r read at now, the whole
// of it:
//
//  1. a result whose attempt is not the running one is stale: nothing
//     changes (OutcomeStale);
//  2. an unparsable or empty rule (schedErr != nil or sched == nil)
//     disables the row (DisableInvalidSchedule); the result is applied, or
//     late when it came at or after timeout_at;
//  3. a result read at or after timeout_at (now >= timeout_at, by the
//     service's clock) is late: the attempt fails with TimeoutReason
//     through the retry policy (TimedOut, jitter draw u), exactly as the
//     dispatcher's timeout, and the result's content is ignored, its status
//     too (OutcomeLate). Which loop reaches the row first does not change
//     the state it ends in;
//  4. a status result stores r.Status (SetStatus) and keeps the attempt
//     running; it may come any number of times. An extend result stores
//     its status when it carries one. With r.Extend set, either moves
//     timeout_at (and refresh_at) to now + r.Extend within the kind's
//     bounds (Extend, ApplyDecision.Lease): a late request (rule 3) extends
//     nothing;
//  5. a success ends the attempt (success), a failure too (Failure; a
//     non-permanent failure with ScopeGroup is Throttled instead and does
//     not count; during an incident, p.Incident, a non-permanent failure
//     does not count either, see Failure); the
//     row's status becomes the result's status, or NULL when it carries
//     none, so refresh_status always describes the latest attempt: its
//     progress while it runs, its final word after.
func (p Policy) Apply(s State, r Result, now time.Time, sched Nexter, schedErr error, u float64) (State, ApplyDecision) {
	p = p.WithDefaults()
	if !s.Running() || s.AttemptUID != r.AttemptUID {
		return s, ApplyDecision{Outcome: OutcomeStale}
	}
	late := !s.TimeoutAt.IsZero() && !now.Before(s.TimeoutAt)
	if schedErr != nil || sched == nil {
		s = DisableInvalidSchedule(s, now, schedErr)
		d := ApplyDecision{Outcome: OutcomeApplied, InvalidSchedule: true, ScheduleError: "empty rule"}
		if late {
			d.Outcome = OutcomeLate
		}
		if schedErr != nil {
			d.ScheduleError = schedErr.Error()
		}
		return s, d
	}
	if late {
		d := ApplyDecision{Outcome: OutcomeLate, Failed: true, TimedOut: true}
		s, d.Failure = p.TimedOut(s, now, sched, u)
		return s, d
	}
	d := ApplyDecision{Outcome: OutcomeApplied}
	switch r.Type {
	case ResultStatus, ResultExtend:
		if r.Type == ResultStatus || r.Status != "" {
			s = SetStatus(s, r.Status)
		}
		if r.Extend > 0 {
			d.Extended = true
			s, d.Lease = p.Extend(s, now, r.Extend, sched)
		}
		return s, d
	case ResultSuccess:
		w, err := Succeeded(r, now, sched)
		if err == nil {
			return WithSuccess(s, w), d // the write a store may do unread
		}
		s, _ = success(s, now, sched) // disables the row: its schedule failed
		d.InvalidSchedule, d.ScheduleError = true, err.Error()
	default: // ResultFailure; the codec admits no other type
		d.Failed = true
		f := Failure{
			Reason:             r.Reason,
			UserFriendlyReason: r.UserFriendlyReason,
			Permanent:          r.Permanent,
			RetryAfter:         r.RetryAfter,
		}
		if r.Scope == ScopeGroup && !r.Permanent {
			s, d.Failure = p.Throttled(s, now, f)
		} else {
			s, d.Failure = p.Failure(s, now, f, sched, u)
		}
	}
	if r.Status != "" {
		s = SetStatus(s, r.Status)
	}
	return s, d
}
