package policy

import (
	"cmp"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Defaults of Policy.
const (
	DefaultKind           = "model"
	DefaultTimeout        = time.Hour
	DefaultDisabledReason = "Cannot refresh {kind} after {attempts} attempt(s)"
	// DefaultPermanentReason is stored for a permanent failure whose worker
	// sent no user_friendly_reason.
	DefaultPermanentReason = "Cannot refresh {kind}: the source was rejected"
	// DefaultMaxRetryAfter caps a worker's retry_after_seconds: 7 days, the
	// reference worker's own cap on an HTTP Retry-After.
	DefaultMaxRetryAfter = 7 * 24 * time.Hour
)

// Column sizes (in characters, as MySQL counts VARCHAR) of the strings the
// transitions store; longer texts are truncated by Truncate.
const (
	MaxLastErrorLen      = 1024 // refresh_last_error
	MaxDisabledReasonLen = 1024 // refresh_disabled_user_friendly_reason
	MaxStatusLen         = 255  // refresh_status
)

// Policy is what the transitions need to know about one kind. Zero fields take
// their defaults (see WithDefaults), so Policy{} is usable.
type Policy struct {
	// Kind names the kind in the disabled reason. Default: "model".
	Kind string
	// Timeout is how long one attempt may run before it is declared failed
	// with "timed out after <Timeout>". Default: 1h.
	Timeout time.Duration
	// Retry decides the delay after each consecutive failure and when to
	// give up. Default: DefaultRetry (delays:0s,1m,5m,15m,30m,1h).
	Retry *Retry
	// DisabledReason is the reason stored when the retry policy gives up;
	// {kind} and {attempts} are replaced by Kind and the attempt number.
	// Default: "Cannot refresh {kind} after {attempts} attempt(s)".
	DisabledReason string
	// PermanentReason is the reason stored when a worker reports a permanent
	// failure without a user_friendly_reason; {kind} and {attempts} are
	// replaced as in DisabledReason. The worker's technical reason is never
	// shown to end users: it goes to refresh_last_error only.
	// Default: "Cannot refresh {kind}: the source was rejected".
	PermanentReason string
	// MaxRetryAfter caps a worker's Retry-After (retry_after_seconds), so a
	// buggy or hostile answer such as 9223372036 seconds cannot plan a row
	// centuries ahead. Default: 7 days (168h).
	MaxRetryAfter time.Duration
	// MaxTimeout is the longest an attempt may run, counted from its start,
	// however a worker extends it (Extend). Default: DefaultMaxTimeoutFactor
	// (4) times Timeout. It must not be less than Timeout.
	MaxTimeout time.Duration
	// Guard is the kind's incident guard (see Guard). Default: on, 80% of
	// at least 50 results in 5 minutes.
	Guard Guard
	// Incident: the kind is in an incident (Guard.Incident of its window),
	// as the shell found it for the batch in hand; not configuration. A
	// non-permanent failure then never disables and its attempt does not
	// count (see Failure). explain --incident sets it to simulate one.
	Incident bool
	// Catchup says what Due does with a row due for too long (misfire.go).
	// Default: an unlimited window.
	Catchup Catchup
	// Spread is the kind's load spreading (spread.go). The shell applies it
	// when it hands a row's schedule to Due and Apply (Spreaded); the
	// transitions themselves never read it. Default: none.
	Spread Spread
}

// WithDefaults returns p with every zero field set to its default.
func (p Policy) WithDefaults() Policy {
	p.Kind = cmp.Or(p.Kind, DefaultKind)
	p.Timeout = cmp.Or(p.Timeout, DefaultTimeout)
	p.MaxTimeout = cmp.Or(p.MaxTimeout, DefaultMaxTimeoutFactor*p.Timeout)
	if p.Retry == nil {
		p.Retry = DefaultRetry
	}
	p.DisabledReason = cmp.Or(p.DisabledReason, DefaultDisabledReason)
	p.PermanentReason = cmp.Or(p.PermanentReason, DefaultPermanentReason)
	p.MaxRetryAfter = cmp.Or(p.MaxRetryAfter, DefaultMaxRetryAfter)
	p.Guard = p.Guard.WithDefaults()
	return p
}

// hasDefaults reports whether p.WithDefaults() would return p unchanged:
// every field it defaults is set. The per-row transitions then use p as
// it is rather than a copy (see DueInPlace).
func (p *Policy) hasDefaults() bool {
	return p.Kind != "" && p.Timeout != 0 && p.MaxTimeout != 0 && p.Retry != nil &&
		p.DisabledReason != "" && p.PermanentReason != "" && p.MaxRetryAfter != 0 &&
		p.Guard.hasDefaults()
}

var placeholderRE = regexp.MustCompile(`\{[^{}]*\}`)

// Validate reports the first invalid field of p (after WithDefaults).
func (p Policy) Validate() error {
	p = p.WithDefaults()
	if p.Timeout < 0 {
		return fmt.Errorf("Timeout cannot be negative (got %s)", p.Timeout)
	}
	if p.MaxTimeout < p.Timeout {
		return fmt.Errorf("MaxTimeout %s is less than Timeout %s: an extension could never reach the first timeout_at", FormatDuration(p.MaxTimeout), FormatDuration(p.Timeout))
	}
	if p.MaxRetryAfter < 0 {
		return fmt.Errorf("MaxRetryAfter cannot be negative (got %s)", p.MaxRetryAfter)
	}
	if err := p.Guard.Validate(); err != nil {
		return fmt.Errorf("Guard: %w", err)
	}
	if err := p.Catchup.Validate(); err != nil {
		return err
	}
	if p.Spread.Window < 0 {
		return fmt.Errorf("Spread.Window cannot be negative (got %s)", p.Spread.Window)
	}
	for _, r := range []struct{ field, text string }{{"DisabledReason", p.DisabledReason}, {"PermanentReason", p.PermanentReason}} {
		for _, ph := range placeholderRE.FindAllString(r.text, -1) {
			if ph != "{kind}" && ph != "{attempts}" {
				return fmt.Errorf("%s %q: unknown placeholder %s (use {kind} and {attempts})", r.field, r.text, ph)
			}
		}
		if n := utf8.RuneCountInString(r.text); n > MaxDisabledReasonLen {
			return fmt.Errorf("%s is %d characters long, longer than the column's %d", r.field, n, MaxDisabledReasonLen)
		}
	}
	return nil
}

// Failure is a failed attempt as a worker reports it.
type Failure struct {
	// Reason is the technical reason, stored in refresh_last_error.
	Reason string
	// UserFriendlyReason is shown in the application's UI when Permanent;
	// when empty, Policy.PermanentReason is shown instead (never Reason).
	UserFriendlyReason string
	// Permanent: the input itself is bad; retrying cannot help.
	Permanent bool
	// RetryAfter is the worker's Retry-After: nothing is scheduled earlier
	// than now + RetryAfter. Negative counts as 0; more than
	// Policy.MaxRetryAfter counts as MaxRetryAfter.
	RetryAfter time.Duration
}

// Branch is the branch a failure decision took (docs/schedules.md, "Retries respect the schedule").
type Branch string

// The failure branches.
const (
	// BranchRetry: refresh_at is the retry time now + delay.
	BranchRetry Branch = "retry"
	// BranchPlanned: the retry could still run at the next planned
	// occurrence (or would start after it), so that occurrence serves as the
	// retry.
	BranchPlanned Branch = "planned"
	// BranchDisabled: the model is disabled, see Decision.Permanent and
	// Decision.GaveUp.
	BranchDisabled Branch = "disabled"
)

// String returns the branch name, as used in logs and metrics labels.
func (b Branch) String() string { return string(b) }

// Decision explains a failure transition so that the shell can count and log
// it. Times are zero where they do not apply.
type Decision struct {
	Branch Branch
	// Permanent: disabled because the worker reported a permanent failure.
	Permanent bool
	// GaveUp: disabled because the retry policy gave up (attempts or age).
	GaveUp bool
	// Incident: the failure came during an incident (Policy.Incident): it
	// was not counted and could not disable the model.
	Incident bool
	// Backoff is the retry policy's range for this failure (before
	// RetryAfter); zero when disabled.
	Backoff Backoff
	// Delay is max(Backoff.Pick(u), RetryAfter).
	Delay time.Duration
	// RetryAt is now + Delay.
	RetryAt time.Time
	// PlannedAt is the first occurrence strictly after now and not before
	// now + RetryAfter; zero when the rule has none left.
	PlannedAt time.Time
	// RefreshAt is the new refresh_at: RetryAt, PlannedAt, or zero when
	// disabled.
	RefreshAt time.Time
	// Reason is one line for logs and explain: when disabled, the reason
	// stored in the state; otherwise why RefreshAt was chosen.
	Reason string
}

// Start begins an attempt with the given uid (an xid made by the shell):
// attempt_no+1, attempt_at = now, timeout_at = refresh_at = now + Timeout, and
// the status is cleared. So a running attempt is noticed at timeout_at if
// its worker never answers.
func (p Policy) Start(s State, now time.Time, uid string) State {
	return p.WithDefaults().start(s, now, uid)
}

// start is Start under p with its defaults already set (Due's).
func (p Policy) start(s State, now time.Time, uid string) State {
	p.startIn(&s, now, uid)
	return s
}

// startIn is start on *s in place (DueInPlace's).
func (p *Policy) startIn(s *State, now time.Time, uid string) {
	s.AttemptUID = uid
	s.AttemptNo++
	s.AttemptAt = now
	s.TimeoutAt = now.Add(p.Timeout)
	s.RefreshAt = s.TimeoutAt
	s.Status = ""
}

// success ends the current attempt successfully at now: the attempt, the
// failing run and the status are cleared, last_success_at = now and
// refresh_at is the first occurrence of sched strictly after now (zero when
// the rule has none left; the row is disabled with the schedule's error,
// also returned, when its next occurrence lies beyond what sched computes,
// see CheckedNexter). The caller checks that the result belongs to the
// current attempt; Apply then stores the result's own status, if any.
func success(s State, now time.Time, sched Nexter) (State, error) {
	s.AttemptUID = ""
	s.Status = ""
	s.TimeoutAt = time.Time{}
	s.AttemptNo = 0
	s.FailingSince = time.Time{}
	s.LastError = ""
	s.LastSuccessAt = now
	return planNext(s, now, sched)
}

// Failure ends the current attempt with f at now and decides what comes next
// (see docs/schedules.md): the status is cleared, f.Reason becomes
// last_error; then disable (permanent failure, or the retry policy gives up
// at attempt s.AttemptNo after failing since failing_since), or schedule the
// retry aligned to sched. u in [0, 1) is the randomness for jitter (use 0
// without jitter). The caller checks that f belongs to the current attempt.
//
// Alignment, with floor = now + RetryAfter and timeout = p.Timeout:
// delay = max(policy delay, RetryAfter), retry = now + delay, planned = first
// occurrence > now and >= floor. No planned → retry; retry + timeout > planned
// → planned (the planned refresh serves as the retry); else retry. During an
// incident (p.Incident, guard on) a non-permanent failure never disables:
// its attempt does not count (attempt_no goes back by one), the policy's
// give-up is ignored, and the delay is at least Guard.Retry (default 1m),
// aligned the same way; a permanent failure still disables. So with a
// daily 14:00 rule and a 1h timeout a retry due at 13:05 waits for 14:00, one
// due at 12:59 runs, and one due at 13:00 (ending exactly at 14:00) runs.
func (p Policy) Failure(s State, now time.Time, f Failure, sched Nexter, u float64) (State, Decision) {
	p = p.WithDefaults()
	s.AttemptUID = ""
	s.TimeoutAt = time.Time{}
	s.Status = ""
	s.LastError = Truncate(f.Reason, MaxLastErrorLen)
	if s.FailingSince.IsZero() {
		s.FailingSince = cmp.Or(s.AttemptAt, now)
	}

	if f.Permanent {
		reason := f.UserFriendlyReason
		if strings.TrimSpace(reason) == "" {
			// The technical reason is for operators (last_error), not for
			// the application's users.
			reason = p.reason(p.PermanentReason, s.AttemptNo)
		}
		s = Disable(s, now, reason)
		return s, Decision{Branch: BranchDisabled, Permanent: true, Reason: s.DisabledReason}
	}

	n := max(s.AttemptNo, 1)
	b := p.Retry.Delay(n, now.Sub(s.FailingSince))
	incident := p.Incident && !p.Guard.Off
	if b.GiveUp && !incident {
		s = Disable(s, now, p.reason(p.DisabledReason, n))
		return s, Decision{Branch: BranchDisabled, GaveUp: true, Reason: s.DisabledReason}
	}

	retryAfter := min(max(f.RetryAfter, 0), p.MaxRetryAfter)
	d := Decision{Backoff: b, Delay: max(b.Pick(u), retryAfter)}
	if incident {
		// Not the model's fault: the attempt does not count, nothing gives
		// up, and the retry waits at least Guard.Retry so that rows do not
		// spin against a dead upstream.
		s.AttemptNo = max(s.AttemptNo-1, 0)
		d.Incident = true
		if b.GiveUp {
			d.Backoff = Backoff{}
		}
		d.Delay = max(d.Delay, p.Guard.Retry)
	}
	d.RetryAt = now.Add(d.Delay)
	if retryAfter > 0 {
		// The first occurrence at or after floor; floor > now.
		d.PlannedAt = sched.Next(now.Add(retryAfter).Add(-time.Nanosecond))
	} else {
		d.PlannedAt = sched.Next(now)
	}
	switch {
	case d.PlannedAt.IsZero():
		d.Branch, d.RefreshAt = BranchRetry, d.RetryAt
		d.Reason = fmt.Sprintf("retry after %s; the rule has no occurrence left", FormatDuration(d.Delay))
	case d.RetryAt.Add(p.Timeout).After(d.PlannedAt):
		d.Branch, d.RefreshAt = BranchPlanned, d.PlannedAt
		if d.RetryAt.Before(d.PlannedAt) {
			d.Reason = fmt.Sprintf("a retry after %s could still run (timeout %s) at the planned %s, which serves as the retry",
				FormatDuration(d.Delay), FormatDuration(p.Timeout), d.PlannedAt.UTC().Format(time.RFC3339))
		} else {
			d.Reason = fmt.Sprintf("a retry after %s would start at or after the planned %s, which serves as the retry",
				FormatDuration(d.Delay), d.PlannedAt.UTC().Format(time.RFC3339))
		}
	default:
		d.Branch, d.RefreshAt = BranchRetry, d.RetryAt
		d.Reason = fmt.Sprintf("retry after %s ends (timeout %s) by the planned %s",
			FormatDuration(d.Delay), FormatDuration(p.Timeout), d.PlannedAt.UTC().Format(time.RFC3339))
	}
	if incident {
		d.Reason = "incident, the attempt does not count: " + d.Reason
	}
	s.RefreshAt = d.RefreshAt
	return s, d
}

// TimedOut declares the running attempt failed at now (its timeout_at has
// come) with the reason "timed out after <Timeout>" ("timed out after
// <its whole length> (lease extended)" when a worker extended it), a
// non-permanent failure without Retry-After. When the resulting s.RefreshAt is not after now, the
// shell starts the next attempt in the same pass.
func (p Policy) TimedOut(s State, now time.Time, sched Nexter, u float64) (State, Decision) {
	p = p.WithDefaults()
	return p.Failure(s, now, Failure{Reason: p.timeoutReason(s)}, sched, u)
}

// TimeoutReason is the last_error of a timed-out attempt: "timed out after 1h".
func TimeoutReason(timeout time.Duration) string {
	return "timed out after " + FormatDuration(timeout)
}

// SetStatus stores a worker's status text, truncated to MaxStatusLen. It is
// only meaningful for the current attempt: the caller checks the attempt uid.
func SetStatus(s State, text string) State {
	s.Status = Truncate(text, MaxStatusLen)
	return s
}

// Disable disables refresh since now until the user updates the model, with
// reason (truncated to MaxDisabledReasonLen) for the UI. Nothing stays
// planned and a running attempt is forgotten (its result becomes stale).
func Disable(s State, now time.Time, reason string) State {
	s.DisabledAt = now
	s.DisabledReason = Truncate(reason, MaxDisabledReasonLen)
	s.RefreshAt = time.Time{}
	s.AttemptUID = ""
	s.TimeoutAt = time.Time{}
	return s
}

// invalidSchedulePrefix begins every InvalidScheduleReason: Explain tells
// a model disabled for its rule by it.
const invalidSchedulePrefix = "Invalid refresh schedule: "

// InvalidScheduleReason is the disabled reason for a rule that cannot be
// used: "Invalid refresh schedule: <err>".
func InvalidScheduleReason(err error) string {
	why := "empty rule"
	if err != nil {
		why = err.Error()
	}
	return invalidSchedulePrefix + why
}

// DisableInvalidSchedule disables the model because its rule is unparsable
// or empty (err from ParseSchedule; nil means empty), with
// InvalidScheduleReason(err) as the disabled reason and as last_error, so
// operators see the parser's message too. A bad rule disables one model; it
// never fails a batch. Due and Apply call it.
func DisableInvalidSchedule(s State, now time.Time, err error) State {
	reason := InvalidScheduleReason(err)
	s = Disable(s, now, reason)
	s.LastError = Truncate(reason, MaxLastErrorLen)
	return s
}

// Enable re-enables the model at now (the user saved it, or asked for a
// refresh now): not disabled, attempt_no 0, no failing run, no running
// attempt (a result of the old attempt becomes stale; timeout_at is cleared
// with it) and refresh_at = now.
func Enable(s State, now time.Time) State {
	s.DisabledAt = time.Time{}
	s.DisabledReason = ""
	s.AttemptNo = 0
	s.FailingSince = time.Time{}
	s.AttemptUID = ""
	s.TimeoutAt = time.Time{}
	s.RefreshAt = now
	return s
}

// reason fills the placeholders of a configured reason.
// TriggerAction is what Trigger did.
type TriggerAction string

// The actions of Trigger.
const (
	// TriggerRunning: an attempt is running; the row was left alone.
	TriggerRunning TriggerAction = "running"
	// TriggerEnabled: the row was disabled and has been enabled (Enable).
	TriggerEnabled TriggerAction = "enabled"
	// TriggerDue: refresh_at = now; the failure counters are kept.
	TriggerDue TriggerAction = "due"
)

// Trigger asks for a refresh at now (an operator's "refresh now"). A row
// whose attempt runs is left alone, so no second attempt starts; a disabled
// row is enabled (Enable: the user asked for a refresh); any other row is
// made due at now and keeps its attempt count and failing run, so a failing
// row still gives up when the retry policy says so.
func Trigger(s State, now time.Time) (State, TriggerAction) {
	switch {
	case s.Running():
		return s, TriggerRunning
	case s.Disabled():
		return Enable(s, now), TriggerEnabled
	default:
		s.RefreshAt = now
		return s, TriggerDue
	}
}

func (p Policy) reason(text string, attempts int) string {
	return strings.NewReplacer("{kind}", p.Kind, "{attempts}", strconv.Itoa(attempts)).Replace(text)
}

// Truncate makes s valid UTF-8 (invalid bytes become U+FFFD) and at most n
// characters long; a cut text ends with "…" so a reader sees it was cut.
// MySQL counts VARCHAR lengths in characters, so the result fits a
// VARCHAR(n) utf8mb4 column.
func Truncate(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if n <= 0 {
		return ""
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, count := 0, 0
	for i = range s {
		if count == n-1 {
			break
		}
		count++
	}
	return s[:i] + "…"
}
