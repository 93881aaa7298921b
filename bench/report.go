package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// pct returns the q quantile of sorted durations, rounded for display.
func pct(sorted []time.Duration, q float64) string {
	if len(sorted) == 0 {
		return "-"
	}
	i := min(int(q*float64(len(sorted))), len(sorted)-1)
	return round(sorted[i])
}

func round(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return d.Round(100 * time.Millisecond).String()
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	default:
		return d.Round(time.Millisecond).String()
	}
}

func maxDur(sorted []time.Duration) string {
	if len(sorted) == 0 {
		return "-"
	}
	return round(sorted[len(sorted)-1])
}

func secs(s float64) string {
	if s < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f s", s)
}

// perDue formats CPU seconds as microseconds per model.
func perDue(s float64, n int64) string {
	if s < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.0f µs", s/float64(n)*1e6)
}

// perDueFine is perDue with a decimal, for one run's line.
func perDueFine(s float64, n int64) string {
	if s < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f µs", s/float64(n)*1e6)
}

func ratio(a, b float64) string {
	if a <= 0 || b <= 0 {
		return ""
	}
	return fmt.Sprintf("%.2fx", a/b)
}

func mb(kb int64) string {
	if kb < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.0f MB", float64(kb)/1024)
}

func printStandard(w io.Writer, o options, due int64, impls []string, full, split, steady map[string]runResult, rate float64) {
	fmt.Fprintf(w, "RESULTS (--store %s): %d rows, %d due, batch %d\n", o.store, o.rows, due, o.batch)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "\t"
	for _, impl := range impls {
		head += impl + "\t"
	}
	if len(impls) == 2 {
		head += "service/baseline\t"
	}
	fmt.Fprintln(tw, head)
	line := func(label string, f func(runResult) string, r func(s, b runResult) string) {
		l := label + "\t"
		for _, impl := range impls {
			l += f(resultOf(impl, full, split, steady, label)) + "\t"
		}
		if len(impls) == 2 && r != nil {
			l += r(resultOf("service", full, split, steady, label), resultOf("baseline", full, split, steady, label))
		}
		fmt.Fprintln(tw, l+"\t")
	}
	line("full cycle: wall time", func(r runResult) string { return round(r.wall) }, nil)
	line("full cycle: models/s", func(r runResult) string { return fmt.Sprintf("%.0f", r.rate()) },
		func(s, b runResult) string { return ratio(s.rate(), b.rate()) })
	line("dispatch only: models/s", func(r runResult) string { return fmt.Sprintf("%.0f", float64(r.n)/r.dispatch.Seconds()) },
		func(s, b runResult) string { return ratio(b.dispatch.Seconds(), s.dispatch.Seconds()) })
	line("apply only: models/s", func(r runResult) string { return fmt.Sprintf("%.0f", float64(r.n)/r.apply.Seconds()) },
		func(s, b runResult) string { return ratio(b.apply.Seconds(), s.apply.Seconds()) })
	line("backlog wait p50/p99/max", func(r runResult) string {
		return pct(r.lateness, 0.5) + " / " + pct(r.lateness, 0.99) + " / " + maxDur(r.lateness)
	}, nil)
	line("process CPU (full cycle)", func(r runResult) string { return secs(r.cpu) + " = " + perDue(r.cpu, r.n) + "/model" },
		func(s, b runResult) string { return ratio(s.cpu, b.cpu) })
	if o.store != "sqlite" { // SQLite runs in the child: its CPU is the process CPU
		line(dbName(o.store)+" CPU (full cycle)", func(r runResult) string { return secs(r.dbCPU) + " = " + perDue(r.dbCPU, r.n) + "/model" },
			func(s, b runResult) string { return ratio(s.dbCPU, b.dbCPU) })
	}
	line("Redis CPU (full cycle)", func(r runResult) string { return secs(r.redi) + " = " + perDue(r.redi, r.n) + "/model" },
		func(s, b runResult) string { return ratio(s.redi, b.redi) })
	line("total CPU (full cycle)", func(r runResult) string { return secs(r.totalCPU()) + " = " + perDue(r.totalCPU(), r.n) + "/model" },
		func(s, b runResult) string { return ratio(s.totalCPU(), b.totalCPU()) })
	line("peak RSS (full cycle)", func(r runResult) string { return mb(r.rssKB) },
		func(s, b runResult) string { return ratio(float64(s.rssKB), float64(b.rssKB)) })
	if len(steady) > 0 {
		n := steady["service"].n
		line(fmt.Sprintf("steady %.0f/s (%d models): lateness p50/p99/max", rate, n), func(r runResult) string {
			return pct(r.lateness, 0.5) + " / " + pct(r.lateness, 0.99) + " / " + maxDur(r.lateness)
		}, nil)
		line("steady: kept up", func(r runResult) string {
			if r.keptUp {
				return "yes"
			}
			return "NO"
		}, nil)
		line("steady: process CPU", func(r runResult) string { return secs(r.cpu) + " = " + perDue(r.cpu, r.n) + "/model" },
			func(s, b runResult) string { return ratio(s.cpu, b.cpu) })
	}
	tw.Flush()
	fmt.Fprintln(w)
	fmt.Fprintln(w, "models/s ratios are service/baseline (1.00x = as fast as the hand-written cycle; target >= 1.00x);")
	fmt.Fprintln(w, "CPU and RSS ratios are service/baseline too (lower is better). Backlog wait is refresh_at -> job")
	fmt.Fprintln(w, "popped when every row is due at the start; steady lateness (target p99 < 1s) is the same with rows")
	fmt.Fprintln(w, "falling due at a constant rate. Database and Redis CPU is the whole server's, other users included")
	fmt.Fprintln(w, "(PostgreSQL's: the bench database's backends and the server's background processes; SQLite runs")
	fmt.Fprintln(w, "inside each child: its CPU is the process CPU). Total CPU is process + database + Redis + the bench's")
	fmt.Fprintln(w, "workers: the whole machine's work per cycle, whatever the scheduling.")
}

func resultOf(impl string, full, split, steady map[string]runResult, label string) runResult {
	switch {
	case len(label) >= 8 && label[:8] == "dispatch", len(label) >= 5 && label[:5] == "apply":
		return split[impl]
	case len(label) >= 6 && label[:6] == "steady":
		return steady[impl]
	}
	return full[impl]
}

// dbName names the database server of a --store in the report.
func dbName(store string) string {
	switch store {
	case "postgres":
		return "PostgreSQL"
	case "sqlite":
		return "SQLite"
	}
	return "MariaDB"
}
