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

	"github.com/refresher/refresher/models/mysqlstore"

	"github.com/redis/go-redis/v9"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
	"github.com/refresher/refresher/refresher"
	"github.com/refresher/refresher/schedule"
)

// The parent and a child talk over the child's stdin and stdout:
//
//	child -> parent: "ready" once connected; then "D <n>" after each
//	                 dispatch pass that started n > 0 attempts and pushed
//	                 their jobs, "A <n>" after each applied batch of n results
//	parent -> child: "go" to start; closing stdin stops the child, which
//	                 finishes its batch in hand, writes its profiles and exits.

// kindRule is the kind's default schedule: daily at 14:00 UTC, so that a
// successful refresh plans the row for tomorrow and it is not due again
// during the run.
const kindRule = "DTSTART:20260101T140000Z\nRRULE:FREQ=DAILY"

type childOpts struct {
	role       string // service or baseline
	dsn        string // with the database name
	redisAddr  string
	prefix     string // Redis key prefix of the lists
	batch      int    // 0: the service's default
	profileDir string // write CPU and allocation profiles here
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

func runChild(o childOpts) error {
	ctx := context.Background()
	db, err := mysqlstore.Open(ctx, o.dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	rdb := redis.NewClient(&redis.Options{Addr: o.redisAddr})
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("connect to Redis at %s: %w", o.redisAddr, err)
	}
	sched, err := schedule.Parse(kindRule)
	if err != nil {
		return err
	}
	rep := &reporter{w: bufio.NewWriter(os.Stdout)}
	table := models.Table{Name: benchTable, Key: "id", Payload: []string{"input_url"}}

	var run func(ctx context.Context) error
	switch o.role {
	case "service":
		cfg := refresher.Config{
			Kinds: []refresher.Kind{{
				Name: benchTable, Table: table, Lists: lists(o.prefix), Schedule: sched,
				Policy: policy.Policy{Kind: benchTable},
			}},
			InstanceID: "bench-" + strconv.Itoa(os.Getpid()),
			BatchSize:  o.batch,
			Logger:     slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
			Hooks: refresher.Hooks{
				AfterDispatch: func(_ string, n int) {
					if n > 0 {
						rep.line("D", n)
					}
				},
				AfterApply: func(_ string, n int) { rep.line("A", n) },
			},
		}
		svc, err := refresher.New(cfg, mysqlstore.New(db), redisio.New(rdb))
		if err != nil {
			return err
		}
		if err := svc.Check(ctx); err != nil {
			return err
		}
		run = svc.Run
	case "baseline":
		b := &baseline{db: db, rdb: rdb, lists: lists(o.prefix), batch: o.batch, sched: sched, rep: rep}
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
	if o.profileDir != "" {
		runtime.MemProfileRate = 4096
		if err := os.MkdirAll(o.profileDir, 0o755); err != nil {
			return err
		}
		f, err := os.Create(filepath.Join(o.profileDir, o.role+"-cpu.pprof"))
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
			if h, err := os.Create(filepath.Join(o.profileDir, o.role+"-allocs.pprof")); err == nil {
				_ = pprof.Lookup("allocs").WriteTo(h, 0)
				h.Close()
			}
		}()
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent closes stdin
	cancel()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		return fmt.Errorf("%s did not stop within 30s", o.role)
	}
}
