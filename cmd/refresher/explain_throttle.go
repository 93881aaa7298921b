package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/refresher/refresher/policy"
)

// explain --throttled (docs/schedules.md, "Throttling shared by a group"): the first
// attempt is answered as throttled with its group, and policy.SimulateThrottled
// says what that does; this file only words it.

// explainThrottle is a --throttled simulation and the options it ran with.
type explainThrottle struct {
	retryAfter    time.Duration
	maxRetryAfter time.Duration
	sim           policy.ThrottleSimulation
}

// simulateThrottle parses --throttled and runs the simulation; nil without
// the flag.
func simulateThrottle(o explainOptions, p policy.Policy, sched policy.Nexter, from time.Time, run time.Duration) (*explainThrottle, error) {
	if o.throttled == "" {
		return nil, nil
	}
	ra, err := parseFlagDuration("throttled", o.throttled)
	if err != nil {
		return nil, err
	}
	if ra%time.Second != 0 {
		return nil, fmt.Errorf("--throttled %q: retry_after_seconds is a whole number of seconds (e.g. 15m or 900s)", o.throttled)
	}
	p = p.WithDefaults()
	if run >= p.Timeout {
		return nil, fmt.Errorf("--throttled with --run %s: the answer would come after the attempt's timeout (%s) and not apply; give a --run shorter than --timeout",
			policy.FormatDuration(run), policy.FormatDuration(p.Timeout))
	}
	return &explainThrottle{retryAfter: ra, maxRetryAfter: p.MaxRetryAfter,
		sim: policy.SimulateThrottled(sched, p, policy.ThrottleOptions{From: from, Run: run, RetryAfter: ra})}, nil
}

// lines words the simulation, one line a step.
func (th *explainThrottle) lines() (head string, lines []string) {
	s := th.sim
	head = fmt.Sprintf(`Throttled: attempt %d, started at %s, is answered at %s as throttled with its group ("scope":"group", retry_after_seconds %d):`,
		s.Started.AttemptNo, textTime(s.Start.BeforeStart.RefreshAt), textTime(s.AnsweredAt), int64(th.retryAfter/time.Second))
	if th.retryAfter > th.maxRetryAfter {
		lines = append(lines, fmt.Sprintf("retry_after_seconds is capped at max_retry_after (%s)", policy.FormatDuration(th.maxRetryAfter)))
	}
	if s.HoldUntil.IsZero() {
		lines = append(lines, "no retry_after_seconds: no group is held; the row waits "+policy.FormatDuration(policy.DefaultThrottleWait))
	} else {
		lines = append(lines, fmt.Sprintf("its group is held until %s: the dispatcher starts none of the group's rows before then", textTime(s.HoldUntil)))
	}
	row := fmt.Sprintf("this row: the attempt is not counted (attempt_no back to %d, no failing run starts), refresh_at %s",
		s.After.AttemptNo, textTime(s.After.RefreshAt))
	if !s.HeldAt.IsZero() {
		row += fmt.Sprintf("; its occurrences inside the wait (from %s) are served by that start", textTime(s.HeldAt))
	}
	lines = append(lines, row)
	switch {
	case !s.HeldAt.IsZero():
		lines = append(lines, fmt.Sprintf("another row of the group due at %s (the schedule's next occurrence) is held: refresh_at %s, no attempt counted",
			textTime(s.HeldAt), textTime(s.HeldState.RefreshAt)))
	case !s.HoldUntil.IsZero():
		lines = append(lines, "no occurrence of the schedule falls inside the hold")
	}
	if s.Next.Action == policy.DueStarted {
		lines = append(lines, fmt.Sprintf("next dispatch at %s, as attempt %d", textTime(s.NextState.AttemptAt), s.NextState.AttemptNo))
	}
	return head, lines
}

func (th *explainThrottle) writeText(b *strings.Builder) {
	head, lines := th.lines()
	b.WriteString(head + "\n")
	for _, l := range lines {
		b.WriteString("  " + l + "\n")
	}
	b.WriteString("\n")
}

// explainThrottleJSON is the "throttled" object of --json.
type explainThrottleJSON struct {
	StartedAt         string `json:"started_at"`
	AnsweredAt        string `json:"answered_at"`
	RetryAfterSeconds int64  `json:"retry_after_seconds"`
	// HoldUntil is the group's hold's end; null when none is held.
	HoldUntil *string `json:"hold_until"`
	// Decision and Reason are the row's ("throttled" when applied);
	// AttemptNo is its attempt_no after the answer, RefreshAt its next
	// refresh_at.
	Decision  string  `json:"decision"`
	Reason    string  `json:"reason"`
	AttemptNo int     `json:"attempt_no"`
	RefreshAt *string `json:"refresh_at"`
	// HeldOccurrence is the schedule's next occurrence when it falls inside
	// the hold, and HeldRefreshAt where a row of the group due then waits;
	// both null otherwise.
	HeldOccurrence *string `json:"held_occurrence"`
	HeldRefreshAt  *string `json:"held_refresh_at"`
	// NextDispatchAt and NextAttemptNo are the row's next start.
	NextDispatchAt *string `json:"next_dispatch_at"`
	NextAttemptNo  int     `json:"next_attempt_no"`
}

func (th *explainThrottle) json() *explainThrottleJSON {
	s := th.sim
	v := &explainThrottleJSON{StartedAt: *jsonTime(s.Start.BeforeStart.RefreshAt), AnsweredAt: *jsonTime(s.AnsweredAt),
		RetryAfterSeconds: int64(th.retryAfter / time.Second), HoldUntil: jsonTime(s.HoldUntil),
		Decision: string(s.Answer.Failure.Branch), Reason: s.Answer.Failure.Reason, AttemptNo: s.After.AttemptNo,
		RefreshAt: jsonTime(s.After.RefreshAt), HeldOccurrence: jsonTime(s.HeldAt), HeldRefreshAt: jsonTime(s.HeldState.RefreshAt)}
	if s.Next.Action == policy.DueStarted {
		v.NextDispatchAt, v.NextAttemptNo = jsonTime(s.NextState.AttemptAt), s.NextState.AttemptNo
	}
	return v
}
