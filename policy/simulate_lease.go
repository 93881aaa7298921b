package policy

import (
	"slices"
	"time"
)

// LeaseAsk is one request for more time of a simulated attempt: After its
// start, the worker asks for For ("seconds").
type LeaseAsk struct {
	After, For time.Duration
}

// LeaseStep is what became of one LeaseAsk.
type LeaseStep struct {
	Ask LeaseAsk
	// At is when the request is read: the attempt's start + Ask.After.
	At time.Time
	// Decision is the poller's (Apply): applied, with the Lease, or late
	// (read at or after timeout_at: the attempt timed out, nothing
	// extended).
	Decision ApplyDecision
	// TimeoutAt is the attempt's timeout_at after the request; zero when
	// it came late.
	TimeoutAt time.Time
}

// LeaseSimulation is an attempt whose worker asks for more time and then
// stops answering (it was killed), each step decided by the functions the
// service uses.
type LeaseSimulation struct {
	// Started is the attempt that starts at From (Start).
	Started State
	// NextOccurrence is the rule's first occurrence after the start: no
	// lease reaches past it (zero when the rule has none left).
	NextOccurrence time.Time
	// Steps are the requests, in time order, up to the first late one.
	Steps []LeaseStep
	// EndAt is when the attempt ends as timed out: its last timeout_at.
	// End is that failure's decision (TimedOut), After the row after it.
	EndAt time.Time
	End   Decision
	After State
}

// SimulateLease simulates an attempt of a model due at from whose worker
// sends asks (sorted by their After) and nothing else: Start, Apply of an
// extend result for each, then the timeout at the last timeout_at
// (TimedOut), as the dispatcher finds it. A request read at or after
// timeout_at is late (its step shows Apply's decision) and the ones after
// it are not read: the attempt was over. Jitter draws are 0.
func SimulateLease(sched Nexter, p Policy, from time.Time, asks []LeaseAsk) LeaseSimulation {
	p = p.WithDefaults()
	const uid = "simulated"
	var sim LeaseSimulation
	s := p.Start(State{RefreshAt: from}, from, uid)
	sim.Started, sim.NextOccurrence = s, sched.Next(from)
	asks = slices.Clone(asks)
	slices.SortStableFunc(asks, func(a, b LeaseAsk) int { return int(a.After - b.After) })
	for _, a := range asks {
		step := LeaseStep{Ask: a, At: from.Add(a.After)}
		next, d := p.Apply(s, Result{AttemptUID: uid, Type: ResultExtend, Extend: a.For}, step.At, sched, nil, 0)
		step.Decision = d
		if d.Outcome != OutcomeApplied {
			// The dispatcher took the attempt back at its timeout_at,
			// before this request was read.
			sim.Steps = append(sim.Steps, step)
			break
		}
		s, step.TimeoutAt = next, next.TimeoutAt
		sim.Steps = append(sim.Steps, step)
	}
	sim.EndAt = s.TimeoutAt
	sim.After, sim.End = p.TimedOut(s, sim.EndAt, sched, 0)
	return sim
}
