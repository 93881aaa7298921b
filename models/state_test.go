package models_test

import (
	"strings"
	"testing"
	"time"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
)

// TestStates: the states of a row at their edges (a row due at now is due,
// one due at now - lateAfter is late, a disabled row is never failing), and
// the one word the API shows for each, the first state that holds in the
// order disabled, running, idle, late, due, failing, scheduled.
func TestStates(t *testing.T) {
	now := time.Date(2026, 3, 4, 14, 0, 0, 123456000, time.UTC)
	const lateAfter = time.Hour
	us := time.Microsecond
	for _, tc := range []struct {
		name   string
		st     policy.State
		states string // the states that hold, besides all
		word   string
	}{
		{"nothing planned", policy.State{}, "", "idle"},
		{"due at now", policy.State{RefreshAt: now}, "due", "due"},
		{"due just after now", policy.State{RefreshAt: now.Add(us)}, "", "scheduled"},
		{"due for lateAfter", policy.State{RefreshAt: now.Add(-lateAfter)}, "due late", "late"},
		{"due for just under lateAfter", policy.State{RefreshAt: now.Add(-lateAfter + us)}, "due", "due"},
		{"running", policy.State{AttemptUID: "a", RefreshAt: now.Add(time.Hour)}, "running", "running"},
		{"running, timed out long ago", policy.State{AttemptUID: "a", RefreshAt: now.Add(-2 * lateAfter)}, "due late running", "running"},
		{"failing, retry planned", policy.State{FailingSince: now, RefreshAt: now.Add(us)}, "failing", "failing"},
		{"failing and due", policy.State{FailingSince: now, RefreshAt: now}, "due failing", "due"},
		{"failing and running", policy.State{FailingSince: now, AttemptUID: "a", RefreshAt: now.Add(time.Hour)}, "running failing", "running"},
		{"disabled after failing", policy.State{FailingSince: now, DisabledAt: now}, "disabled", "disabled"},
		{"disabled with a refresh_at", policy.State{DisabledAt: now, RefreshAt: now.Add(-2 * lateAfter)}, "due late disabled", "disabled"},
	} {
		var got []string
		for _, s := range []models.RowState{models.StateDue, models.StateLate, models.StateRunning, models.StateFailing, models.StateDisabled} {
			if s.Has(tc.st, now, lateAfter) {
				got = append(got, string(s))
			}
		}
		if g := strings.Join(got, " "); g != tc.states {
			t.Errorf("%s: in states %q, want %q", tc.name, g, tc.states)
		}
		if !models.StateAll.Has(tc.st, now, lateAfter) || !models.RowState("").Has(tc.st, now, lateAfter) {
			t.Errorf("%s: not in all", tc.name)
		}
		if models.RowState("paused").Has(tc.st, now, lateAfter) {
			t.Errorf("%s: in an unknown state", tc.name)
		}
		if w := models.StateWord(tc.st, now, lateAfter); w != tc.word {
			t.Errorf("%s: word %q, want %q", tc.name, w, tc.word)
		}
	}
}
