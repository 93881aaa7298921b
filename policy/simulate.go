package policy

import "time"

// SimulateOptions says what Simulate shows.
type SimulateOptions struct {
	// From is the start: occurrences are listed strictly after it and the
	// first simulated attempt starts at it.
	From time.Time
	// Occurrences is how many occurrences to list (fewer when the rule ends).
	Occurrences int
	// Fail is how many consecutive failures to simulate (fewer when the model
	// is disabled first).
	Fail int
	// Run is how long each simulated attempt runs before it fails. An attempt
	// that runs for at least the policy's Timeout times out at its timeout_at
	// instead. Default: 0.
	Run time.Duration
}

// Simulation is what a schedule and a policy will do.
type Simulation struct {
	// Occurrences are the next occurrences strictly after From.
	Occurrences []time.Time
	// Beyond is set when the occurrences stop because the next one lies
	// beyond what the schedule computes (see CheckedNexter), not because
	// the rule ended: a row on it would be disabled with this reason.
	Beyond error
	// Attempts are the simulated failed attempts, in order.
	Attempts []SimulatedAttempt
}

// SimulatedAttempt is one failed attempt of a simulation.
type SimulatedAttempt struct {
	AttemptNo int
	StartedAt time.Time
	FailedAt  time.Time
	// FailReason is the failure's reason: "simulated failure", or
	// "timed out after <timeout>".
	FailReason string
	// Decision is the failure decision. Jitter is not applied: the delay is
	// the lower bound of Decision.Backoff (see DelayMax for the upper).
	Decision Decision
	// DelayMax is the largest delay the jitter could choose
	// (max(Backoff.Max, RetryAfter)); equal to Decision.Delay without jitter.
	DelayMax time.Duration
}

// Simulate lists the next o.Occurrences occurrences of sched strictly after
// o.From and simulates o.Fail consecutive failures of a model: the first
// attempt starts at o.From, each runs for o.Run and fails, and the next one
// starts at the refresh_at the policy chose. It stops early when the model is
// disabled. Jitter is not applied: each delay is its range's lower bound.
func Simulate(sched Nexter, p Policy, o SimulateOptions) Simulation {
	p = p.WithDefaults()
	var sim Simulation
	for t := o.From; len(sim.Occurrences) < o.Occurrences; {
		next, err := nextChecked(sched, t)
		if err != nil {
			sim.Beyond = err
			break
		}
		if next.IsZero() || !next.After(t) { // no more (or a Nexter that does not advance)
			break
		}
		sim.Occurrences = append(sim.Occurrences, next)
		t = next
	}

	s := State{RefreshAt: o.From}
	for range o.Fail {
		if s.RefreshAt.IsZero() || s.Disabled() {
			break
		}
		started := s.RefreshAt
		s = p.Start(s, started, "simulated")
		a := SimulatedAttempt{AttemptNo: s.AttemptNo, StartedAt: started}
		if o.Run >= p.Timeout {
			a.FailedAt = s.TimeoutAt
			a.FailReason = TimeoutReason(p.Timeout)
			s, a.Decision = p.TimedOut(s, a.FailedAt, sched, 0)
		} else {
			a.FailedAt = started.Add(max(o.Run, 0))
			a.FailReason = "simulated failure"
			s, a.Decision = p.Failure(s, a.FailedAt, Failure{Reason: a.FailReason}, sched, 0)
		}
		a.DelayMax = max(a.Decision.Backoff.Max, a.Decision.Delay)
		sim.Attempts = append(sim.Attempts, a)
	}
	return sim
}
