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
is simulated at the range's lower bound. Times are printed in UTC.`,
		Example: `  refresher explain --schedule 'DTSTART;TZID=Europe/Berlin:20250101T140000\nRRULE:FREQ=DAILY' \
      --from 2025-06-10T10:00:00Z --occurrences 3 --fail 8 --retry 'exponential:base=1m,factor=2'`,
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
	sim := policy.Simulate(sched, p, policy.SimulateOptions{From: from, Occurrences: o.occurrences, Fail: o.fail, Run: run})
	if o.json {
		return writeExplainJSON(out, sim)
	}
	return writeExplainText(out, o, p.WithDefaults(), from, run, sim)
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

func writeExplainJSON(out io.Writer, sim policy.Simulation) error {
	v := explainJSON{Occurrences: []string{}, Attempts: []explainAttemptJSON{}}
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

func writeExplainText(out io.Writer, o explainOptions, p policy.Policy, from time.Time, run time.Duration, sim policy.Simulation) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Schedule: %s\n", strings.NewReplacer("\r\n", " | ", "\n", " | ", `\n`, " | ").Replace(strings.TrimSpace(o.schedule)))
	fmt.Fprintf(&b, "Retry:    %s (timeout %s)\n\n", p.Retry, policy.FormatDuration(p.Timeout))

	if o.occurrences > 0 {
		fmt.Fprintf(&b, "Next %d occurrences after %s (UTC):\n", o.occurrences, textTime(from))
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  #\tOCCURRENCE\tWEEKDAY")
		for i, t := range sim.Occurrences {
			fmt.Fprintf(tw, "  %d\t%s\t%s\n", i+1, textTime(t), t.UTC().Weekday().String()[:3])
		}
		tw.Flush()
		if len(sim.Occurrences) < o.occurrences {
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
