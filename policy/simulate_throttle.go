package policy

import "time"

// ThrottleOptions says what SimulateThrottled shows.
type ThrottleOptions struct {
	// From is when the model is due: its attempt starts then.
	From time.Time
	// Run is how long the attempt runs before the worker answers.
	Run time.Duration
	// RetryAfter is the answer's retry_after_seconds; 0 for none.
	RetryAfter time.Duration
}

// ThrottleSimulation is what a throttled answer does to a model and to its
// throttle group, each step decided by the same functions the service uses.
type ThrottleSimulation struct {
	// Start is the dispatcher's decision at From (Due) and Started the model
	// running after it.
	Start   DueDecision
	Started State
	// AnsweredAt is when the answer is read (From + Run).
	AnsweredAt time.Time
	// Answer is the poller's decision on the answer (Apply) and After the
	// model after it. An answer read at or after the attempt's timeout is
	// late: the attempt timed out instead (Answer.Outcome OutcomeLate).
	Answer ApplyDecision
	After  State
	// HoldUntil is the end of the group's hold the answer asks for
	// (GroupHold); zero when it holds none (no RetryAfter, or a late
	// answer, which is not applied).
	HoldUntil time.Time
	// HeldAt is the schedule's first occurrence after AnsweredAt when it
	// falls inside the hold: another row of the group due then is held
	// (Held: HeldDecision, refresh_at in HeldState), without an attempt.
	// Zero when no occurrence falls inside the hold.
	HeldAt       time.Time
	HeldDecision DueDecision
	HeldState    State
	// Next is the dispatcher's decision when the model is due again
	// (After.RefreshAt, past the hold) and NextState the model after it;
	// Next.Action is "" when nothing is planned.
	Next      DueDecision
	NextState State
}

// SimulateThrottled simulates a model due at o.From whose attempt is
// answered after o.Run as throttled with its group (a failure with
// "scope":"group" and retry_after_seconds o.RetryAfter): the dispatcher
// starts it (Due), the poller applies the answer (Apply, hence Throttled)
// and holds the group (GroupHold), another row of the group that falls due
// during the hold waits (Held), and the model starts again when due (Due,
// then Held with the hold, which has ended by then). Nothing is random:
// jitter draws are 0.
func SimulateThrottled(sched Nexter, p Policy, o ThrottleOptions) ThrottleSimulation {
	p = p.WithDefaults()
	var sim ThrottleSimulation
	const uid = "simulated"
	sim.Started, sim.Start = p.Due(State{RefreshAt: o.From}, o.From, sched, nil, uid, 0)
	sim.AnsweredAt = o.From.Add(max(o.Run, 0))
	r := Result{AttemptUID: uid, Type: ResultFailure, Scope: ScopeGroup, RetryAfter: o.RetryAfter,
		Reason: "throttled with its group (simulated)"}
	sim.After, sim.Answer = p.Apply(sim.Started, r, sim.AnsweredAt, sched, nil, 0)
	if sim.Answer.Outcome == OutcomeApplied {
		sim.HoldUntil, _ = p.GroupHold(r, sim.AnsweredAt)
	}
	if occ := sched.Next(sim.AnsweredAt); !occ.IsZero() && occ.Before(sim.HoldUntil) {
		s, d := p.Due(State{RefreshAt: occ}, occ, sched, nil, "other", 0)
		sim.HeldAt = occ
		sim.HeldState, sim.HeldDecision = Held(s, d, sim.HoldUntil, occ)
	}
	if at := sim.After.RefreshAt; !at.IsZero() && !sim.After.Disabled() {
		s, d := p.Due(sim.After, at, sched, nil, uid+"-2", 0)
		sim.NextState, sim.Next = Held(s, d, sim.HoldUntil, at)
	}
	return sim
}
