package policy

import "time"

// CheckedNexter is a Nexter that also tells a rule that ended from one
// whose next occurrence lies beyond what it computes: NextChecked returns
// the zero time and an error then (schedule.Schedule: ErrTooFar, for a
// sub-daily rule whose next occurrence lies more than 100 years ahead; see
// docs/schedules.md, "Limits"). The transitions that plan a
// row's next run (a success, a misfire skip in Due, Resume) disable the row
// with InvalidScheduleReason(err) instead of leaving it with nothing
// planned as if its rule had ended. Wrappers (Spreaded) pass it on.
type CheckedNexter interface {
	Nexter
	NextChecked(after time.Time) (time.Time, error)
}

// nextChecked is sched.NextChecked when sched is a CheckedNexter, and
// sched.Next with a nil error otherwise.
func nextChecked(sched Nexter, after time.Time) (time.Time, error) {
	if c, ok := sched.(CheckedNexter); ok {
		return c.NextChecked(after)
	}
	return sched.Next(after), nil
}

// planNext sets s.RefreshAt to sched's first occurrence after now, or
// disables s (DisableInvalidSchedule) when sched cannot compute it (see
// CheckedNexter); err is that error.
func planNext(s State, now time.Time, sched Nexter) (State, error) {
	next, err := nextChecked(sched, now)
	if err != nil {
		return DisableInvalidSchedule(s, now, err), err
	}
	s.RefreshAt = next
	return s, nil
}
