package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/refresher"
	"github.com/refresher/refresher/schedule"
)

// benchMainEnv makes the test binary run the bench's main instead of the
// tests: the smoke test starts it as the bench, which starts it again as
// its children (os.Executable).
const benchMainEnv = "REFRESHER_BENCH_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(benchMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestCompareSmoke runs --operator --guard end to end on a small SQLite
// table and the real Redis: every variant runs its full cycle (the
// service's own check that every row was applied), and the dashboard
// variants' children serve the dashboard, which the parent polls.
func TestCompareSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a dozen processes")
	}
	rdb, _ := testenv.Redis(t) // only to fail with a hint when Redis is down
	cmd := exec.Command(os.Args[0], "--store", "sqlite", "--rows", "300", "--repeat", "1",
		"--redis", rdb.Options().Addr, "--operator", "--guard",
		"--operator-gauges", "200ms,15s", "--dashboard-every", "200ms")
	cmd.Env = append(os.Environ(), benchMainEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bench --operator --guard: %v\n%s", err, out)
	}
	s := string(out)
	for _, want := range []string{
		"COMPARISON --guard --operator",
		"service, no guard, no throttle",
		"service (guard on: the default)",
		"service, guard + throttle_group",
		"service + gauges 200ms + dashboard",
		"service + gauges 15s + dashboard",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	// Both dashboard variants asked for both pages at least once.
	m := regexp.MustCompile(`dashboard: (\d+) requests`).FindAllStringSubmatch(s, -1)
	if len(m) != 2 {
		t.Fatalf("want 2 runs with the dashboard open, got %d:\n%s", len(m), s)
	}
	for _, g := range m {
		if n, _ := strconv.Atoi(g[1]); n < len(dashboardPaths) {
			t.Errorf("a dashboard run made %d requests, want at least %d:\n%s", n, len(dashboardPaths), s)
		}
	}
}

// TestComparisons checks the child flags of each variant: they are what
// makes a variant differ from its reference.
func TestComparisons(t *testing.T) {
	e := &env{o: options{operator: true, guard: true, operatorGauges: "1s, 15s"}}
	vs, err := e.comparisons()
	if err != nil {
		t.Fatal(err)
	}
	type want struct{ name, ref, args string }
	var got []want
	for _, v := range vs {
		got = append(got, want{v.name, v.ref, strings.Join(v.args, " ")})
	}
	off, def := "service, no guard, no throttle", "service (guard on: the default)"
	exp := []want{
		{off, "", "--child-guard-off"},
		{def, off, ""},
		{"service, guard + throttle_group", off, "--child-throttle-group input_url"},
		{"service + gauges 1s + dashboard", def, "--child-gauges 1s --child-dashboard"},
		{"service + gauges 15s + dashboard", def, "--child-gauges 15s --child-dashboard"},
	}
	if !slices.Equal(got, exp) {
		t.Errorf("comparisons:\n got %q\nwant %q", got, exp)
	}

	e.o.guard = false
	vs, _ = e.comparisons()
	if vs[0].name != "service, no gauges, no dashboard" || vs[0].ref != "" || len(vs[0].args) != 0 || len(vs) != 3 {
		t.Errorf("--operator alone: want the service without gauges or dashboard as the reference of 2 variants, got %+v", vs)
	}
	e.o.operatorGauges = "1s,soon"
	if _, err := e.comparisons(); err == nil || !strings.Contains(err.Error(), `"soon" is not a positive duration`) {
		t.Errorf("a bad --operator-gauges: got %v", err)
	}
}

// TestServiceConfig checks that the child flags reach the kind.
func TestServiceConfig(t *testing.T) {
	sched, err := schedule.Parse(kindRule)
	if err != nil {
		t.Fatal(err)
	}
	table := models.Table{Name: benchTable, Key: "id", Payload: []string{guardColumn}}
	k := serviceConfig(options{}, table, sched, nil).Kinds[0]
	if k.Policy.Guard.Off || k.ThrottleGroup != "" {
		t.Errorf("defaults: guard off %v, throttle group %q; want the guard on and no group", k.Policy.Guard.Off, k.ThrottleGroup)
	}
	k = serviceConfig(options{child: childOpts{guardOff: true, throttleGroup: guardColumn}}, table, sched, nil).Kinds[0]
	if !k.Policy.Guard.Off || k.ThrottleGroup != guardColumn {
		t.Errorf("variant: guard off %v, throttle group %q; want off and %q", k.Policy.Guard.Off, k.ThrottleGroup, guardColumn)
	}
}

// TestOpenDashboard checks that the poller asks for every page at once and
// then every period, and counts what fails.
func TestOpenDashboard(t *testing.T) {
	var mu sync.Mutex
	hits := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path]++
		mu.Unlock()
		if r.URL.Path == "/api/v1/kinds" {
			http.Error(w, "no", http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	count := func(p string) int { mu.Lock(); defer mu.Unlock(); return hits[p] }

	stop := openDashboard(context.Background(), srv.URL, 20*time.Millisecond)
	testenv.Eventually(t, 10*time.Second, "three visits of the overview", func() bool { return count("/") >= 3 })
	st := stop()
	if again := stop(); again != st {
		t.Errorf("a second stop returned %+v, want %+v", again, st)
	}
	if count("/") < 3 || count("/api/v1/kinds") < 2 {
		t.Fatalf("hits %v: want the overview and the API asked for again and again", hits)
	}
	if st.requests != count("/")+count("/api/v1/kinds") || st.failures != count("/api/v1/kinds") {
		t.Errorf("stats %+v, hits %v: want every request counted and the API's 500s as failures", st, hits)
	}
	if !strings.Contains(st.firstErr, "500") {
		t.Errorf("first error %q, want the status", st.firstErr)
	}
	// A run whose dashboard failed measures nothing: cycle returns this.
	if err := st.err(); err == nil || !strings.Contains(err.Error(), "dashboard requests failed") {
		t.Errorf("err() = %v, want the failures", err)
	}
	if err := (dashStats{requests: 3}).err(); err != nil {
		t.Errorf("no failures: err() = %v", err)
	}
}

func TestMedianAndPairs(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2}} {
		if got := medianOf(c.in); got != c.want {
			t.Errorf("medianOf(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	run := func(wall time.Duration) runResult { return runResult{n: 1000, wall: wall} }
	got := pairedRatios([]runResult{run(2 * time.Second), run(time.Second)}, []runResult{run(time.Second), run(time.Second), run(time.Second)})
	if !slices.Equal(got, []float64{0.5, 1}) {
		t.Errorf("pairedRatios = %v, want [0.5 1]", got)
	}
}

// TestRepeatOrder: in the standard table each implementation goes first in
// turn, so that neither always runs after the other's after-effects.
func TestRepeatOrder(t *testing.T) {
	impls := []string{"service", "baseline"}
	for i, want := range [][]string{{"service", "baseline"}, {"baseline", "service"}, {"service", "baseline"}} {
		if got := repeatOrder(impls, i); !slices.Equal(got, want) {
			t.Errorf("repeatOrder(%v, %d) = %v, want %v", impls, i, got, want)
		}
	}
	if got := repeatOrder([]string{"service"}, 1); !slices.Equal(got, []string{"service"}) {
		t.Errorf("repeatOrder([service], 1) = %v", got)
	}
}

// TestProfileDirName: each variant of a comparison profiles into a
// directory of its own, named after it.
func TestProfileDirName(t *testing.T) {
	for name, want := range map[string]string{
		"service":                           "service",
		"service, lane 0 + 100 triggers":    "service--lane-0---100-triggers",
		"service (ledger off: the default)": "service--ledger-off--the-default",
	} {
		if got := profileDirName(name); got != want {
			t.Errorf("profileDirName(%q) = %q, want %q", name, got, want)
		}
	}
}

// The standard table's service runs as `refresher run` does by default:
// the gauges at their default interval and the dashboard open.
func TestPlainServiceRunsTheDefaults(t *testing.T) {
	got := strings.Join(plain("service").args, " ")
	want := "--child-gauges " + refresher.DefaultGaugeInterval.String() + " --child-dashboard"
	if got != want {
		t.Errorf("plain(service).args = %q, want %q", got, want)
	}
	if b := plain("baseline"); len(b.args) != 0 {
		t.Errorf("plain(baseline).args = %q, want none", b.args)
	}
}
