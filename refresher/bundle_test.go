package refresher

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/internal/teststore"
	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
	"github.com/refresher/refresher/schedule"
)

// t0 is the tests' "now": a Saturday, before the daily 14:00 occurrence.
var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

// dailyAt14 is the kind's default rule in most tests.
const dailyAt14 = "DTSTART:20260101T140000Z\nRRULE:FREQ=DAILY"

// testClock is a Clock the test moves by hand.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

// passSignal counts the dispatcher's passes (Observer.AfterDispatch) so that a
// test can wait for the next ones without sleeping.
type passSignal struct {
	n atomic.Int64
}

func (p *passSignal) pass() {
	p.n.Add(1)
	testenv.Wake()
}

// wait returns once n more passes have finished, all of which started after
// the call but the first; it fails the test after 10s.
func (p *passSignal) wait(t testing.TB, n int) {
	t.Helper()
	target := p.n.Load() + int64(n)
	testenv.Eventually(t, 10*time.Second, fmt.Sprintf("%d dispatcher passes", n), func() bool { return p.n.Load() >= target })
}

// testBundle is one test's database, Redis prefix, kind and service config.
type testBundle struct {
	t testing.TB
	// d is the test's database; db and store are d.SQL and d.Store. Write
	// statements for b.exec (placeholders "?") to run on every store;
	// MySQL-only tests use db directly.
	d     *teststore.DB
	db    *sql.DB
	store models.Store
	rdb   *redis.Client
	rio   *redisio.Client
	clock *testClock
	kind  Kind
	cfg   Config
	// passes counts the dispatcher passes of the service start runs.
	passes passSignal
}

type setupOpts struct {
	retry   string
	timeout time.Duration
	rule    string
	// store is the database the test runs on (teststore.MySQL, Postgres
	// or SQLite); default MySQL.
	store string
}

// itemsTable is the application's table "items" of the tests, by store:
// a surrogate primary key, a unique CHAR(20) key uid, and two payload
// columns.
var itemsTable = map[string]string{
	teststore.MySQL: `CREATE TABLE items (
		id BIGINT AUTO_INCREMENT PRIMARY KEY,
		uid CHAR(20) NOT NULL UNIQUE,
		input_url VARCHAR(255) NULL,
		name VARCHAR(50) NULL)`,
	teststore.Postgres: `CREATE TABLE items (
		id bigserial PRIMARY KEY,
		uid char(20) NOT NULL UNIQUE,
		input_url varchar(255) NULL,
		name varchar(50) NULL)`,
	teststore.SQLite: `CREATE TABLE items (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		uid CHAR(20) NOT NULL UNIQUE,
		input_url VARCHAR(255) NULL,
		name VARCHAR(50) NULL)`,
}

// allStores are the stores the service runs on; teststore.Servers those
// several instances may share, and whose connection a test can cut.
var allStores = []string{teststore.MySQL, teststore.Postgres, teststore.SQLite}

// forEachStore runs f in a parallel subtest per store (see teststore.Each),
// for the tests that must hold on every database.
func forEachStore(t *testing.T, stores []string, f func(t *testing.T, store string)) {
	t.Helper()
	teststore.Each(t, stores, f)
}

func setup(t testing.TB, o setupOpts) *testBundle {
	t.Helper()
	d := teststore.Open(t, cmp.Or(o.store, teststore.MySQL))
	rdb, prefix := testenv.Redis(t)
	ctx := context.Background()
	d.Exec(t, itemsTable[d.Name])
	_, err := d.Store.Migrate(ctx, []string{"items"}, io.Discard, false)
	require.NoError(t, err)

	if o.rule == "" {
		o.rule = dailyAt14
	}
	sched, err := schedule.Parse(o.rule)
	require.NoError(t, err)
	retry := policy.DefaultRetry
	if o.retry != "" {
		retry, err = policy.ParseRetry(o.retry)
		require.NoError(t, err)
	}
	kind := Kind{
		Name:     "items",
		Table:    models.Table{Name: "items", Key: "uid", Payload: []string{"input_url"}},
		Lists:    redisio.DefaultLists(prefix + "items"),
		Schedule: sched,
		Policy:   policy.Policy{Kind: "items", Timeout: o.timeout, Retry: retry},
	}
	clock := &testClock{now: t0}
	return &testBundle{
		t: t, d: d, db: d.SQL, store: d.Store, rdb: rdb, rio: redisio.New(rdb), clock: clock, kind: kind,
		cfg: Config{
			Kinds:      []Kind{kind},
			InstanceID: "test-a",
			MaxSleep:   20 * time.Millisecond,
			FetchBlock: 100 * time.Millisecond,
			Heartbeat:  2 * time.Second,
			Clock:      clock,
			Rand:       func() float64 { return 0 },
			Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
		},
	}
}

// start runs a service with the bundle's config (as changed by mod) until
// the test ends, and returns it.
func (b *testBundle) start(mod func(*Config)) *Service {
	b.t.Helper()
	svc, err := New(b.config(mod), b.store, b.rio)
	require.NoError(b.t, err)
	require.NoError(b.t, svc.Check(context.Background()))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = svc.Run(ctx) }()
	b.t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			b.t.Error("service did not stop within 10s of cancel")
		}
	})
	return svc
}

// config returns the bundle's config as changed by mod, with a hook that
// counts dispatcher passes in b.passes.
func (b *testBundle) config(mod func(*Config)) Config {
	cfg := b.cfg
	if mod != nil {
		mod(&cfg)
	}
	dispatched, applied := cfg.Observer.AfterDispatch, cfg.Observer.AfterApply
	cfg.Observer.AfterDispatch = func(kind string, started int) {
		b.passes.pass()
		if dispatched != nil {
			dispatched(kind, started)
		}
	}
	cfg.Observer.AfterApply = func(kind string, fetched int) {
		testenv.Wake()
		if applied != nil {
			applied(kind, fetched)
		}
	}
	return cfg
}

// insert creates models due at t0 with the given uids.
func (b *testBundle) insert(uids ...string) {
	b.t.Helper()
	for _, uid := range uids {
		b.exec("INSERT INTO items (uid, input_url, refresh_at) VALUES (?, ?, ?)", uid, "https://example.com/"+uid, t0)
	}
}

// exec runs one of the test's statements, with "?" placeholders, on the
// test's store.
func (b *testBundle) exec(query string, args ...any) {
	b.t.Helper()
	b.d.Exec(b.t, query, args...)
}

// state reads one model's refresh state.
func (b *testBundle) state(uid string) policy.State {
	b.t.Helper()
	var st policy.State
	err := b.store.Tx(context.Background(), func(tx models.Tx) error {
		rows, err := tx.LockByKeys(context.Background(), b.kind.Table, []string{uid})
		st = rows[uid].State
		return err
	})
	require.NoError(b.t, err)
	return st
}

// popJob waits up to 10s for the next job on the input list.
func (b *testBundle) popJob() redisio.Job {
	b.t.Helper()
	res, err := b.rdb.BLPop(context.Background(), 10*time.Second, b.kind.Lists.Input).Result()
	require.NoError(b.t, err, "no job on %s within 10s", b.kind.Lists.Input)
	var job redisio.Job
	require.NoError(b.t, json.Unmarshal([]byte(res[1]), &job))
	return job
}

// noJob checks that no job is pushed in the next two dispatcher passes (the
// second of which starts after the call, at the clock's current time).
func (b *testBundle) noJob() {
	b.t.Helper()
	b.passes.wait(b.t, 2)
	n, err := b.rdb.LLen(context.Background(), b.kind.Lists.Input).Result()
	require.NoError(b.t, err)
	require.Zero(b.t, n, "unexpected job on %s", b.kind.Lists.Input)
}

// send pushes a result as a worker would.
func (b *testBundle) send(r redisio.Result) {
	b.t.Helper()
	raw, err := json.Marshal(r)
	require.NoError(b.t, err)
	b.sendRaw(string(raw))
}

func (b *testBundle) sendRaw(raw string) {
	b.t.Helper()
	require.NoError(b.t, b.rdb.RPush(context.Background(), b.kind.Lists.Output, raw).Err())
}

// waitFor reads the model until cond holds, up to 10s. The service's loops
// wake the wait after each pass (testenv.Wake in config's hooks).
func (b *testBundle) waitFor(uid string, what string, cond func(policy.State) bool) policy.State {
	b.t.Helper()
	var st policy.State
	testenv.EventuallyNil(b.t, 10*time.Second, "model "+uid+": "+what, func() error {
		st = b.state(uid)
		if cond(st) {
			return nil
		}
		return fmt.Errorf("state: %+v", st)
	})
	return st
}

// waitCounter waits until a counter reaches want, up to 10s.
func waitCounter(t testing.TB, read func() float64, want float64, what string) {
	t.Helper()
	testenv.EventuallyNil(t, 10*time.Second, what, func() error {
		if got := read(); got < want {
			return fmt.Errorf("got %v, want %v", got, want)
		}
		return nil
	})
}

func results(svc *Service, typ, outcome string) func() float64 {
	return func() float64 {
		return testutil.ToFloat64(svc.Metrics().Results.WithLabelValues("items", typ, outcome))
	}
}

func toFloat(c interface{ Desc() *prometheus.Desc }) float64 {
	return testutil.ToFloat64(c.(prometheus.Collector))
}
