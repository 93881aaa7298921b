package operator

import (
	"fmt"
	"strings"
	"time"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/schedule"
)

// Timeline is what a model did last and will do next, as `refresher
// explain` computes it: the schedule's next occurrences and, should the next
// attempts fail, the retry policy's plan from the model's current attempt
// count.
type Timeline struct {
	// LastAttempt is when the last attempt started (attempt_at); nil when
	// none.
	LastAttempt *time.Time `json:"last_attempt"`
	// NextRefresh is refresh_at: the next start, or the running attempt's
	// timeout; nil when nothing is planned.
	NextRefresh *time.Time `json:"next_refresh"`
	// NextIsPlanned is set when NextRefresh is an occurrence of the schedule
	// (not a retry).
	NextIsPlanned bool `json:"next_is_planned"`
	// Occurrences are the schedule's next occurrences after now.
	Occurrences []time.Time `json:"occurrences"`
	// RetryPlan is what the next failures would do, from NextRefresh (each
	// failing at once); empty for a disabled model or when nothing is
	// planned.
	RetryPlan []PlannedRetry `json:"retry_plan"`
	// ScheduleError is set when the row's refresh_rrule does not parse.
	ScheduleError string `json:"schedule_error,omitempty"`
	// SpreadOffsetSeconds is the row's offset when its kind spreads it
	// (spread:); every time above includes it.
	SpreadOffsetSeconds *float64 `json:"spread_offset_seconds,omitempty"`
	// Blocked says why the occurrences and the next refresh above will not
	// run as things stand: "disabled" (until the user updates it or an
	// operator enables it), "paused" (the model, until it is resumed),
	// "kind paused" (until the kind is resumed); absent when they will.
	// The retry plan is then empty.
	Blocked string `json:"blocked,omitempty"`
	// Misfire is set when the row has been due for longer than its kind's
	// catchup_window: what the dispatcher will do with it (skip or
	// run_once).
	Misfire string `json:"misfire,omitempty"`
}

// PlannedRetry is one simulated failure of the retry plan.
type PlannedRetry struct {
	AttemptNo int        `json:"attempt_no"`
	StartedAt time.Time  `json:"started_at"`
	Decision  string     `json:"decision"`
	RefreshAt *time.Time `json:"refresh_at"`
	Reason    string     `json:"reason"`
}

// timelineLen bounds the occurrences and retries shown.
const timelineLen = 5

// heldTimeline computes a model's Timeline at now, its throttle group held
// until heldUntil (zero: not held): its retry plan starts at the hold's end
// when refresh_at comes before it, as the dispatcher holds the row until
// then (policy.Held).
func heldTimeline(k *Kind, row models.Row, now, heldUntil time.Time) Timeline {
	st := row.State
	tl := Timeline{LastAttempt: tp(st.AttemptAt), NextRefresh: tp(st.RefreshAt), Occurrences: []time.Time{}, RetryPlan: []PlannedRetry{}}
	var sched policy.Nexter = k.Schedule
	if row.Rule != "" {
		s, err := schedule.Parse(row.Rule)
		if err != nil {
			tl.ScheduleError = strings.ReplaceAll(err.Error(), "\n", " ")
			return tl
		}
		sched = s
	}
	if sched == nil || sched == (*schedule.Schedule)(nil) {
		return tl
	}
	if off := k.Policy.Spread.Offset(k.Name, row.Key, row.Rule != ""); off > 0 {
		secs := off.Seconds()
		tl.SpreadOffsetSeconds = &secs
		sched = policy.Spreaded(sched, off)
	}
	if m, ok := k.Policy.Catchup.Misfired(st, now); ok && !st.Disabled() {
		tl.Misfire = string(m)
	}
	sim := policy.Simulate(sched, k.Policy, policy.SimulateOptions{From: now, Occurrences: timelineLen})
	tl.Occurrences = append(tl.Occurrences, sim.Occurrences...)
	if !st.RefreshAt.IsZero() && !st.Running() {
		tl.NextIsPlanned = sched.Next(st.RefreshAt.Add(-time.Nanosecond)).Equal(st.RefreshAt)
	}
	if st.Disabled() || st.RefreshAt.IsZero() {
		return tl
	}
	// The retry plan: from the model's state, each attempt fails at once at
	// the time it starts (a running attempt fails at its timeout).
	p := k.Policy
	s := st
	if !s.Running() && s.RefreshAt.Before(heldUntil) {
		s.RefreshAt = heldUntil
	}
	for range timelineLen {
		var d policy.Decision
		start := s.RefreshAt
		if s.Running() {
			s, d = p.TimedOut(s, s.TimeoutAt, sched, 0)
		} else {
			s = p.Start(s, start, "plan")
			s, d = p.Failure(s, start, policy.Failure{Reason: "planned failure"}, sched, 0)
		}
		tl.RetryPlan = append(tl.RetryPlan, PlannedRetry{AttemptNo: s.AttemptNo, StartedAt: start.UTC(),
			Decision: string(d.Branch), RefreshAt: tp(d.RefreshAt), Reason: d.Reason})
		if s.Disabled() || s.RefreshAt.IsZero() {
			break
		}
	}
	return tl
}

// clock formats t for a summary: "14:00" on now's day (UTC), "Mar 4 14:00"
// otherwise, "Mar 4 2025 14:00" in another year.
func clock(t, now time.Time) string {
	t, now = t.UTC(), now.UTC()
	switch {
	case t.YearDay() == now.YearDay() && t.Year() == now.Year():
		return t.Format("15:04")
	case t.Year() == now.Year():
		return t.Format("Jan 2 15:04")
	}
	return t.Format("Jan 2 2006 15:04")
}

func plural(n int, one string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %ss", n, one)
}

// summary says in one line of plain words where a model stands, e.g.
// "failing since 09:12, 3 attempts; next try at 14:00, a planned run of the
// schedule". Times are UTC.
//
// A paused model (paused) says that nothing is planned while it is paused,
// whatever refresh_at holds (a running attempt's result may have planned
// a run that the dispatcher will not start).
func summary(row models.Row, tl Timeline, now time.Time, lateAfter time.Duration, paused bool) string {
	st := row.State
	var parts []string
	switch {
	case st.Disabled():
		s := "disabled since " + clock(st.DisabledAt, now)
		if st.DisabledReason != "" {
			s += ": " + st.DisabledReason
		}
		parts = append(parts, s, "waits for the user to update it (or an operator to enable it)")
		return strings.Join(parts, "; ") + " (UTC)"
	case st.Running():
		s := fmt.Sprintf("running attempt %d since %s", st.AttemptNo, clock(st.AttemptAt, now))
		if st.Status != "" {
			s += " (" + st.Status + ")"
		}
		parts = append(parts, s, "times out at "+clock(st.TimeoutAt, now))
		if !st.FailingSince.IsZero() {
			parts = append(parts, "failing since "+clock(st.FailingSince, now))
		}
		return strings.Join(parts, "; ") + " (UTC)"
	case !st.FailingSince.IsZero():
		parts = append(parts, fmt.Sprintf("failing since %s, %s", clock(st.FailingSince, now), plural(st.AttemptNo, "attempt")))
	case !st.LastSuccessAt.IsZero():
		parts = append(parts, "refreshed at "+clock(st.LastSuccessAt, now))
	default:
		parts = append(parts, "never refreshed yet")
	}
	switch {
	case paused:
		parts = append(parts, "nothing is planned while paused; resuming plans the next occurrence")
	case st.RefreshAt.IsZero():
		if tl.ScheduleError != "" {
			parts = append(parts, "nothing planned: its schedule does not parse")
		} else {
			parts = append(parts, "nothing planned: the schedule has no more occurrences")
		}
	case !st.RefreshAt.After(now):
		s := "due since " + clock(st.RefreshAt, now)
		if late := now.Sub(st.RefreshAt); late > lateAfter {
			s += ", late by " + policy.FormatDuration(late.Truncate(time.Second))
		}
		parts = append(parts, s)
		switch policy.Misfire(tl.Misfire) {
		case policy.MisfireSkip:
			parts = append(parts, "longer than the catchup window: it will not start late but wait for its next occurrence")
		case policy.MisfireRunOnce:
			parts = append(parts, "longer than the catchup window: it will start once (misfire run_once)")
		}
	default:
		what := "next refresh"
		if !st.FailingSince.IsZero() {
			what = "next try"
		}
		why := "asked for outside the schedule"
		if !st.FailingSince.IsZero() {
			why = "a retry"
		}
		if tl.NextIsPlanned {
			why = "a planned run of the schedule"
		}
		parts = append(parts, fmt.Sprintf("%s at %s, %s", what, clock(st.RefreshAt, now), why))
	}
	return strings.Join(parts, "; ") + " (UTC)"
}
