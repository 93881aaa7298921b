package models

import (
	"time"

	"github.com/refresher/refresher/policy"
)

// DefaultLateAfter is the late threshold's default: a row due for this
// long is late.
const DefaultLateAfter = time.Minute

// Has reports whether a row whose state is st is in state s at now, a row
// due for lateAfter or longer being late. It is the one definition of the
// states: each driver's Inspector computes the same in SQL (Counts, List),
// and the conformance suite (storetest) checks that they agree with it on
// the edge rows. A row may be in several states (a running row that has
// been failing is both); StateAll (or "") holds every row, an unknown state none.
func (s RowState) Has(st policy.State, now time.Time, lateAfter time.Duration) bool {
	switch s {
	case StateDue:
		return !st.RefreshAt.IsZero() && !st.RefreshAt.After(now)
	case StateLate:
		return !st.RefreshAt.IsZero() && !st.RefreshAt.After(now.Add(-lateAfter))
	case StateRunning:
		return st.Running()
	case StateFailing:
		return !st.FailingSince.IsZero() && !st.Disabled()
	case StateDisabled:
		return st.Disabled()
	case StateAll, "":
		return true
	}
	return false
}

// StateWord names the most telling state of a row, as the API and the
// dashboard show it: disabled, running, idle (nothing planned), late, due,
// failing (not due, a retry planned) or scheduled, the first that holds.
func StateWord(st policy.State, now time.Time, lateAfter time.Duration) string {
	switch {
	case StateDisabled.Has(st, now, lateAfter):
		return "disabled"
	case StateRunning.Has(st, now, lateAfter):
		return "running"
	case st.RefreshAt.IsZero():
		return "idle"
	case StateLate.Has(st, now, lateAfter):
		return "late"
	case StateDue.Has(st, now, lateAfter):
		return "due"
	case StateFailing.Has(st, now, lateAfter):
		return "failing"
	}
	return "scheduled"
}
