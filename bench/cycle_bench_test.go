package main

import (
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
)

// BenchmarkFullCycle runs the bench's standard table on each store (the
// full cycle of the service and of its hand-written baseline, alternated,
// then each phase alone) and reports the service's rates over the
// baseline's from the same run, so that a change that costs the hot path
// speed shows as a lower ratio:
//
//	go test ./bench -run '^$' -bench FullCycle -benchtime 1x
//
// service/baseline is the full cycle's ratio of the medians (1.00: as fast
// as the hand-written loop); apply-only and dispatch-only are each phase's;
// total-CPU-service/baseline is the CPU the machine spent per cycle
// (process, database, Redis, workers; lower is better), which depends less
// on how the cores were shared out.
// REFRESHER_BENCH_ROWS (default 20000) and REFRESHER_BENCH_REPEAT (default
// 3) size it; a quiet machine is needed for figures worth comparing.
func BenchmarkFullCycle(b *testing.B) {
	rows := cmp.Or(os.Getenv("REFRESHER_BENCH_ROWS"), "20000")
	repeat := cmp.Or(os.Getenv("REFRESHER_BENCH_REPEAT"), "3")
	for _, store := range []string{"mysql", "postgres", "sqlite"} {
		b.Run(store, func(b *testing.B) {
			var out []byte
			for b.Loop() {
				cmd := exec.Command(os.Args[0], "--store", store, "--rows", rows, "--repeat", repeat, "--steady", "0",
					"--database", fmt.Sprintf("refresher_bench_%d", os.Getpid()))
				cmd.Env = append(os.Environ(), benchMainEnv+"=1")
				var err error
				if out, err = cmd.CombinedOutput(); err != nil {
					b.Fatalf("bench --store %s: %v\n%s", store, err, out)
				}
			}
			for _, m := range []struct{ line, unit string }{
				{"full cycle: models/s", "service/baseline"},
				{"apply only: models/s", "apply-only-service/baseline"},
				{"dispatch only: models/s", "dispatch-only-service/baseline"},
			} {
				s, base, err := serviceAndBaseline(string(out), m.line)
				if err != nil {
					b.Fatalf("%v\n%s", err, out)
				}
				b.ReportMetric(s/base, m.unit)
				if m.unit == "service/baseline" {
					b.ReportMetric(s, "service-models/s")
					b.ReportMetric(base, "baseline-models/s")
				}
			}
			cpu, err := totalCPURatio(string(out))
			if err != nil {
				b.Fatalf("%v\n%s", err, out)
			}
			b.ReportMetric(cpu, "total-CPU-service/baseline")
		})
	}
}

// serviceAndBaseline reads the service's and the baseline's figures from
// the line of the bench's table that starts with label.
func serviceAndBaseline(out, label string) (service, baseline float64, err error) {
	m := regexp.MustCompile(regexp.QuoteMeta(label) + `\s+(\d+)\s+(\d+)`).FindStringSubmatch(out)
	if m == nil {
		return 0, 0, fmt.Errorf("the bench printed no %q line", label)
	}
	service, _ = strconv.ParseFloat(m[1], 64)
	baseline, _ = strconv.ParseFloat(m[2], 64)
	if service <= 0 || baseline <= 0 {
		return 0, 0, fmt.Errorf("%q: a rate of zero (service %v, baseline %v)", label, service, baseline)
	}
	return service, baseline, nil
}

// totalCPURatio reads the ratio column of the bench table's total CPU
// line (the seconds beside it are rounded to a tenth).
func totalCPURatio(out string) (float64, error) {
	m := regexp.MustCompile(`total CPU \(full cycle\).*\s([\d.]+)x\s*\n`).FindStringSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("the bench printed no total CPU line with a ratio")
	}
	return strconv.ParseFloat(m[1], 64)
}

func TestServiceAndBaseline(t *testing.T) {
	out := "      full cycle: models/s                   4729                   5202             0.91x\n" +
		"      apply only: models/s                  12652                  14933             0.85x\n"
	s, b, err := serviceAndBaseline(out, "apply only: models/s")
	if err != nil || s != 12652 || b != 14933 {
		t.Fatalf("got %v %v %v, want 12652 14933", s, b, err)
	}
	if _, _, err := serviceAndBaseline(out, "dispatch only: models/s"); err == nil {
		t.Fatal("a missing line: no error")
	}
	cpu := "      total CPU (full cycle)   8.4 s = 84 µs/model   7.9 s = 79 µs/model   1.06x\n"
	if r, err := totalCPURatio(cpu); err != nil || r != 1.06 {
		t.Fatalf("total CPU: got %v %v, want 1.06", r, err)
	}
	if _, err := totalCPURatio(out); err == nil {
		t.Fatal("a missing total CPU line: no error")
	}
}
