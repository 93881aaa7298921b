// Command bench measures the full refresh cycle of the refresher service
// (dispatcher + poller, production code paths and batch sizes) against the
// local database (--store) and Redis, next to a minimal hand-written baseline measured
// in the same run, and prints the ratios. See docs/performance.md.
//
//	go run ./bench                       # MariaDB/MySQL: 100k rows, all due
//	go run ./bench --store postgres      # the same on PostgreSQL
//	go run ./bench --store sqlite        # the same on a SQLite file
//	go run ./bench --scaling             # 100k vs 1M rows, 50k due
//	go run ./bench --scaling --huge      # ... and 10M rows (seeding takes minutes)
//	go run ./bench --operator            # with the alert gauges and the dashboard vs without
//	go run ./bench --guard               # with the incident guard and a throttle_group vs without
//
// It creates and drops its own database (refresher_bench; for SQLite a file
// in a temporary directory) and uses its own Redis key prefix; it never
// touches anything else on the servers.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/refresher/refresher/refresher"
	"github.com/refresher/refresher/schedule"
)

type options struct {
	rows, due   int64
	batch       int
	scaling     bool
	scalingDue  int64
	huge        bool   // --scaling: add 10M rows (scaling.go)
	scalingRows string // --scaling: the table sizes, overriding the default and --huge
	bufferPool  string // --buffer-pool: MariaDB's innodb_buffer_pool_size for the run (bufferpool.go)
	steady      time.Duration
	rate        float64
	workers     int
	repeat      int
	store       string
	mysqlDSN    string
	postgresURL string
	sqliteFile  string
	redisAddr   string
	database    string
	profileDir  string
	profileMem  bool
	keep        bool
	child       childOpts
	onlyService bool
	redisStats  bool
	// --operator and --guard (compare.go)
	operator       bool
	operatorGauges string
	dashboardEvery time.Duration
	guard          bool
	ledger         bool // --ledger: on against off
	pgStats        bool // --pg-stats: PostgreSQL's counters under each run (pgstat.go)
	mysqlStats     bool // --mysql-stats: MariaDB's counters under each run (mysqlstat.go)
	timeline       bool // --timeline: when each tenth of a run was applied (timeline.go)
	pgStatements   bool // --pg-statements: pg_stat_statements under each run (pgstatements.go)
	// --priority (priority.go)
	priority bool
	triggers int
}

func main() {
	var o options
	fs := flag.NewFlagSet("bench", flag.ExitOnError)
	fs.Int64Var(&o.rows, "rows", 100_000, "models in the table")
	fs.Int64Var(&o.due, "due", 0, "models due at the start (0: all)")
	fs.IntVar(&o.batch, "batch", 0, fmt.Sprintf("rows per transaction (0: the service's default, %d); the baseline uses the same", refresher.DefaultBatchSize))
	fs.BoolVar(&o.scaling, "scaling", false, "run the scaling table instead: 100k and 1M rows (10M with --huge) with --scaling-due due, and the read calls of the gauges, dashboard and API on each")
	fs.Int64Var(&o.scalingDue, "scaling-due", 50_000, "models due in each run of --scaling")
	fs.BoolVar(&o.huge, "huge", false, "--scaling: add a table of 10,000,000 rows (seeding it takes minutes, and about 5 GB of disk)")
	fs.StringVar(&o.scalingRows, "scaling-rows", "", "--scaling: the table sizes, comma-separated (e.g. 100000,10000000), instead of 100k and 1M (and --huge)")
	fs.StringVar(&o.bufferPool, "buffer-pool", "", "--store mysql: set the server's innodb_buffer_pool_size to this (e.g. 3G) for the run, online, and restore it at the end (the whole server's setting)")
	fs.DurationVar(&o.steady, "steady", 10*time.Second, "length of the steady-load run that measures lateness (0: skip)")
	fs.Float64Var(&o.rate, "rate", 0, "models falling due per second in the steady run (0: half the service's full-cycle rate)")
	fs.IntVar(&o.workers, "workers", 2, "worker goroutines answering jobs (each pops up to 100 per round trip)")
	fs.IntVar(&o.repeat, "repeat", 1, "full-cycle runs per implementation; the median is reported")
	fs.StringVar(&o.store, "store", "mysql", "database to run on: "+storeNames)
	fs.StringVar(&o.mysqlDSN, "mysql", "root@tcp(127.0.0.1:3306)/", "--store mysql: MariaDB/MySQL DSN without a database name")
	fs.StringVar(&o.postgresURL, "postgres", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "--store postgres: URL of a database to connect to while creating --database")
	fs.StringVar(&o.sqliteFile, "sqlite-file", "", "--store sqlite: the database file (default: in a new temporary directory)")
	fs.StringVar(&o.redisAddr, "redis", "127.0.0.1:6379", "Redis address")
	fs.StringVar(&o.database, "database", "refresher_bench", "database to create, use and drop (mysql, postgres)")
	fs.StringVar(&o.profileDir, "profile", "", "write the service's CPU and allocation profiles of the full cycle to this directory")
	fs.BoolVar(&o.profileMem, "profile-mem", false, "--profile: sample an allocation every 4 KiB (runtime.MemProfileRate 4096) for a detailed allocation profile; the stack unwinding this costs is about a fifth of the CPU profile, so leave it off for a CPU profile")
	fs.BoolVar(&o.keep, "keep", false, "keep the database after the run")
	fs.BoolVar(&o.onlyService, "only-service", false, "skip the baseline (profiling)")
	fs.BoolVar(&o.redisStats, "redis-stats", false, "print under each full-cycle run the Redis commands it sent (INFO commandstats: calls and µs per model; use a Redis of your own, the counters are the whole server's)")
	fs.StringVar(&o.child.role, "role", "", "internal: run as the service or baseline child")
	fs.StringVar(&o.child.prefix, "prefix", "", "internal: Redis key prefix")
	fs.BoolVar(&o.operator, "operator", false, "compare the full cycle with the alert gauges on and the dashboard open against without (instead of the standard table)")
	fs.StringVar(&o.operatorGauges, "operator-gauges", "1s,"+refresher.DefaultGaugeInterval.String(), "--operator: the gauge intervals to run, one variant each")
	fs.DurationVar(&o.dashboardEvery, "dashboard-every", 5*time.Second, "--operator: how often the open dashboard asks for its overview and /api/v1/kinds (the page's own refresh is 5s)")
	fs.BoolVar(&o.guard, "guard", false, "compare the full cycle with the incident guard and a throttle_group against with neither (instead of the standard table)")
	fs.BoolVar(&o.ledger, "ledger", false, "compare the full cycle with the ledger on against off, the default (instead of the standard table)")
	fs.BoolVar(&o.priority, "priority", false, "compare the full cycle of a kind with a priority lane, while --triggers rows are triggered \"refresh now\" at priority 0 one by one, against the plain service; reports when a worker received each triggered job (instead of the standard table)")
	fs.BoolVar(&o.pgStats, "pg-stats", false, "--store postgres: print under each full-cycle run the bench database's commits, rows and blocks, the server's WAL records and syncs, and the bench table's index scans and entries read")
	fs.BoolVar(&o.mysqlStats, "mysql-stats", false, "--store mysql: print under each run the server's statements, row operations, redo and syncs per model (SHOW GLOBAL STATUS: the whole server's)")
	fs.BoolVar(&o.timeline, "timeline", false, "print under each run when each tenth of its models had been applied, and the longest wait between two applied batches")
	fs.BoolVar(&o.pgStatements, "pg-statements", false, "--store postgres: print under each run pg_stat_statements of the bench database over the run, per model (the server must preload pg_stat_statements; the shared one does not)")
	fs.IntVar(&o.triggers, "triggers", 100, "--priority: rows triggered during each run")
	fs.BoolVar(&o.child.lanes, "child-lanes", false, "internal: the service child's kind has priority 10 and a lane for level 0")
	fs.DurationVar(&o.child.gauges, "child-gauges", 0, "internal: the service child runs the alert gauges at this interval")
	fs.BoolVar(&o.child.dashboard, "child-dashboard", false, "internal: the service child serves the dashboard")
	fs.BoolVar(&o.child.ledger, "child-ledger", false, "internal: the service child records the ledger")
	fs.BoolVar(&o.child.ledgerRows, "child-ledger-rows", false, "internal: the service child's ledger records every plain success as a row entry (ledger.routine: rows)")
	fs.BoolVar(&o.child.guardOff, "child-guard-off", false, "internal: the service child's kind has its incident guard off")
	fs.StringVar(&o.child.throttleGroup, "child-throttle-group", "", "internal: the service child's kind's throttle_group column")
	_ = fs.Parse(os.Args[1:])
	if (o.operator || o.guard || o.priority || o.ledger) && !flagSet(fs, "repeat") {
		o.repeat = 3 // a ratio of single runs says nothing on a shared machine
	}

	if o.child.role != "" {
		if err := runChild(o); err != nil {
			fmt.Fprintln(os.Stderr, "bench child:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// flagSet reports whether the command line set the flag name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// env is what every run of one benchmark invocation shares.
type env struct {
	o        options
	st       benchStore
	rdb      *redis.Client
	prefix   string
	redisPID int
	rows     int64
	// pgReadsBy is PostgreSQL's blocks read by relation at the last
	// pageReads (--scaling).
	pgReadsBy map[string]int64
}

func run(ctx context.Context, o options) error {
	if o.batch == 0 {
		o.batch = refresher.DefaultBatchSize
	}
	st, err := openBenchStore(ctx, o, true)
	if err != nil {
		return err
	}
	defer st.close(o.keep)
	rdb := redis.NewClient(&redis.Options{Addr: o.redisAddr, PoolSize: 4 * o.workers})
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("connect to Redis at %s: %w", o.redisAddr, err)
	}
	e := &env{o: o, st: st, rdb: rdb, prefix: fmt.Sprintf("refresher-bench:%d:", os.Getpid()),
		redisPID: redisProcess(ctx, rdb)}
	defer e.flushRedis(context.Background())
	e.header(ctx)
	return e.withBufferPool(ctx, func() error {
		if o.scaling {
			return e.scaling(ctx)
		}
		if o.operator || o.guard || o.priority || o.ledger {
			return e.compare(ctx)
		}
		return e.standard(ctx)
	})
}

func (e *env) header(ctx context.Context) {
	rv := "?"
	if info, err := e.rdb.Info(ctx, "server").Result(); err == nil {
		for _, l := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(l), "redis_version:"); ok {
				rv = v
			}
		}
	}
	fmt.Printf("machine: %d cores (GOMAXPROCS %d), %s, %s, Redis %s\n",
		runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), e.st.describe(ctx), rv)
	fmt.Printf("batch %d rows per transaction (service and baseline), %d worker goroutines popping up to %d jobs per round trip\n",
		e.o.batch, e.o.workers, popBatch)
	if pids := e.st.serverPIDs(); len(pids) == 0 || cpuSeconds(pids[0]) < 0 {
		fmt.Println("note: no database server process to read in /proc (SQLite runs in the child, or another user's server): its CPU is not reported")
	}
	if e.redisPID == 0 || cpuSeconds(e.redisPID) < 0 {
		fmt.Println("note: Redis's /proc entry is not readable here: its CPU is not reported")
	}
	fmt.Println()
}

func (e *env) seed(ctx context.Context, rows int64) error {
	start := time.Now()
	if err := e.st.seed(ctx, rows); err != nil {
		return err
	}
	e.rows = rows
	fmt.Printf("seeded %d rows in %.1fs\n", rows, time.Since(start).Seconds())
	return nil
}

// flushRedis deletes every key of the benchmark's prefix.
func (e *env) flushRedis(ctx context.Context) {
	iter := e.rdb.Scan(ctx, 0, e.prefix+"*", 1000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if len(keys) > 0 {
		e.rdb.Del(ctx, keys...)
	}
}

// child is a running service or baseline process.
type child struct {
	role  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan progress
	pid   int
	// httpAddr is where the child serves the dashboard; "" when it does not.
	httpAddr string
	// stats is what it counted during the cycle, read by stop.
	stats childStats
}

type progress struct {
	kind string
	n    int
	text string // what follows the kind
	at   time.Time
}

func (e *env) startChild(v variant, profile bool) (*child, error) {
	role := v.role
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args := append([]string{"--role", role, "--prefix", e.prefix, "--store", e.o.store,
		"--redis", e.o.redisAddr, "--batch", strconv.Itoa(e.o.batch)}, e.st.childArgs()...)
	args = append(args, v.args...)
	if profile && e.o.profileDir != "" {
		args = append(args, "--profile", e.o.profileDir)
		if e.o.profileMem {
			args = append(args, "--profile-mem")
		}
	}
	cmd := exec.Command(exe, args...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &child{role: role, cmd: cmd, stdin: stdin, lines: make(chan progress, 4096), pid: cmd.Process.Pid}
	go func() {
		defer close(c.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			kind, n, _ := strings.Cut(sc.Text(), " ")
			v, _ := strconv.Atoi(n)
			c.lines <- progress{kind: kind, n: v, text: n, at: time.Now()}
		}
	}()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case p, ok := <-c.lines:
			switch {
			case ok && p.kind == "http":
				c.httpAddr = p.text
				continue
			case !ok || p.kind != "ready":
				_ = cmd.Wait()
				return nil, fmt.Errorf("%s child did not start", role)
			}
			return c, nil
		case <-timeout:
			_ = cmd.Process.Kill()
			return nil, fmt.Errorf("%s child did not get ready within 30s", role)
		}
	}
}

func (c *child) start() error {
	_, err := io.WriteString(c.stdin, "go\n")
	return err
}

// stop closes the child's stdin and waits for it to exit.
func (c *child) stop() error {
	_ = c.stdin.Close()
	done := make(chan error, 1)
	c.stats = parseStats("")
	go func() {
		for p := range c.lines {
			if p.kind == "stats" {
				c.stats = parseStats(p.text)
			}
		}
		done <- c.cmd.Wait()
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(40 * time.Second):
		_ = c.cmd.Process.Kill()
		return fmt.Errorf("%s child did not stop", c.role)
	}
}

// Modes of a cycle run.
const (
	modeFull   = "full"   // the worker answers at once; wall time of the whole cycle
	modeSplit  = "split"  // the worker holds results until all are dispatched
	modeSteady = "steady" // rows fall due over time; lateness
)

// variant is what a cycle runs: a child of role service or baseline, with
// extra child flags for the service's variants compared by --operator and
// --guard (compare.go).
type variant struct {
	name, role string
	args       []string
	// triggers is how many rows the run triggers at priority 0 (--priority).
	triggers int
}

// plain is the implementation impl (service or baseline) as configured by
// default. The service runs as `refresher run` runs by default, with its
// operator server on: the alert gauges every refresher.DefaultGaugeInterval
// and the dashboard, which the bench keeps open (polled every
// --dashboard-every, as the page refreshes itself), so that the standard
// table measures what a default deployment costs, counts included.
func plain(impl string) variant {
	v := variant{name: impl, role: impl}
	if impl == "service" {
		v.args = []string{"--child-gauges", refresher.DefaultGaugeInterval.String(), "--child-dashboard"}
	}
	return v
}

// runResult is one cycle run of one implementation.
type runResult struct {
	impl, mode       string
	n                int64
	wall             time.Duration // go -> every result applied
	dispatch, apply  time.Duration // split mode: go -> all dispatched; release -> all applied
	cpu, dbCPU, redi float64       // CPU seconds over the run, -1 unknown
	// bench is the bench process's own CPU seconds over the run: the
	// workers, the dashboard's requests and the bookkeeping, the same for
	// every implementation.
	bench     float64
	rssKB     int64 // peak RSS of the child
	pageReads int64 // database pages read from storage over the run, -1 unknown (scaling.go)
	lateness  []time.Duration
	keptUp    bool
	dash      dashStats  // the dashboard's requests during the run, if open
	stats     childStats // what the child counted (service only)
	// triggered is, per row triggered during the run, the time from its
	// trigger's commit to a worker's pop of its job (--priority).
	triggered []time.Duration
	// cmds is Redis's INFO commandstats before and after the run
	// (--redis-stats).
	cmds [2]map[string]commandStat
}

func (r runResult) rate() float64 { return float64(r.n) / r.wall.Seconds() }

// totalCPU is the CPU seconds the whole cycle cost the machine: the
// child's process, the database server, Redis and the bench's workers
// (a part it could not measure counts as none; -1 when the child's is
// unknown). Its ratio does not depend on how the two cores were shared
// out, which the models/s ratio does: it moves less between invocations.
func (r runResult) totalCPU() float64 {
	if r.cpu < 0 {
		return -1
	}
	return r.cpu + max(r.dbCPU, 0) + max(r.redi, 0) + max(r.bench, 0)
}

// cycle runs one implementation over the plan p in the given mode.
func (e *env) cycle(ctx context.Context, v variant, mode string, p *plan, profile bool) (runResult, error) {
	impl := v.name
	res := runResult{impl: impl, mode: mode, n: p.active}
	// The plan rewrites the due rows, which leaves garbage of its own: a run
	// settles after it, except the steady run, whose first rows fall due
	// five seconds after the plan was made.
	steady := mode == modeSteady
	if steady {
		e.st.settle(ctx)
	}
	e.flushRedis(ctx)
	if err := e.st.applyPlan(ctx, p); err != nil {
		return res, err
	}
	if !steady {
		e.st.settle(ctx)
	}
	c, err := e.startChild(v, profile)
	if err != nil {
		return res, err
	}
	defer func() {
		if c != nil {
			_ = c.stop()
		}
	}()
	ls := lists(e.prefix)
	w := &workerPool{rdb: e.rdb, input: ls.Input, output: ls.Output, plan: p}
	if v.triggers > 0 {
		w.lanes = []string{ls.PriorityInput(0)}
	}
	w.hold.Store(mode == modeSplit)
	stopWorkers := w.run(ctx, e.o.workers)
	defer stopWorkers()

	limit := time.Duration(max(60, p.active/300)) * time.Second
	if mode == modeSteady {
		limit += time.Until(p.base.Add(time.Duration(p.active) * p.step))
	}
	deadline := time.After(limit)
	pgBefore := e.readPGCounters(ctx)
	defer e.printPGDelta(ctx, pgBefore)
	mysqlBefore := e.readMySQLStatus(ctx)
	defer e.printMySQLDelta(ctx, mysqlBefore, p.active)
	cmdsBefore := e.commandStats(ctx)
	cpu, dbCPU, redi := startCPU(c.pid), startCPUs(e.st.serverPIDs), startCPU(e.redisPID)
	self := startCPU(os.Getpid())
	reads := e.pageReads(ctx)
	statements := e.resetPGStatements(ctx)
	t0 := time.Now()
	if err := c.start(); err != nil {
		return res, err
	}
	stopDash := func() dashStats { return dashStats{} }
	if c.httpAddr != "" {
		stopDash = openDashboard(ctx, "http://"+c.httpAddr, e.o.dashboardEvery)
	}
	defer stopDash()
	var dispatched, appliedN int64
	var released time.Time
	applied := newTimeline(p.active)
	if e.o.timeline {
		defer func() { fmt.Printf("    %s %s run, applied by:%s\n", impl, mode, applied) }()
	}
	trig := e.newTriggerer(v.triggers, p, w)
	defer trig.stop()
	for appliedN < p.active {
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-deadline:
			return res, fmt.Errorf("%s %s run: %d of %d dispatched, %d applied after %s", impl, mode, dispatched, p.active, appliedN, limit)
		case pr, ok := <-c.lines:
			if !ok {
				return res, fmt.Errorf("%s child exited during the run", impl)
			}
			switch pr.kind {
			case "D":
				dispatched += int64(pr.n)
				trig.startAt(ctx, dispatched)
				if dispatched >= p.active && res.dispatch == 0 {
					res.dispatch = pr.at.Sub(t0)
					if mode == modeSplit {
						for w.popped.Load() < p.active {
							time.Sleep(time.Millisecond)
						}
						released = time.Now()
						if err := w.release(ctx, e.o.batch); err != nil {
							return res, err
						}
					}
				}
			case "A":
				appliedN += int64(pr.n)
				applied.add(pr.at.Sub(t0), int64(pr.n))
				if appliedN >= p.active {
					res.wall = pr.at.Sub(t0)
					if mode == modeSplit {
						res.apply = pr.at.Sub(released)
					}
				}
			}
		}
	}
	res.cpu, res.dbCPU, res.redi, res.bench = cpu.Stop(), dbCPU.Stop(), redi.Stop(), self.Stop()
	statements.print(ctx, p.active)
	res.cmds = [2]map[string]commandStat{cmdsBefore, e.commandStats(ctx)}
	res.dash = stopDash()
	if err := res.dash.err(); err != nil {
		return res, fmt.Errorf("%s %s run: %w", impl, mode, err)
	}
	res.rssKB = statusKB(c.pid, "VmHWM")
	if err := c.stop(); err != nil {
		return res, err
	}
	res.stats = c.stats
	c = nil
	res.pageReads = e.pageReadsSince(ctx, reads)
	stopWorkers()
	res.lateness = w.takeLateness()
	if res.triggered, err = trig.result(); err != nil {
		return res, err
	}
	slices.Sort(res.lateness)
	if n, err := e.st.applied(ctx, t0.UTC().Add(-time.Second)); err != nil {
		return res, err
	} else if n != p.active {
		return res, fmt.Errorf("%s %s run: %d rows applied in the database, want %d", impl, mode, n, p.active)
	}
	if mode == modeSteady {
		end := p.base.Add(time.Duration(p.active) * p.step)
		res.keptUp = t0.Add(res.wall).Sub(end) < time.Second
	}
	return res, nil
}

// backlogPlan makes n rows due in the second before now.
func (e *env) backlogPlan(due int64) *plan {
	step := time.Second / time.Duration(due)
	step = max(step.Truncate(time.Microsecond), time.Microsecond)
	return &plan{rows: e.rows, due: due, active: due,
		base: time.Now().UTC().Add(-time.Duration(due) * step).Truncate(time.Microsecond), step: step}
}

// occurrencePlan makes n rows due at the kind's last occurrence
// (kindRule) at or before now, as a row is after its first success: the
// routine cycle of the ledger's comparison, whose starts need no
// dispatched entry (policy.RoutineStart), while the backlog's refresh_at,
// written by the application, is no occurrence.
func (e *env) occurrencePlan(due int64) (*plan, error) {
	sched, err := schedule.Parse(kindRule)
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	last := sched.Next(now.Add(-8 * 24 * time.Hour))
	for n := sched.Next(last); !n.IsZero() && !n.After(now); n = sched.Next(n) {
		last = n
	}
	if last.IsZero() || last.After(now) {
		return nil, fmt.Errorf("the rule %q has no occurrence in the week before now", kindRule)
	}
	return &plan{rows: e.rows, due: due, active: due, base: last}, nil
}

// fullRuns runs the full cycle repeat times per implementation, after
// warmUp's uncounted cycles, and returns the median run of each. The
// implementations alternate, and each repeat starts with the next one
// (service first, then baseline first, ...): a run pays for some of the
// previous run's after-effects (the database's purge, the allocator), so
// a fixed order would favour one side.
func (e *env) fullRuns(ctx context.Context, due int64, impls []string) (map[string]runResult, error) {
	if err := e.warmUp(ctx, plain(impls[len(impls)-1]), due); err != nil {
		return nil, err
	}
	all := map[string][]runResult{}
	for i := range e.o.repeat {
		for _, impl := range repeatOrder(impls, i) {
			r, err := e.cycle(ctx, plain(impl), modeFull, e.backlogPlan(due), i == 0)
			if err != nil {
				return nil, err
			}
			fmt.Printf("  %-8s full cycle %d/%d: %s (%.0f models/s); per model: process %s, database %s, Redis %s, the bench's workers %s, in all %s of CPU; peak RSS %d MB\n",
				impl, i+1, e.o.repeat, r.wall.Round(time.Millisecond), r.rate(),
				perDueFine(r.cpu, r.n), perDueFine(r.dbCPU, r.n), perDueFine(r.redi, r.n), perDueFine(r.bench, r.n), perDueFine(r.totalCPU(), r.n), r.rssKB>>10)
			printCommandStats(r.cmds[0], r.cmds[1], r.n)
			all[impl] = append(all[impl], r)
		}
	}
	out := map[string]runResult{}
	for impl, rs := range all {
		slices.SortFunc(rs, func(a, b runResult) int { return int(a.wall - b.wall) })
		out[impl] = rs[len(rs)/2]
	}
	return out, nil
}

// warmUpCycles is how many full cycles warmUp runs: on PostgreSQL the
// table's indexes grow through the first two (and the plans between
// them), and by a few pages at most from the third on.
const warmUpCycles = 2

// warmUp runs warmUpCycles full cycles of v over due rows that are not
// counted, so that every measured cycle starts from a table in its steady
// state. The first cycles after the seed cost more than the later ones,
// whoever runs them: on PostgreSQL the first grew the table's indexes
// from 4,920 to 8,184 pages, the plan after it to 10,124 and the second
// cycle to 10,730 (the seed and the migrations leave the indexes' pages
// full, so new entries split them); each later cycle added at most 8.
// In twelve invocations on all three stores (27 November) the first run
// was a median 5% slower than the same implementation's later runs; with
// one warm-up cycle PostgreSQL's first measured run still was. Before,
// those runs were always the service's.
func (e *env) warmUp(ctx context.Context, v variant, due int64) error {
	fmt.Printf("  warm-up: %d full cycles of the %s, not counted (the first cycles after the seed split the indexes' pages)\n", warmUpCycles, v.name)
	for i := range warmUpCycles {
		r, err := e.cycle(ctx, v, modeFull, e.backlogPlan(due), false)
		if err != nil {
			return fmt.Errorf("warm-up cycle: %w", err)
		}
		fmt.Printf("  warm-up  full cycle %d/%d: %s (%.0f models/s)\n", i+1, warmUpCycles, r.wall.Round(time.Millisecond), r.rate())
	}
	return nil
}

// repeatOrder is the order of the implementations in repeat i: rotated by
// i, so that each goes first in turn.
func repeatOrder(impls []string, i int) []string {
	n := len(impls)
	out := make([]string, n)
	for j := range n {
		out[j] = impls[(i+j)%n]
	}
	return out
}

func (e *env) impls() []string {
	if e.o.onlyService {
		return []string{"service"}
	}
	return []string{"service", "baseline"}
}

func (e *env) standard(ctx context.Context) error {
	o := e.o
	due := o.due
	if due <= 0 || due > o.rows {
		due = o.rows
	}
	if err := e.seed(ctx, o.rows); err != nil {
		return err
	}
	if err := e.explain(ctx, os.Stdout, due); err != nil {
		return err
	}
	impls := e.impls()
	full, err := e.fullRuns(ctx, due, impls)
	if err != nil {
		return err
	}
	split := map[string]runResult{}
	for _, impl := range impls {
		r, err := e.cycle(ctx, plain(impl), modeSplit, e.backlogPlan(due), false)
		if err != nil {
			return err
		}
		fmt.Printf("  %-8s dispatch only: %s, apply only: %s\n", impl, r.dispatch.Round(time.Millisecond), r.apply.Round(time.Millisecond))
		split[impl] = r
	}
	steady := map[string]runResult{}
	var rate float64
	if o.steady > 0 {
		rate = o.rate
		if rate <= 0 {
			rate = full["service"].rate() / 2
		}
		n := min(int64(rate*o.steady.Seconds()), due)
		step := time.Duration(float64(time.Second) / rate).Truncate(time.Microsecond)
		for _, impl := range impls {
			p := &plan{rows: e.rows, due: due, active: n, step: step}
			p.base = time.Now().UTC().Add(5 * time.Second).Truncate(time.Microsecond)
			r, err := e.cycle(ctx, plain(impl), modeSteady, p, false)
			if err != nil {
				return err
			}
			fmt.Printf("  %-8s steady %.0f/s for %s: lateness p99 %s\n", impl, rate, o.steady, pct(r.lateness, 0.99))
			steady[impl] = r
		}
	}
	fmt.Println()
	printStandard(os.Stdout, o, due, impls, full, split, steady, rate)
	return nil
}

// explain writes to w the plan of the service's claim with due rows due, as
// at the start of a run, and what the claim read when run once: the same
// explainClaim --scaling prints, so both show the claim the service sends.
func (e *env) explain(ctx context.Context, w io.Writer, due int64) error {
	if err := e.st.applyPlan(ctx, e.backlogPlan(due)); err != nil {
		return err
	}
	plan, examined, err := e.explainClaim(ctx, e.o.batch)
	if err != nil {
		return err
	}
	fmt.Fprint(w, plan)
	fmt.Fprintf(w, "the claim run once (rolled back): %s\n\n", examined)
	return nil
}
