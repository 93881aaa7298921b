package policy

import "time"

// Succeeded is what a success result r read at now writes to the row whose
// running attempt it answers, on time (before timeout_at), when sched is
// the row's schedule: the columns a success writes hold their new values
// in the returned State (no attempt, attempt_no 0, no failing run, no last
// error, last_success_at = now, refresh_at = sched's next occurrence after
// now, the result's status or none); the others (AttemptAt, DisabledAt,
// DisabledReason) are zero, as a success leaves them as they were (see
// WithSuccess). It needs nothing of the row but its schedule, so a store
// can write it without reading the row first, guarded by what Apply checks
// (the attempt UID, timeout_at, no rule of the row's own).
//
// err is sched's error when it cannot compute the next occurrence (see
// CheckedNexter): Apply then disables the row, which is not this.
func Succeeded(r Result, now time.Time, sched Nexter) (State, error) {
	w, err := success(State{}, now, sched)
	if err != nil {
		return State{}, err
	}
	if r.Status != "" {
		w = SetStatus(w, r.Status)
	}
	return w, nil
}

// WithSuccess returns s with what Succeeded returned, w, written over it:
// every column but AttemptAt, DisabledAt and DisabledReason, which keep
// s's values.
func WithSuccess(s, w State) State {
	w.AttemptAt, w.DisabledAt, w.DisabledReason = s.AttemptAt, s.DisabledAt, s.DisabledReason
	return w
}
