package refresher

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/models/mysqlstore"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
	"github.com/refresher/refresher/schedule"
)

// manyKindsEnv enables the heavy tests of this file (minutes of load on the
// test servers): REFRESHER_HEAVY=1 go test ./refresher -run ManyKinds -v
const manyKindsEnv = "REFRESHER_HEAVY"

// manyKinds is a service over kinds tables, each with perKind rows due,
// sharing a pool of maxConns database connections (stores.Open's default).
type manyKinds struct {
	t      *testing.T
	db     *sql.DB
	store  models.Store
	cfg    Config
	rdb    *redisio.Client
	raw    *redis.Client
	logs   *testenv.SyncBuffer
	inputs []string
	output map[string]string // input list -> output list
	apply  atomic.Int64

	mu      sync.Mutex
	perKind map[string]int       // results applied per kind
	doneAt  map[string]time.Time // when each kind had all its rows applied
	want    int                  // rows per kind
}

func newManyKinds(t *testing.T, kinds, perKind, maxConns int) *manyKinds {
	t.Helper()
	// Through mysqlstore.Open, as the service opens it (UTC, READ COMMITTED).
	db, err := mysqlstore.Open(context.Background(), testenv.MySQLDSN(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	_, prefix := testenv.Redis(t) // cleans up the prefix's keys
	// Each poller holds a Redis connection while it blocks on its output
	// list: the pool needs one per kind besides those of the pushes, as
	// cmd/refresher sizes it.
	opt, err := redis.ParseURL(testenv.RedisURL())
	require.NoError(t, err)
	opt.PoolSize = RedisPoolSize(kinds)
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	ctx := context.Background()
	sched, err2 := schedule.Parse(dailyAt14)
	require.NoError(t, err2)
	m := &manyKinds{t: t, db: db, store: mysqlstore.New(db), rdb: redisio.New(rdb), raw: rdb, want: perKind,
		perKind: map[string]int{}, doneAt: map[string]time.Time{}, logs: &testenv.SyncBuffer{}, output: map[string]string{}}
	var names []string
	var ks []Kind
	for i := range kinds {
		name := fmt.Sprintf("k%03d", i)
		_, err := db.ExecContext(ctx, "CREATE TABLE "+name+" (id BIGINT AUTO_INCREMENT PRIMARY KEY, uid CHAR(20) NOT NULL UNIQUE, input_url VARCHAR(255) NULL)")
		require.NoError(t, err)
		names = append(names, name)
		k := Kind{Name: name, Table: models.Table{Name: name, Key: "uid", Payload: []string{"input_url"}},
			Lists: redisio.DefaultLists(prefix + name), Schedule: sched, Policy: policy.Policy{Kind: name, Timeout: time.Hour}}
		ks = append(ks, k)
		m.inputs = append(m.inputs, k.Lists.Input)
		m.output[k.Lists.Input] = k.Lists.Output
	}
	_, err = mysqlstore.Migrate(ctx, db, names, io.Discard, false)
	require.NoError(t, err)
	for _, name := range names {
		for start := 0; start < perKind; start += 5000 {
			var b strings.Builder
			b.WriteString("INSERT INTO " + name + " (uid, input_url, refresh_at) VALUES ")
			args := []any{}
			for j := start; j < min(start+5000, perKind); j++ {
				if j > start {
					b.WriteString(",")
				}
				b.WriteString("(?, ?, ?)")
				args = append(args, fmt.Sprintf("u%d", j), "https://example.com/", t0)
			}
			_, err := db.ExecContext(ctx, b.String(), args...)
			require.NoError(t, err)
		}
	}
	m.cfg = Config{
		Kinds: ks, InstanceID: "many", Heartbeat: 30 * time.Second,
		Clock: &testClock{now: t0}, Rand: func() float64 { return 0 },
		Logger: slog.New(slog.NewTextHandler(m.logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Observer: Observer{AfterApply: func(kind string, n int) {
			m.apply.Add(int64(n))
			m.mu.Lock()
			defer m.mu.Unlock()
			m.perKind[kind] += n
			if m.perKind[kind] >= m.want && m.doneAt[kind].IsZero() {
				m.doneAt[kind] = time.Now()
			}
		}},
	}
	return m
}

// run starts the service and a worker that answers every job with a
// success; stop stops both.
func (m *manyKinds) run(ctx context.Context) (stop func()) {
	svc, err := New(m.cfg, m.store, m.rdb)
	require.NoError(m.t, err)
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := svc.Run(ctx); err != nil {
			m.t.Errorf("Run: %v", err)
		}
	})
	const workers = 4
	for w := range workers {
		wg.Go(func() { m.worker(ctx, w, workers) })
	}
	return func() { cancel(); wg.Wait() }
}

// worker answers the jobs of its share of the input lists, up to 500 per
// list and round trip.
func (m *manyKinds) worker(ctx context.Context, w, of int) {
	r := m.raw
	for ctx.Err() == nil {
		pipe := r.Pipeline()
		var lists []string
		for i := w; i < len(m.inputs); i += of {
			lists = append(lists, m.inputs[i])
		}
		cmds := make([]interface{ Result() ([]string, error) }, len(lists))
		for i, l := range lists {
			cmds[i] = pipe.LPopCount(ctx, l, 500)
		}
		_, _ = pipe.Exec(ctx)
		out := r.Pipeline()
		n := 0
		for i, c := range cmds {
			vals, _ := c.Result()
			for _, v := range vals {
				var job redisio.Job
				if json.Unmarshal([]byte(v), &job) != nil {
					continue
				}
				raw, _ := json.Marshal(redisio.Result{UID: job.UID, AttemptUID: job.AttemptUID, Type: "success"})
				out.RPush(ctx, m.output[lists[i]], raw)
				n++
			}
		}
		if n == 0 {
			// The pace of a worker polling many lists, not a wait.
			time.Sleep(5 * time.Millisecond)
			continue
		}
		_, _ = out.Exec(ctx)
	}
}

// refreshAll runs the service until total results were applied and returns
// how long that took.
func (m *manyKinds) refreshAll(total int) time.Duration {
	start := time.Now()
	stop := m.run(context.Background())
	defer stop()
	testenv.EventuallyNil(m.t, 5*time.Minute, fmt.Sprintf("%d results applied", total), func() error {
		if n := m.apply.Load(); n < int64(total) {
			return fmt.Errorf("applied %d", n)
		}
		return nil
	})
	return time.Since(start)
}

// errorLines returns the distinct error lines logged, without time and
// kind, with their counts.
func (m *manyKinds) errorLines() map[string]int {
	out := map[string]int{}
	kind := regexp.MustCompile(`k\d{3}`)
	for _, l := range strings.Split(m.logs.String(), "\n") {
		if strings.Contains(l, "level=ERROR") {
			_, l, _ = strings.Cut(l, " ")
			out[kind.ReplaceAllString(l, "kNNN")]++
		}
	}
	return out
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestManyKindsIdleCPU: kinds with nothing due cost the process little: 200
// idle kinds under 5% of a core. It measures 1, 50 and 200 kinds and logs,
// per kind and second, the Redis commands the service sent and the
// statements MariaDB counted (its global Questions, so other clients of a
// shared server are included). REFRESHER_IDLE_PROFILE=DIR writes the CPU
// profile of each measured window to DIR/idle-<kinds>.pprof.
func TestManyKindsIdleCPU(t *testing.T) {
	if os.Getenv(manyKindsEnv) == "" {
		t.Skip("heavy: set " + manyKindsEnv + "=1")
	}
	for _, kinds := range []int{1, 50, 200} {
		t.Run(fmt.Sprintf("kinds=%d", kinds), func(t *testing.T) {
			share := idleCPU(t, kinds)
			if kinds == 200 {
				require.Less(t, share, 0.05, "idle CPU of 200 kinds")
			}
		})
	}
}

// idleCPU runs a service of kinds idle kinds and returns its share of a
// core over 10 s, after 3 s of start-up.
func idleCPU(t *testing.T, kinds int) float64 {
	m := newManyKinds(t, kinds, 0, 16)
	count := &commandCount{n: map[string]int{}}
	m.raw.AddHook(count)
	// Start-up (the tables' check, the first passes and fetches) is over
	// when every dispatcher has made 3 passes.
	var passes sync.Map // kind -> *atomic.Int32
	var started atomic.Int32
	m.cfg.Observer.AfterDispatch = func(kind string, _ int) {
		n, _ := passes.LoadOrStore(kind, new(atomic.Int32))
		if n.(*atomic.Int32).Add(1) == 3 {
			started.Add(1)
		}
	}
	svc, err := New(m.cfg, m.store, m.rdb)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	testenv.Eventually(t, 2*time.Minute, "start-up", func() bool { return started.Load() == int32(kinds) })
	if dir := os.Getenv("REFRESHER_IDLE_PROFILE"); dir != "" {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("idle-%d.pprof", kinds)))
		require.NoError(t, err)
		require.NoError(t, pprof.StartCPUProfile(f))
		defer func() { pprof.StopCPUProfile(); _ = f.Close() }()
	}
	count.take()
	q0 := questions(t, m)
	cpu0, wall0 := cpuTime(), time.Now()
	time.Sleep(10 * time.Second) // the window measured, not a wait
	cpu, wall := cpuTime()-cpu0, time.Since(wall0)
	q := questions(t, m) - q0
	cmds := count.take()
	cancel()
	require.NoError(t, <-done)
	share := float64(cpu) / float64(wall)
	perKind := func(n int) string { return fmt.Sprintf("%.2f", float64(n)/float64(kinds)/wall.Seconds()) }
	total := 0
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(cmds)) {
		total += cmds[name]
		parts = append(parts, name+" "+perKind(cmds[name]))
	}
	t.Logf("idle, %d kinds: %s CPU in %s = %.2f%% of a core; per kind and second: %s Redis commands (%s), %s MariaDB statements (all clients)",
		kinds, cpu.Round(time.Millisecond), wall.Round(time.Millisecond), 100*share, perKind(total), strings.Join(parts, ", "), perKind(int(q)))
	require.Empty(t, m.errorLines())
	return share
}

// questions returns MariaDB's count of statements from all clients.
func questions(t *testing.T, m *manyKinds) int64 {
	var name string
	var n int64
	require.NoError(t, m.db.QueryRow("SHOW GLOBAL STATUS LIKE 'Questions'").Scan(&name, &n))
	return n
}

// TestManyKindsThroughput: 200 kinds with 250 due rows each, on 16
// connections, are refreshed without a database error at 0.8x or better
// of the speed of 50,000 due rows in one kind.
func TestManyKindsThroughput(t *testing.T) {
	if os.Getenv(manyKindsEnv) == "" {
		t.Skip("heavy: set " + manyKindsEnv + "=1")
	}
	const total = 50000
	one := newManyKinds(t, 1, total, 16)
	oneTook := one.refreshAll(total)
	require.Empty(t, one.errorLines())

	many := newManyKinds(t, 200, total/200, 16)
	manyTook := many.refreshAll(total)
	errs := many.errorLines()
	require.Empty(t, errs, "errors with 200 kinds")

	// Fairness: database/sql hands a freed connection to a random waiter
	// (not FIFO), fair in expectation; the kinds should finish together.
	var first, last time.Time
	for _, at := range many.doneAt {
		if first.IsZero() || at.Before(first) {
			first = at
		}
		if at.After(last) {
			last = at
		}
	}
	require.Len(t, many.doneAt, 200, "kinds done")
	t.Logf("200 kinds: the first finished %s before the last (of %s)", last.Sub(first).Round(time.Millisecond), manyTook.Round(time.Millisecond))

	ratio := oneTook.Seconds() / manyTook.Seconds()
	t.Logf("50,000 due rows: 1 kind %s (%.0f/s), 200 kinds x 250 %s (%.0f/s): ratio %.2f",
		oneTook.Round(time.Millisecond), total/oneTook.Seconds(), manyTook.Round(time.Millisecond), total/manyTook.Seconds(), ratio)
	require.GreaterOrEqual(t, ratio, 0.8, "200 kinds against one")
}
