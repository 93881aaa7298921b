package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
	"github.com/refresher/refresher/refresher"
	"github.com/refresher/refresher/schedule"
)

// The parent and a child talk over the child's stdin and stdout:
//
//	child -> parent: "http <addr>" when it serves the dashboard (--operator);
//	                 "ready" once connected; then "D <n>" after each
//	                 dispatch pass that started n > 0 attempts and pushed
//	                 their jobs, "A <n>" after each applied batch of n results;
//	                 "stats ..." once stopped (see accounting)
//	parent -> child: "go" to start; closing stdin stops the child, which
//	                 finishes its batch in hand, writes its profiles and exits.

// kindRule is the kind's default schedule: daily at 14:00 UTC, so that a
// successful refresh plans the row for tomorrow and it is not due again
// during the run.
const kindRule = "DTSTART:20260101T140000Z\nRRULE:FREQ=DAILY"

// childOpts are the flags only a child takes; the rest of options (store,
// Redis, batch, profile) it shares with the parent.
type childOpts struct {
	role   string // service or baseline
	prefix string // Redis key prefix of the lists
	// The service's variants compared by --operator and --guard (see
	// compare.go); their zero values are the production defaults.
	gauges        time.Duration // run the alert gauges at this interval from "go" on; 0: none
	dashboard     bool          // serve the operator's dashboard and API; its address goes to the parent
	guardOff      bool          // turn the kind's incident guard off
	ledger        bool          // record the ledger
	ledgerRows    bool          // with every plain success a row entry (ledger.routine: rows)
	throttleGroup string        // the kind's throttle_group column; "": none
	lanes         bool          // the kind's priority is 10 with a lane for level 0 (--priority)
}

func lists(prefix string) redisio.Lists { return redisio.DefaultLists(prefix + benchTable) }

// reporter writes the child's progress lines.
type reporter struct {
	mu sync.Mutex
	w  *bufio.Writer
}

func (r *reporter) line(kind string, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.w.WriteString(kind)
	r.w.WriteByte(' ')
	r.w.WriteString(strconv.Itoa(n))
	r.w.WriteByte('\n')
	r.w.Flush()
}

// text writes a line with a word and a text ("http 127.0.0.1:8080").
func (r *reporter) text(kind, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.w.WriteString(kind + " " + text + "\n")
	r.w.Flush()
}

// serviceConfig is the service child's configuration: production defaults
// but for the batch size, and the variant's guard and throttle group.
func serviceConfig(opts options, table models.Table, sched *schedule.Schedule, rep *reporter) refresher.Config {
	o := opts.child
	if o.lanes {
		table.Priority = benchKindPriority
	}
	return refresher.Config{
		Kinds: []refresher.Kind{{
			Name: benchTable, Table: table, Lists: lists(o.prefix), Schedule: sched,
			Policy:        policy.Policy{Kind: benchTable, Guard: policy.Guard{Off: o.guardOff}},
			ThrottleGroup: o.throttleGroup,
			Lanes:         priorityLanes(o.lanes),
		}},
		InstanceID: "bench-" + strconv.Itoa(os.Getpid()),
		BatchSize:  opts.batch,
		Ledger:     refresher.LedgerConfig{On: o.ledger, RoutineRows: o.ledgerRows},
		Logger:     slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Observer: refresher.Observer{
			AfterDispatch: func(_ string, n int) {
				if n > 0 {
					rep.line("D", n)
				}
			},
			AfterApply: func(_ string, n int) { rep.line("A", n) },
		},
	}
}

func runChild(opts options) error {
	ctx := context.Background()
	o := opts.child
	st, err := openBenchStore(ctx, opts, false)
	if err != nil {
		return err
	}
	rdb := redis.NewClient(&redis.Options{Addr: opts.redisAddr})
	defer rdb.Close()
	acct := &accounting{}
	rdb.AddHook(acct.hook())
	if err := rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("connect to Redis at %s: %w", opts.redisAddr, err)
	}
	sched, err := schedule.Parse(kindRule)
	if err != nil {
		return err
	}
	rep := &reporter{w: bufio.NewWriter(os.Stdout)}
	table := models.Table{Name: benchTable, Key: "id", Payload: []string{"input_url"}}

	// Both children collect garbage as refresher run does (GOGC 200 unless
	// set), so that the ratio compares the code, not a runtime setting.
	refresher.SetGCPercent()
	var run func(ctx context.Context) error
	switch o.role {
	case "service":
		cfg := serviceConfig(opts, table, sched, rep)
		store, err := st.openService(ctx)
		if err != nil {
			return err
		}
		defer store.Close()
		svc, err := refresher.New(cfg, store, redisio.New(rdb))
		if err != nil {
			return err
		}
		if err := svc.Check(ctx); err != nil {
			return err
		}
		run = svc.Run
		if o.gauges > 0 || o.dashboard {
			op, err := startOperator(ctx, o, cfg.Kinds[0], store, rdb, svc, cfg.Logger, rep, acct)
			if err != nil {
				return err
			}
			defer op.close()
			run = op.around(svc.Run)
		}
	case "baseline":
		db, err := st.openBaseline(ctx)
		if err != nil {
			return err
		}
		defer db.close()
		b := &baseline{db: db, rdb: rdb, lists: lists(o.prefix), batch: opts.batch, sched: sched, rep: rep}
		if b.batch == 0 {
			b.batch = refresher.DefaultBatchSize
		}
		run = b.run
	default:
		return fmt.Errorf("unknown role %q", o.role)
	}

	in := bufio.NewScanner(os.Stdin)
	rep.line("ready", os.Getpid())
	if !in.Scan() || in.Text() != "go" {
		return nil
	}
	if opts.profileDir != "" {
		if opts.profileMem {
			// Fine-grained allocation samples; each costs a stack
			// unwind, which then shows in the CPU profile.
			runtime.MemProfileRate = 4096
		}
		if err := os.MkdirAll(opts.profileDir, 0o755); err != nil {
			return err
		}
		f, err := os.Create(filepath.Join(opts.profileDir, o.role+"-cpu.pprof"))
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
			if h, err := os.Create(filepath.Join(opts.profileDir, o.role+"-allocs.pprof")); err == nil {
				_ = pprof.Lookup("allocs").WriteTo(h, 0)
				h.Close()
			}
		}()
	}
	ctx, cancel := context.WithCancel(ctx)
	acct.reset() // the cycle's, not the setup's
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent closes stdin
	cancel()
	select {
	case err := <-done:
		rep.text("stats", acct.line())
		return err
	case <-time.After(30 * time.Second):
		return fmt.Errorf("%s did not stop within 30s", o.role)
	}
}
