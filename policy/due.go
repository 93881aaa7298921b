package policy

import "time"

// DueAction is what Due did with one row.
type DueAction string

// The actions of Due.
const (
	// DueStarted: an attempt started (after the running one timed out, when
	// DueDecision.TimedOut).
	DueStarted DueAction = "started"
	// DueWaiting: nothing started: the row is not due (refresh_at is NULL or
	// after now), or the running attempt timed out and the retry policy
	// planned the next one later, or disabled the row (see
	// DueDecision.Timeout).
	DueWaiting DueAction = "waiting"
	// DueDisabledRow: the row is disabled and the application set refresh_at
	// without enabling it; refresh_at is cleared until it is enabled.
	DueDisabledRow DueAction = "disabled_row"
	// DueInvalidSchedule: the row's rule is unparsable or empty; the row is
	// disabled (DisableInvalidSchedule).
	DueInvalidSchedule DueAction = "invalid_schedule"
	// DueMisfireSkipped: the row had been due for longer than the kind's
	// catchup window and misfire is skip: it did not start; refresh_at
	// moved to its next occurrence after now (see DueDecision.Misfire).
	DueMisfireSkipped DueAction = "misfire_skipped"
)

// DueDecision says what Due did, for the shell to count and log.
type DueDecision struct {
	Action DueAction
	// AttemptUID is the uid of the attempt started (DueStarted), "" otherwise.
	AttemptUID string
	// TimedOut: the running attempt was declared failed first, with
	// TimeoutReason; Timeout is that failure's decision.
	TimedOut bool
	Timeout  Decision
	// ScheduleError is the parser's message (DueInvalidSchedule); "empty
	// rule" for a rule without occurrences.
	ScheduleError string
	// BeforeStart is the state the attempt started from (DueStarted): the
	// claimed state, after the timeout when TimedOut. The shell restores it
	// when the job cannot be pushed, so the attempt does not count.
	BeforeStart State
	// Misfire is set when the row had been due for longer than the catchup
	// window: MisfireSkip (DueMisfireSkipped) or MisfireRunOnce
	// (DueStarted); MissedSince is the refresh_at it had been due since.
	Misfire     Misfire
	MissedSince time.Time
}

// Due is the dispatcher's transition of one row it claimed at now, the
// whole of it (see docs/schedules.md):
//
//  1. a row whose refresh_at is NULL or after now is left alone
//     (DueWaiting);
//  2. a disabled row (the application set refresh_at without enabling it)
//     gets refresh_at = NULL (DueDisabledRow);
//  3. schedErr != nil or sched == nil (the row's rule is unparsable or
//     empty) disables the row (DueInvalidSchedule);
//  4. a row that is not running and has been due for longer than the
//     kind's catchup window (now - refresh_at > Catchup.Window, when set)
//     misfires: with misfire skip it does not start and refresh_at becomes
//     sched.Next(now), its next occurrence (zero when the rule has none
//     left; the attempt count and failing run are kept, so the occurrence
//     serves as a missed retry too) (DueMisfireSkipped); with run_once it
//     starts once now, as in 6. Missed occurrences are never run one by
//     one: at most one attempt starts per pass;
//  5. a running attempt times out: TimedOut, with the jitter draw u (a
//     timeout is never a misfire, however long ago timeout_at was);
//  6. if the row is then due (refresh_at <= now) and not disabled, the
//     attempt uid starts (Start): DueStarted, so a timed-out attempt whose
//     retry is due at once restarts in the same pass.
//
// uid is the xid the shell made for a new attempt; it is used only when one
// starts. Due is pure: the same inputs give the same outputs.
func (p Policy) Due(s State, now time.Time, sched Nexter, schedErr error, uid string, u float64) (State, DueDecision) {
	var d DueDecision
	p.DueInPlace(&s, now, sched, schedErr, uid, u, &d)
	return s, d
}

// DueInPlace is Due applied to *s in place, its decision written to *d:
// the dispatcher's form, which runs for every row it claims and so copies
// neither the state (216 bytes) nor the decision (456 bytes) in and out,
// nor the policy when it has its defaults already (WithDefaults). s must
// not point into *d (such as &d.BeforeStart), which is reset first.
func (p *Policy) DueInPlace(s *State, now time.Time, sched Nexter, schedErr error, uid string, u float64, d *DueDecision) {
	if !p.hasDefaults() {
		q := p.WithDefaults()
		p = &q
	}
	*d = DueDecision{}
	if s.RefreshAt.IsZero() || s.RefreshAt.After(now) {
		d.Action = DueWaiting
		return
	}
	if s.Disabled() {
		s.RefreshAt = time.Time{}
		d.Action = DueDisabledRow
		return
	}
	if schedErr != nil || sched == nil {
		*s = DisableInvalidSchedule(*s, now, schedErr)
		d.Action, d.ScheduleError = DueInvalidSchedule, "empty rule"
		if schedErr != nil {
			d.ScheduleError = schedErr.Error()
		}
		return
	}
	if m, ok := p.Catchup.Misfired(*s, now); ok {
		d.Misfire, d.MissedSince = m, s.RefreshAt
		if m == MisfireSkip {
			next, err := planNext(*s, now, sched)
			*s = next
			if err != nil {
				d.Action, d.ScheduleError = DueInvalidSchedule, err.Error()
				return
			}
			d.Action = DueMisfireSkipped
			return
		}
	}
	if s.Running() {
		d.TimedOut = true
		*s, d.Timeout = p.TimedOut(*s, now, sched, u)
	}
	if s.RefreshAt.IsZero() || s.RefreshAt.After(now) || s.Disabled() {
		d.Action = DueWaiting
		return
	}
	d.BeforeStart = *s
	p.startIn(s, now, uid) // p has its defaults
	d.Action, d.AttemptUID = DueStarted, uid
}
