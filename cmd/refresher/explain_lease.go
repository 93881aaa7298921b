package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
)

// explain --extend (docs/protocol.md, "Leases"): the attempt starting at
// --from asks for more time, then its worker dies; policy.SimulateLease
// says what each request and the end do; this file only words it.

// maxExtend is the most a worker may ask for at once (the codec's bound).
const maxExtend = time.Duration(redisio.MaxExtendSeconds) * time.Second

// explainLease is an --extend simulation and the bounds it ran with.
type explainLease struct {
	timeout, maxTimeout time.Duration
	sim                 policy.LeaseSimulation
}

// simulateLease parses --extend (each "FOR@AFTER": ask for FOR, AFTER the
// attempt's start) and runs the simulation; nil without the flag.
func simulateLease(o explainOptions, p policy.Policy, sched policy.Nexter, from time.Time) (*explainLease, error) {
	if len(o.extend) == 0 {
		if o.maxTimeout != "" {
			return nil, fmt.Errorf("--max-timeout needs --extend (what the worker asks for, e.g. --extend 30m@50m)")
		}
		return nil, nil
	}
	asks := make([]policy.LeaseAsk, 0, len(o.extend))
	for _, v := range o.extend {
		forText, afterText, ok := strings.Cut(v, "@")
		if !ok {
			return nil, fmt.Errorf("--extend %q: write FOR@AFTER, e.g. 30m@50m: ask for 30m, 50m after the attempt's start", v)
		}
		d, err := parseFlagDuration("extend", forText)
		if err != nil {
			return nil, err
		}
		if d < time.Second || d%time.Second != 0 || d > maxExtend {
			return nil, fmt.Errorf("--extend %q: a worker asks for a whole number of seconds from 1s to %s (e.g. 30m)", v, policy.FormatDuration(maxExtend))
		}
		after, err := parseFlagDuration("extend", afterText)
		if err != nil {
			return nil, err
		}
		asks = append(asks, policy.LeaseAsk{After: after, For: d})
	}
	p = p.WithDefaults()
	if o.maxTimeout != "" {
		mt, err := parseFlagDuration("max-timeout", o.maxTimeout)
		if err != nil {
			return nil, err
		}
		if mt < p.Timeout {
			return nil, fmt.Errorf("--max-timeout %s: less than --timeout %s (an attempt is never extended to less than it has)", policy.FormatDuration(mt), policy.FormatDuration(p.Timeout))
		}
		p.MaxTimeout = mt
	}
	return &explainLease{timeout: p.Timeout, maxTimeout: p.MaxTimeout, sim: policy.SimulateLease(sched, p, from, asks)}, nil
}

// stepWords says what became of one request.
func stepWords(st policy.LeaseStep) string {
	d := st.Decision
	switch {
	case d.Outcome != policy.OutcomeApplied:
		return "too late: the attempt timed out at its timeout_at; nothing extended, answered as over"
	case d.Lease.Cap == policy.LeaseAsked && d.Lease.Until.Equal(d.Lease.Asked):
		return "extended as asked"
	case d.Lease.Cap == policy.LeaseAsked:
		return "unchanged: timeout_at was already later than asked"
	case d.Lease.Cap == policy.LeaseMaxTimeout:
		return "capped by max_timeout (start + max_timeout)"
	default:
		return "capped by the next occurrence: the attempt never overlaps its next run"
	}
}

func (l *explainLease) writeText(b *strings.Builder) {
	s := l.sim
	next := "none left"
	if !s.NextOccurrence.IsZero() {
		next = textTime(s.NextOccurrence)
	}
	fmt.Fprintf(b, "Lease: the attempt starting at %s asks for more time, then its worker dies (timeout %s, max_timeout %s, next occurrence %s):\n",
		textTime(s.Started.AttemptAt), policy.FormatDuration(l.timeout), policy.FormatDuration(l.maxTimeout), next)
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  AT\tASKS\tTIMEOUT AT")
	fmt.Fprintf(tw, "  %s\t-\t%s\tstarted: start + timeout\n", textTime(s.Started.AttemptAt), textTime(s.Started.TimeoutAt))
	end := func() {
		fmt.Fprintf(tw, "  %s\t-\t-\tno word from the worker: %s; %s\n", textTime(s.EndAt), s.After.LastError, s.End.Reason)
	}
	ended := false
	for _, st := range s.Steps {
		if st.Decision.Outcome != policy.OutcomeApplied {
			end()
			ended = true
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", textTime(st.At), policy.FormatDuration(st.Ask.For), textTime(st.TimeoutAt), stepWords(st))
	}
	if !ended {
		end()
	}
	tw.Flush()
	b.WriteString("\n")
}

// explainLeaseJSON is the "lease" object of --json.
type explainLeaseJSON struct {
	StartedAt         string                 `json:"started_at"`
	TimeoutSeconds    float64                `json:"timeout_seconds"`
	MaxTimeoutSeconds float64                `json:"max_timeout_seconds"`
	NextOccurrence    *string                `json:"next_occurrence"`
	TimeoutAt         string                 `json:"timeout_at"`
	Steps             []explainLeaseStepJSON `json:"steps"`
	// EndedAt is when the attempt times out; Error its last_error;
	// Decision, Reason and RefreshAt the retry policy's decision.
	EndedAt   string  `json:"ended_at"`
	Error     string  `json:"error"`
	Decision  string  `json:"decision"`
	Reason    string  `json:"reason"`
	RefreshAt *string `json:"refresh_at"`
}

type explainLeaseStepJSON struct {
	At         string  `json:"at"`
	AskSeconds float64 `json:"ask_seconds"`
	// Outcome is "applied" or "late"; TimeoutAt is null when late.
	Outcome   string  `json:"outcome"`
	TimeoutAt *string `json:"timeout_at"`
	// Capped is "max_timeout", "next_occurrence" or "".
	Capped string `json:"capped"`
	Says   string `json:"says"`
}

func (l *explainLease) json() *explainLeaseJSON {
	s := l.sim
	v := &explainLeaseJSON{StartedAt: *jsonTime(s.Started.AttemptAt), TimeoutSeconds: l.timeout.Seconds(),
		MaxTimeoutSeconds: l.maxTimeout.Seconds(), NextOccurrence: jsonTime(s.NextOccurrence),
		TimeoutAt: *jsonTime(s.Started.TimeoutAt), Steps: []explainLeaseStepJSON{},
		EndedAt: *jsonTime(s.EndAt), Error: s.After.LastError, Decision: string(s.End.Branch), Reason: s.End.Reason,
		RefreshAt: jsonTime(s.After.RefreshAt)}
	for _, st := range s.Steps {
		v.Steps = append(v.Steps, explainLeaseStepJSON{At: *jsonTime(st.At), AskSeconds: st.Ask.For.Seconds(),
			Outcome: string(st.Decision.Outcome), TimeoutAt: jsonTime(st.TimeoutAt), Capped: string(st.Decision.Lease.Cap), Says: stepWords(st)})
	}
	return v
}
