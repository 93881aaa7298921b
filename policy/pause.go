package policy

import "time"

// Pause is the operator's pause of one model (docs/operating.md, "Pause"),
// distinct from the user's disable: it plans nothing (RefreshAt = zero), so
// the dispatcher does not claim the row, and it changes no other column.
//
//   - A running attempt is left running: its result still applies (the
//     poller matches its attempt uid), and whatever that result plans the
//     dispatcher pauses again when it claims the row (the shell keeps the
//     list of paused models and calls Pause on each one it claims). While
//     paused, the attempt does not time out; Resume plans its timeout again.
//   - A disabled row stays disabled; pausing and resuming do not enable it.
//   - The failure counters are kept, so a failing model resumes failing.
//
// Pause is idempotent.
func Pause(s State) State {
	s.RefreshAt = time.Time{}
	return s
}

// Resume ends the operator's pause of one model at now and plans what comes
// next, never the runs missed while paused:
//
//   - a disabled row stays disabled, with nothing planned;
//   - a row whose attempt still runs is due at its timeout (TimeoutAt),
//     when the dispatcher declares it timed out as usual: at once if that
//     passed during the pause;
//   - a row without a schedule (sched == nil: its rule is unparsable or
//     empty) is due at now, so that the dispatcher disables it with the
//     usual reason;
//   - any other row is due at its schedule's next occurrence after now
//     (nothing planned when the rule has none left). A retry that was
//     planned before the pause is not kept: the next occurrence replaces it,
//     and the failure counters carry on from where they were.
func Resume(s State, now time.Time, sched Nexter) State {
	switch {
	case s.Disabled():
		s.RefreshAt = time.Time{}
	case s.Running():
		s.RefreshAt = s.TimeoutAt
	case sched == nil:
		s.RefreshAt = now
	default:
		s, _ = planNext(s, now, sched)
	}
	return s
}
