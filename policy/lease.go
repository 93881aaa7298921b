package policy

import (
	"fmt"
	"time"
)

// ResultExtend is a worker's request for more time: the attempt keeps
// running and its timeout_at moves to now + Result.Extend, within bounds
// (Extend). A status result with Extend set means the same.
const ResultExtend ResultType = "extend"

// DefaultMaxTimeoutFactor sets a kind's default MaxTimeout: 4 times its
// Timeout, so that extensions are on by default and still bounded.
const DefaultMaxTimeoutFactor = 4

// LeaseCap says what held an extension below what the worker asked.
type LeaseCap string

// The caps of an extension.
const (
	// LeaseAsked: nothing did; timeout_at is at least what was asked.
	LeaseAsked LeaseCap = ""
	// LeaseMaxTimeout: the attempt may not run longer than the kind's
	// MaxTimeout, counted from its start (attempt_at).
	LeaseMaxTimeout LeaseCap = "max_timeout"
	// LeaseNextOccurrence: the attempt may not run past the row's next
	// planned occurrence after its start, so that a hung job is taken back
	// before it overlaps its own next run.
	LeaseNextOccurrence LeaseCap = "next_occurrence"
)

// Lease is what an extension decided.
type Lease struct {
	// Asked is now + the requested duration.
	Asked time.Time
	// Until is the attempt's timeout_at after the request: Asked, or less
	// when capped (Cap), and never earlier than the timeout_at before it.
	Until time.Time
	// Cap is what held Until below Asked, LeaseAsked when nothing did.
	Cap LeaseCap
}

// Extend is a running, on-time attempt's extension by d at now (the caller,
// Apply, checks that the request is current and read before timeout_at):
// timeout_at, and refresh_at with it (a running row's refresh_at is its
// timeout_at), become now + d, capped at the earlier of attempt_at +
// MaxTimeout (LeaseMaxTimeout) and the first occurrence of sched after
// attempt_at (LeaseNextOccurrence, also when both are the same; none when
// the rule has no occurrence left). An extension never shortens the
// attempt: when the capped time is not after the current timeout_at,
// nothing changes.
func (p Policy) Extend(s State, now time.Time, d time.Duration, sched Nexter) (State, Lease) {
	p = p.WithDefaults()
	l := Lease{Asked: now.Add(d), Cap: LeaseAsked}
	until, limit, next := l.Asked, s.AttemptAt.Add(p.MaxTimeout), sched.Next(s.AttemptAt)
	switch {
	case !next.IsZero() && until.After(next) && !next.After(limit):
		until, l.Cap = next, LeaseNextOccurrence // a tie says the stricter reason
	case until.After(limit):
		until, l.Cap = limit, LeaseMaxTimeout
	}
	l.Until = until
	if !until.After(s.TimeoutAt) {
		l.Until = s.TimeoutAt
		if !l.Until.Before(l.Asked) {
			l.Cap = LeaseAsked // the attempt already runs that long
		}
		return s, l
	}
	s.TimeoutAt, s.RefreshAt = until, until
	return s, l
}

// timeoutReason is the last_error of s's attempt timing out: TimeoutReason
// of p.Timeout, or of the attempt's whole length when extensions made it
// longer ("timed out after 2h30m (lease extended)").
func (p Policy) timeoutReason(s State) string {
	if ran := s.TimeoutAt.Sub(s.AttemptAt); !s.AttemptAt.IsZero() && !s.TimeoutAt.IsZero() && ran > p.Timeout {
		return fmt.Sprintf("%s (lease extended)", TimeoutReason(ran))
	}
	return TimeoutReason(p.Timeout)
}
