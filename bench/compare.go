package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// A comparison (--operator, --guard) runs the full cycle of several
// variants of the service in one invocation and reports each one's rate
// against its reference: the same service without the feature. The
// variants alternate, and each repeat starts with the next one, so that no
// variant always runs first after the seed or right after another's
// garbage. Two ratios are given: of the medians, and the median of the
// ratios of each repeat's pair (runs close in time share the machine's
// load, which on a shared machine moves more than the features cost).

// compared is one variant of a comparison and its reference.
type compared struct {
	variant
	ref string // name of the reference variant; "" for a reference
}

// guardColumn is the throttle_group of --guard: the bench table's only
// payload column, so every row is its own group. No result asks for a
// hold, so no row is held: what is measured is the cost of reading the
// holds and of the incident window's counts.
const guardColumn = "input_url"

// comparisons returns the variants --operator and --guard compare, the
// references before the variants that refer to them.
func (e *env) comparisons() ([]compared, error) {
	var out []compared
	add := func(c compared) {
		if !slices.ContainsFunc(out, func(o compared) bool { return o.name == c.name }) {
			out = append(out, c)
		}
	}
	if e.o.guard {
		off := "service, no guard, no throttle"
		add(compared{variant: variant{name: off, role: "service", args: []string{"--child-guard-off"}}})
		add(compared{variant: variant{name: "service (guard on: the default)", role: "service"}, ref: off})
		add(compared{variant: variant{name: "service, guard + throttle_group", role: "service",
			args: []string{"--child-throttle-group", guardColumn}}, ref: off})
	}
	if e.o.ledger {
		off := "service (ledger off: the default)"
		add(compared{variant: variant{name: off, role: "service"}})
		add(compared{variant: variant{name: "service, ledger on (routine: batches)", role: "service", args: []string{"--child-ledger"}}, ref: off})
		add(compared{variant: variant{name: "service, ledger on (routine: rows)", role: "service", args: []string{"--child-ledger", "--child-ledger-rows"}}, ref: off})
	}
	if e.o.priority {
		add(compared{variant: variant{name: "service", role: "service"}})
		add(compared{variant: variant{name: fmt.Sprintf("service, lane 0 + %d triggers", e.o.triggers), role: "service",
			args: []string{"--child-lanes"}, triggers: e.o.triggers}, ref: "service"})
	}
	if e.o.operator {
		ref := "service, no gauges, no dashboard"
		if e.o.guard {
			ref = "service (guard on: the default)"
		}
		add(compared{variant: variant{name: ref, role: "service"}})
		for _, s := range strings.Split(e.o.operatorGauges, ",") {
			d, err := time.ParseDuration(strings.TrimSpace(s))
			if err != nil || d <= 0 {
				return nil, fmt.Errorf("--operator-gauges %q: %q is not a positive duration (use e.g. 1s,15s)", e.o.operatorGauges, s)
			}
			add(compared{variant: variant{name: fmt.Sprintf("service + gauges %s + dashboard", d), role: "service",
				args: []string{"--child-gauges", d.String(), "--child-dashboard"}}, ref: ref})
		}
	}
	return out, nil
}

// compare seeds the table and runs the comparisons' full cycles.
func (e *env) compare(ctx context.Context) error {
	o := e.o
	due := o.due
	if due <= 0 || due > o.rows {
		due = o.rows
	}
	vs, err := e.comparisons()
	if err != nil {
		return err
	}
	if err := e.seed(ctx, o.rows); err != nil {
		return err
	}
	// The plain service warms the table: the variants' cycles
	// all come after the first ones, which cost more (see warmUp).
	if err := e.warmUp(ctx, plain("service"), due); err != nil {
		return err
	}
	runs := make(map[string][]runResult, len(vs))
	for i := range o.repeat {
		for j := range vs {
			v := vs[(i+j)%len(vs)]
			p := e.backlogPlan(due)
			if o.ledger {
				if p, err = e.occurrencePlan(due); err != nil {
					return err
				}
			}
			cv := v.variant
			if o.profileDir != "" {
				// Each variant's profiles in a directory of its own (the
				// last repeat's), so that two variants can be compared.
				cv.args = append(slices.Clone(cv.args), "--profile", filepath.Join(o.profileDir, profileDirName(cv.name)))
				if o.profileMem {
					cv.args = append(cv.args, "--profile-mem")
				}
			}
			r, err := e.cycle(ctx, cv, modeFull, p, false)
			if err != nil {
				return err
			}
			line := fmt.Sprintf("  run %d/%d  %-36s %s (%.0f models/s)", i+1, o.repeat, v.name, r.wall.Round(time.Millisecond), r.rate())
			line += fmt.Sprintf(", %d Redis round trips", r.stats.redis)
			if r.stats.guard > 0 {
				line += fmt.Sprintf(" (guard and throttle: %d in %s)", r.stats.guard, round(r.stats.guardTime))
			}
			if r.stats.counts > 0 {
				line += fmt.Sprintf(", %d counts in %s", r.stats.counts, round(r.stats.countTime))
			}
			if len(r.triggered) > 0 {
				slices.Sort(r.triggered)
				line += fmt.Sprintf(", %d triggered rows received after p50 %s p99 %s max %s", len(r.triggered),
					pct(r.triggered, 0.5), pct(r.triggered, 0.99), round(r.triggered[len(r.triggered)-1]))
			}
			if r.dash.requests > 0 {
				line += fmt.Sprintf(", dashboard: %d requests, slowest %s", r.dash.requests, round(r.dash.slowest))
			}
			fmt.Println(line)
			runs[v.name] = append(runs[v.name], r)
		}
	}
	fmt.Println()
	printComparison(os.Stdout, o, due, vs, runs)
	return nil
}

func secsDur(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// medianOf returns the median of xs (the lower middle one of an even
// count), or 0 for none.
func medianOf(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

// pairedRatios returns, for each repeat, the variant's rate over its
// reference's in the same repeat.
func pairedRatios(runs, ref []runResult) []float64 {
	out := make([]float64, 0, len(runs))
	for i := range min(len(runs), len(ref)) {
		out = append(out, runs[i].rate()/ref[i].rate())
	}
	return out
}

func printComparison(w io.Writer, o options, due int64, vs []compared, runs map[string][]runResult) {
	what := []string{}
	if o.guard {
		what = append(what, "--guard")
	}
	if o.priority {
		what = append(what, "--priority")
	}
	if o.ledger {
		what = append(what, "--ledger")
	}
	if o.operator {
		what = append(what, fmt.Sprintf("--operator (dashboard asked every %s)", o.dashboardEvery))
	}
	fmt.Fprintf(w, "COMPARISON %s (--store %s): %d rows, %d due, batch %d, %d runs each\n",
		strings.Join(what, " "), o.store, o.rows, due, o.batch, o.repeat)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "full cycle\tmodels/s of each run\tmedian\tprocess CPU/model\tdatabase CPU/model\tRedis round trips/1000 models\tof which guard+throttle (time, share of wall)\tcounts (time)\treference\tvs reference: medians\teach run\tmedian\t")
	for _, v := range vs {
		rs := runs[v.name]
		rates, cpus, dbCPUs := make([]float64, len(rs)), make([]float64, len(rs)), make([]float64, len(rs))
		trips, counts, countSecs := make([]float64, len(rs)), make([]float64, len(rs)), make([]float64, len(rs))
		guard, guardSecs, guardShare := make([]float64, len(rs)), make([]float64, len(rs)), make([]float64, len(rs))
		each := make([]string, len(rs))
		for i, r := range rs {
			rates[i], cpus[i], dbCPUs[i] = r.rate(), r.cpu/float64(r.n), r.dbCPU/float64(r.n)
			trips[i] = float64(r.stats.redis) / float64(r.n) * 1000
			counts[i], countSecs[i] = float64(r.stats.counts), r.stats.countTime.Seconds()
			guard[i], guardSecs[i] = float64(r.stats.guard)/float64(r.n)*1000, r.stats.guardTime.Seconds()
			guardShare[i] = r.stats.guardTime.Seconds() / r.wall.Seconds()
			each[i] = fmt.Sprintf("%.0f", r.rate())
		}
		cpu := "n/a"
		if c := medianOf(cpus); c >= 0 {
			cpu = fmt.Sprintf("%.0f µs", c*1e6)
		}
		// The database server's CPU over the run, whoever asked for it
		// (other clients of a shared server included); n/a for SQLite.
		dbCPU := "n/a"
		if c := medianOf(dbCPUs); c >= 0 {
			dbCPU = fmt.Sprintf("%.0f µs", c*1e6)
		}
		line := fmt.Sprintf("%s\t%s\t%.0f\t%s\t%s\t%.1f\t%.1f (%s, %.1f%%)\t%.0f (%s)\t", v.name, strings.Join(each, " "), medianOf(rates), cpu, dbCPU,
			medianOf(trips), medianOf(guard), round(secsDur(medianOf(guardSecs))), 100*medianOf(guardShare),
			medianOf(counts), round(secsDur(medianOf(countSecs))))
		if v.ref == "" {
			line += "-\t\t\t\t"
		} else {
			ref := runs[v.ref]
			refRates := make([]float64, len(ref))
			for i, r := range ref {
				refRates[i] = r.rate()
			}
			pairs := pairedRatios(rs, ref)
			ps := make([]string, len(pairs))
			for i, p := range pairs {
				ps[i] = fmt.Sprintf("%.2f", p)
			}
			line += fmt.Sprintf("%s\t%.2fx\t%s\t%.2fx\t", v.ref, medianOf(rates)/medianOf(refRates), strings.Join(ps, " "), medianOf(pairs))
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
	fmt.Fprintln(w)
	fmt.Fprintln(w, "A variant's reference is the same service without the feature. vs reference: the variant's median")
	fmt.Fprintln(w, "rate over the reference's, each run's rate over the reference's")
	fmt.Fprintln(w, "in the same repeat, and the median of those (1.00x = no cost; the targets are 0.95x with the")
	fmt.Fprintln(w, "gauges and the dashboard, 0.97x with the guard and throttle_group). The variants alternate.")
	fmt.Fprintln(w, "Redis round trips (a command, pipeline or script call each; those of the incident guard and the")
	fmt.Fprintln(w, "throttle holds with their time and its share of the cycle's wall time) and the model counts the")
	fmt.Fprintln(w, "gauges and the dashboard ran, with their time, are the service child's own during the cycle")
	fmt.Fprintln(w, "(medians): the load moves them much less than the wall time. The database CPU is the server's")
	fmt.Fprintln(w, "whole process CPU over the run: other clients of a shared server count too (PostgreSQL's: the")
	fmt.Fprintln(w, "bench database's backends and the server's background processes).")
}

// profileDirName is a variant's name as a directory name: letters and
// digits, the rest as dashes.
func profileDirName(name string) string {
	return strings.Trim(strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, name), "-")
}
