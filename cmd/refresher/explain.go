package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/schedule"
	"github.com/spf13/cobra"
)

func init() { commands = append(commands, newExplainCmd) }

// explainOptions are the flags of `refresher explain`.
type explainOptions struct {
	schedule    string
	retry       string
	timeout     string
	from        string
	occurrences int
	fail        int
	run         string
	kind        string
	json        bool
	incident    bool
	// Load spreading and misfires (docs/schedules.md).
	key           string
	spread        string
	catchupWindow string
	misfire       string
	downUntil     string
	// throttled is --throttled: the retry_after_seconds of a throttled
	// answer to the first attempt; "" for none.
	throttled string
	// extend is --extend (each "FOR@AFTER") and maxTimeout --max-timeout:
	// the lease simulation (explain_lease.go).
	extend     []string
	maxTimeout string
}

func newExplainCmd() *cobra.Command {
	var o explainOptions
	cmd := &cobra.Command{
		Use:   "explain --schedule RULE [flags]",
		Short: "Show what a schedule and a retry policy will do",
		Long: `Explain lists the next occurrences of a schedule and, with --fail N, simulates
N consecutive failures of a model: the first attempt starts at --from, each
runs for --run and fails, and the next one starts at the refresh_at the
retry policy chose (aligned to the schedule). It stops early when the model
would be disabled. Jitter is shown as its range and not applied: each retry
is simulated at the range's lower bound. Times are printed in UTC.

With --spread W --key UID the rule is spread as a kind with spread: W spreads
the row with that key: its offset (stable, from the kind's name and the key)
is shown and every time below includes it.

With --down-until T the service is simulated down from --from until T, with
--catchup-window and --misfire as the kind's catchup_window and misfire: the
occurrences missed are listed and what the dispatcher does when it comes back
is shown (skip: the row waits for its next occurrence; run_once, or a window
not exceeded: it starts once at T).

With --throttled D the attempt starting at --from is answered, after --run,
as throttled with its group ("scope":"group", retry_after_seconds D): the
group's hold, the attempt that does not count, a row of the group held at
the schedule's next occurrence when it falls inside the hold, and the next
dispatch are shown.

With --extend FOR@AFTER (repeatable) the attempt starting at --from asks for
FOR more time AFTER its start (an "extend" result with seconds), then its
worker dies: each request's new timeout_at (capped by --max-timeout, default
4 times --timeout, and by the next occurrence), and the timeout at the
lease's end are shown.`,
		Example: `  refresher explain --schedule 'DTSTART;TZID=Europe/Berlin:20250101T140000\nRRULE:FREQ=DAILY' \
      --from 2025-06-10T10:00:00Z --occurrences 3 --fail 8 --retry 'exponential:base=1m,factor=2'
  refresher explain --schedule 'DTSTART:20250101T140000Z\nRRULE:FREQ=DAILY' --kind feeds --key 42 --spread 10m \
      --from 2025-06-10T12:00:00Z --down-until 2025-06-13T16:00:00Z --catchup-window 1h --misfire skip
  refresher explain --schedule 'RRULE:FREQ=HOURLY;BYMINUTE=5' --from 2025-06-10T10:00:00Z --occurrences 2 --throttled 15m
  refresher explain --schedule 'DTSTART:20250101T140000Z\nRRULE:FREQ=DAILY' --from 2025-06-10T10:00:00Z --occurrences 0 \
      --extend 30m@50m --extend 3h@1h10m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// The only clock read of explain: the default of --from.
			return runExplain(o, time.Now(), cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.schedule, "schedule", "", "RFC 5545 rule: DTSTART/RRULE/EXDATE/RDATE lines, separated by newlines or the two characters \\n (required)")
	f.StringVar(&o.retry, "retry", policy.DefaultRetrySpec, "retry policy spec: delays, constant, linear, fibonacci, quadratic, polynomial, exponential, arctan, delayed_job or progressive, with optional max=, attempts=, max_age=, jitter=; e.g. exponential:base=1s,factor=2,max=1h,attempts=10")
	f.StringVar(&o.timeout, "timeout", policy.FormatDuration(policy.DefaultTimeout), "attempt timeout: an attempt still running after it counts as failed")
	f.StringVar(&o.from, "from", "", "start time, RFC 3339 (default now)")
	f.IntVar(&o.occurrences, "occurrences", 10, "number of occurrences to list")
	f.IntVar(&o.fail, "fail", 0, "number of consecutive failures to simulate")
	f.StringVar(&o.run, "run", "0s", "how long each simulated attempt runs before it fails")
	f.StringVar(&o.kind, "kind", policy.DefaultKind, "kind name used in the disabled reason")
	f.BoolVar(&o.json, "json", false, "print one JSON object instead of tables")
	f.BoolVar(&o.incident, "incident", false, "simulate the failures during an incident of the kind: they do not count toward giving up and disable nobody (a permanent failure still would)")
	f.StringVar(&o.key, "key", "", "the row's key (its uid): with --spread, shows the row's offset and spreads its times")
	f.StringVar(&o.spread, "spread", "", "the kind's spread window, e.g. 10m (needs --key)")
	f.StringVar(&o.catchupWindow, "catchup-window", "", "the kind's catchup_window, e.g. 1h (default unlimited)")
	f.StringVar(&o.misfire, "misfire", "", "the kind's misfire setting: skip (default) or run_once")
	f.StringVar(&o.downUntil, "down-until", "", "simulate the service down from --from until this RFC 3339 time")
	f.StringVar(&o.throttled, "throttled", "", "simulate the first attempt answered as throttled with its group, with this retry_after_seconds as a duration, e.g. 15m (0s: none)")
	f.StringArrayVar(&o.extend, "extend", nil, "simulate a request for more time of the attempt starting at --from: FOR@AFTER asks for FOR, AFTER the start (e.g. 30m@50m); repeatable")
	f.StringVar(&o.maxTimeout, "max-timeout", "", "the kind's max_timeout for --extend (default 4 times --timeout)")
	_ = cmd.MarkFlagRequired("schedule")
	return cmd
}

// runExplain parses the options, simulates and prints; now is the default
// of --from.
func runExplain(o explainOptions, now time.Time, out io.Writer) error {
	sched, err := schedule.Parse(o.schedule)
	if err != nil {
		return oneLine(fmt.Errorf("--schedule: %w", err))
	}
	retry, err := policy.ParseRetry(o.retry)
	if err != nil {
		return oneLine(fmt.Errorf("--retry: %w", err))
	}
	timeout, err := parseFlagDuration("timeout", o.timeout)
	if err != nil {
		return err
	}
	if timeout <= 0 {
		return fmt.Errorf("--timeout %q: must be positive", o.timeout)
	}
	run, err := parseFlagDuration("run", o.run)
	if err != nil {
		return err
	}
	from := now
	if o.from != "" {
		if from, err = time.Parse(time.RFC3339Nano, o.from); err != nil {
			return fmt.Errorf("--from %q: not an RFC 3339 time (e.g. 2025-06-10T12:00:00Z)", o.from)
		}
	}
	if o.occurrences < 0 {
		return fmt.Errorf("--occurrences %d: cannot be negative", o.occurrences)
	}
	if o.fail < 0 {
		return fmt.Errorf("--fail %d: cannot be negative", o.fail)
	}
	p := policy.Policy{Kind: o.kind, Timeout: timeout, Retry: retry, Incident: o.incident}
	if err := p.Validate(); err != nil {
		return oneLine(err)
	}
	sp, err := explainSpread(o)
	if err != nil {
		return err
	}
	var nexter policy.Nexter = sched
	if sp != nil {
		nexter = policy.Spreaded(sched, sp.offset)
	}
	var down *explainDowntime
	if o.downUntil != "" || o.catchupWindow != "" || o.misfire != "" {
		if p.Catchup, err = explainCatchup(o); err != nil {
			return err
		}
		if o.downUntil == "" {
			return fmt.Errorf("--catchup-window and --misfire need --down-until (the time the service comes back)")
		}
		until, err := time.Parse(time.RFC3339Nano, o.downUntil)
		if err != nil {
			return fmt.Errorf("--down-until %q: not an RFC 3339 time (e.g. 2025-06-13T16:00:00Z)", o.downUntil)
		}
		if !until.After(from) {
			return fmt.Errorf("--down-until %s: must be after --from %s", textTime(until), textTime(from))
		}
		down = simulateDowntime(p, nexter, from, until)
	}
	th, err := simulateThrottle(o, p, nexter, from, run)
	if err != nil {
		return err
	}
	lease, err := simulateLease(o, p, nexter, from)
	if err != nil {
		return err
	}
	sim := policy.Simulate(nexter, p, policy.SimulateOptions{From: from, Occurrences: o.occurrences, Fail: o.fail, Run: run})
	if o.json {
		return writeExplainJSON(out, sim, sp, down, th, lease)
	}
	return writeExplainText(out, o, p.WithDefaults(), from, run, sim, sp, down, th, lease)
}

// explainSpreadInfo is the row's spread, when --spread is given.
type explainSpreadInfo struct {
	key            string
	window, offset time.Duration
}

func explainSpread(o explainOptions) (*explainSpreadInfo, error) {
	if o.spread == "" {
		if o.key != "" {
			return nil, fmt.Errorf("--key %q: give the kind's spread window too (--spread, e.g. 10m) to see the row's offset", o.key)
		}
		return nil, nil
	}
	w, err := parseFlagDuration("spread", o.spread)
	if err != nil {
		return nil, err
	}
	if w < 2*time.Second {
		return nil, fmt.Errorf("--spread %q: too short to spread anything (offsets have 1 s resolution; use e.g. 10m)", o.spread)
	}
	if o.key == "" {
		return nil, fmt.Errorf("--spread needs --key: the offset comes from the row's key (and --kind)")
	}
	return &explainSpreadInfo{key: o.key, window: w, offset: policy.SpreadOffset(o.kind, o.key, w)}, nil
}

func explainCatchup(o explainOptions) (policy.Catchup, error) {
	var c policy.Catchup
	if o.catchupWindow != "" {
		w, err := parseFlagDuration("catchup-window", o.catchupWindow)
		if err != nil {
			return c, err
		}
		if w == 0 {
			return c, fmt.Errorf("--catchup-window 0s: leave it out for unlimited, or give how late a row may still start, e.g. 1h")
		}
		c.Window = w
	}
	m, err := policy.ParseMisfire(o.misfire)
	if err != nil {
		return c, fmt.Errorf("--misfire: %w", err)
	}
	c.Misfire = m
	return c, nil
}

// explainDowntime is what a downtime from From until Until does to a row
// whose refresh_at was the first occurrence after From.
type explainDowntime struct {
	From, Until time.Time
	Catchup     policy.Catchup
	// Missed are the occurrences in (From, Until], at most maxMissedShown
	// of them; MissedCount counts them all (up to maxMissedCount).
	Missed      []time.Time
	MissedCount int
	// Decision is policy.Due's at Until; State the row after it.
	Decision policy.DueDecision
	State    policy.State
}

const (
	maxMissedShown = 5
	maxMissedCount = 10_000
)

// simulateDowntime asks policy.Due, as the dispatcher would when the
// service comes back at until, about a row due at its first occurrence
// after from.
func simulateDowntime(p policy.Policy, sched policy.Nexter, from, until time.Time) *explainDowntime {
	d := &explainDowntime{From: from, Until: until, Catchup: p.Catchup}
	for t := sched.Next(from); !t.IsZero() && !t.After(until) && d.MissedCount < maxMissedCount; t = sched.Next(t) {
		if len(d.Missed) < maxMissedShown {
			d.Missed = append(d.Missed, t)
		}
		d.MissedCount++
	}
	if d.MissedCount == 0 {
		return d
	}
	d.State, d.Decision = p.Due(policy.State{RefreshAt: d.Missed[0]}, until, sched, nil, "explain", 0)
	return d
}

// verdict says in words what the dispatcher does when it comes back.
func (d *explainDowntime) verdict() string {
	if d.MissedCount == 0 {
		return "no occurrence was missed: the row runs at its next occurrence as planned"
	}
	late := policy.FormatDuration(d.Until.Sub(d.Missed[0]))
	window := "unlimited"
	if d.Catchup.Window > 0 {
		window = policy.FormatDuration(d.Catchup.Window)
	}
	switch d.Decision.Misfire {
	case policy.MisfireSkip:
		next := "nothing is planned: the rule has no occurrence left"
		if !d.State.RefreshAt.IsZero() {
			next = "it runs next at " + textTime(d.State.RefreshAt)
		}
		return fmt.Sprintf("due for %s, longer than the catchup window (%s): misfire skip, not started late; %s", late, window, next)
	case policy.MisfireRunOnce:
		return fmt.Sprintf("due for %s, longer than the catchup window (%s): misfire run_once, starts once at %s", late, window, textTime(d.Until))
	}
	return fmt.Sprintf("due for %s, within the catchup window (%s): starts once at %s", late, window, textTime(d.Until))
}

func parseFlagDuration(name, v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("--%s %q: not a duration (e.g. 90s, 5m, 1h30m)", name, v)
	}
	if d < 0 {
		return 0, fmt.Errorf("--%s %q: cannot be negative", name, v)
	}
	return d, nil
}

// oneLine keeps an error on one line: the rule text may contain newlines.
func oneLine(err error) error {
	if !strings.ContainsAny(err.Error(), "\r\n") {
		return err
	}
	return fmt.Errorf("%s", strings.NewReplacer("\r\n", `\n`, "\n", `\n`, "\r", `\r`).Replace(err.Error()))
}

type explainJSON struct {
	Occurrences []string             `json:"occurrences"`
	Attempts    []explainAttemptJSON `json:"attempts"`
	// Spread is set with --spread.
	Spread *explainSpreadJSON `json:"spread,omitempty"`
	// Downtime is set with --down-until.
	Downtime *explainDowntimeJSON `json:"downtime,omitempty"`
	// Throttled is set with --throttled.
	Throttled *explainThrottleJSON `json:"throttled,omitempty"`
	// Lease is set with --extend.
	Lease *explainLeaseJSON `json:"lease,omitempty"`
}

type explainSpreadJSON struct {
	Key           string  `json:"key"`
	WindowSeconds float64 `json:"window_seconds"`
	OffsetSeconds float64 `json:"offset_seconds"`
}

type explainDowntimeJSON struct {
	From  string `json:"from"`
	Until string `json:"until"`
	// CatchupWindowSeconds is null for unlimited.
	CatchupWindowSeconds *float64 `json:"catchup_window_seconds"`
	Misfire              string   `json:"misfire"`
	// Missed lists the first missed occurrences (at most 5); MissedCount
	// counts them all.
	Missed      []string `json:"missed"`
	MissedCount int      `json:"missed_count"`
	// Action is policy.Due's: "started", "misfire_skipped", or "" when
	// nothing was missed; MisfireAction is "skip", "run_once" or "".
	Action        string `json:"action"`
	MisfireAction string `json:"misfire_action"`
	// RunsAt is when the row runs next: the start at Until, or the next
	// occurrence after a skip; null when nothing was missed or nothing is
	// left.
	RunsAt  *string `json:"runs_at"`
	Verdict string  `json:"verdict"`
}

type explainAttemptJSON struct {
	AttemptNo int    `json:"attempt_no"`
	StartedAt string `json:"started_at"`
	FailedAt  string `json:"failed_at"`
	// Error is the failure's reason: "simulated failure" or "timed out after <timeout>".
	Error string `json:"error"`
	// DelaySeconds is the simulated delay: jitter's lower bound; null when disabled.
	DelaySeconds *float64 `json:"delay_seconds"`
	// DelayMaxSeconds is jitter's upper bound; equal to DelaySeconds without jitter.
	DelayMaxSeconds *float64 `json:"delay_max_seconds"`
	RetryAt         *string  `json:"retry_at"`
	PlannedAt       *string  `json:"planned_at"`
	RefreshAt       *string  `json:"refresh_at"`
	Decision        string   `json:"decision"`
	Reason          string   `json:"reason"`
}

func jsonTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format(time.RFC3339Nano)
	return &s
}

func jsonSeconds(d time.Duration, ok bool) *float64 {
	if !ok {
		return nil
	}
	s := d.Seconds()
	return &s
}

func writeExplainJSON(out io.Writer, sim policy.Simulation, sp *explainSpreadInfo, down *explainDowntime, th *explainThrottle, lease *explainLease) error {
	v := explainJSON{Occurrences: []string{}, Attempts: []explainAttemptJSON{}}
	if lease != nil {
		v.Lease = lease.json()
	}
	if th != nil {
		v.Throttled = th.json()
	}
	if sp != nil {
		v.Spread = &explainSpreadJSON{Key: sp.key, WindowSeconds: sp.window.Seconds(), OffsetSeconds: sp.offset.Seconds()}
	}
	if down != nil {
		dj := &explainDowntimeJSON{From: *jsonTime(down.From), Until: *jsonTime(down.Until),
			CatchupWindowSeconds: jsonSeconds(down.Catchup.Window, down.Catchup.Window > 0), Misfire: string(down.Catchup.Misfire),
			Missed: []string{}, MissedCount: down.MissedCount, Action: string(down.Decision.Action),
			MisfireAction: string(down.Decision.Misfire), Verdict: down.verdict()}
		for _, t := range down.Missed {
			dj.Missed = append(dj.Missed, *jsonTime(t))
		}
		switch down.Decision.Action {
		case policy.DueStarted:
			dj.RunsAt = jsonTime(down.Until) // the start
		case policy.DueMisfireSkipped:
			dj.RunsAt = jsonTime(down.State.RefreshAt)
		}
		v.Downtime = dj
	}
	for _, t := range sim.Occurrences {
		v.Occurrences = append(v.Occurrences, *jsonTime(t))
	}
	for _, a := range sim.Attempts {
		d := a.Decision
		retrying := d.Branch != policy.BranchDisabled
		v.Attempts = append(v.Attempts, explainAttemptJSON{
			AttemptNo:       a.AttemptNo,
			StartedAt:       *jsonTime(a.StartedAt),
			FailedAt:        *jsonTime(a.FailedAt),
			Error:           a.FailReason,
			DelaySeconds:    jsonSeconds(d.Delay, retrying),
			DelayMaxSeconds: jsonSeconds(a.DelayMax, retrying),
			RetryAt:         jsonTime(d.RetryAt),
			PlannedAt:       jsonTime(d.PlannedAt),
			RefreshAt:       jsonTime(d.RefreshAt),
			Decision:        string(d.Branch),
			Reason:          d.Reason,
		})
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func textTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func writeExplainText(out io.Writer, o explainOptions, p policy.Policy, from time.Time, run time.Duration, sim policy.Simulation,
	sp *explainSpreadInfo, down *explainDowntime, th *explainThrottle, lease *explainLease) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Schedule: %s\n", strings.NewReplacer("\r\n", " | ", "\n", " | ", `\n`, " | ").Replace(strings.TrimSpace(o.schedule)))
	fmt.Fprintf(&b, "Retry:    %s (timeout %s)\n", p.Retry, policy.FormatDuration(p.Timeout))
	if sp != nil {
		fmt.Fprintf(&b, "Spread:   key %q of kind %s: offset %s within %s; every time below includes it\n",
			o.key, o.kind, policy.FormatDuration(sp.offset), policy.FormatDuration(sp.window))
	}
	b.WriteString("\n")
	if down != nil {
		catchup := "catchup window unlimited"
		if down.Catchup.Window > 0 {
			catchup = fmt.Sprintf("catchup window %s, misfire %s", policy.FormatDuration(down.Catchup.Window), down.Catchup.Misfire)
		}
		fmt.Fprintf(&b, "Down from %s until %s (%s):\n", textTime(down.From), textTime(down.Until), catchup)
		if down.MissedCount > 0 {
			missed := make([]string, len(down.Missed))
			for i, t := range down.Missed {
				missed[i] = textTime(t)
			}
			more := ""
			if down.MissedCount > len(down.Missed) {
				more = ", ..."
			}
			fmt.Fprintf(&b, "  missed %d occurrence(s): %s%s\n", down.MissedCount, strings.Join(missed, ", "), more)
		}
		fmt.Fprintf(&b, "  %s\n", down.verdict())
		if down.MissedCount > 1 {
			b.WriteString("  (missed occurrences are never run one by one)\n")
		}
		b.WriteString("\n")
	}
	if th != nil {
		th.writeText(&b)
	}
	if lease != nil {
		lease.writeText(&b)
	}

	if o.occurrences > 0 {
		fmt.Fprintf(&b, "Next %d occurrences after %s (UTC):\n", o.occurrences, textTime(from))
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  #\tOCCURRENCE\tWEEKDAY")
		for i, t := range sim.Occurrences {
			fmt.Fprintf(tw, "  %d\t%s\t%s\n", i+1, textTime(t), t.UTC().Weekday().String()[:3])
		}
		tw.Flush()
		switch {
		case sim.Beyond != nil:
			fmt.Fprintf(&b, "  (the next one lies beyond what the service computes: a row on this rule is disabled at its next success, %q)\n",
				policy.InvalidScheduleReason(sim.Beyond))
		case len(sim.Occurrences) < o.occurrences:
			fmt.Fprintf(&b, "  (the rule has no more occurrences)\n")
		}
		b.WriteString("\n")
	}

	if o.fail > 0 {
		fmt.Fprintf(&b, "%d consecutive failures, each running %s, the first starting at %s:\n", o.fail, policy.FormatDuration(run), textTime(from))
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  ATTEMPT\tSTARTED\tFAILED\tDELAY\tRETRY AT\tPLANNED AT\tREFRESH AT\tDECISION\tREASON")
		for _, a := range sim.Attempts {
			d := a.Decision
			delay := "-"
			if d.Branch != policy.BranchDisabled {
				delay = policy.FormatDuration(d.Delay)
				if a.DelayMax != d.Delay {
					delay += "-" + policy.FormatDuration(a.DelayMax) // jitter's range
				}
			}
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.AttemptNo, textTime(a.StartedAt), textTime(a.FailedAt),
				delay, textTime(d.RetryAt), textTime(d.PlannedAt), textTime(d.RefreshAt), d.Branch, d.Reason)
		}
		tw.Flush()
		if n := len(sim.Attempts); n < o.fail && n > 0 && sim.Attempts[n-1].Decision.Branch == policy.BranchDisabled {
			fmt.Fprintf(&b, "  (stopped after %d attempt(s): the model would be disabled)\n", n)
		}
	}
	_, err := io.WriteString(out, b.String())
	return err
}
