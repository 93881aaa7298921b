package refresher

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/internal/teststore"
	"github.com/refresher/refresher/redisio"
	"github.com/refresher/refresher/schedule"
)

// The failover tests' settings: 1,000 rows due every 2 seconds, an attempt
// timeout of 5 s, retries 100 ms after a failure.
const (
	failoverRule    = "DTSTART:20260101T000000Z\nRRULE:FREQ=SECONDLY;INTERVAL=2"
	failoverTimeout = 5 * time.Second
	failoverRows    = 1000
)

// TestRedisClusterFailover: under load, the master that holds the kind's
// slot is killed (SIGKILL) while its replica lags behind, so that the last
// second of writes (jobs pushed, results pushed, batches acknowledged) is
// lost; the replica is promoted and the service carries on by itself.
func TestRedisClusterFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Redis Cluster and runs for about 30s")
	}
	tp := testenv.RedisCluster(t)
	runFailover(t, tp, redisio.Cluster, func(ctx context.Context, rdb redis.UniversalClient, l redisio.Lists) *testenv.RedisNode {
		node, err := rdb.(*redis.ClusterClient).MasterForKey(ctx, l.Input)
		require.NoError(t, err)
		return tp.Server(node.Options().Addr)
	})
}

// TestRedisSentinelFailover is TestRedisClusterFailover through Sentinel:
// the master is killed while the replica lags, the sentinels promote the
// replica.
func TestRedisSentinelFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Redis servers and sentinels and runs for about 30s")
	}
	tp := testenv.RedisSentinel(t)
	runFailover(t, tp, redisio.Sentinel, func(context.Context, redis.UniversalClient, redisio.Lists) *testenv.RedisNode {
		return tp.Servers[0]
	})
}

// runFailover runs two service instances and a worker on the topology with
// 1,000 rows on a seconds schedule (MariaDB); once every row has been
// refreshed, it makes the master that master returns lose its last writes
// (see loseLastWrites) and kills it (SIGKILL). It checks
// that every row is refreshed after the kill, and once more after that;
// that no attempt ended twice (no result applied twice); that every result
// the worker pushed ended its attempt, or was lost with the master and its
// attempt timed out; and that no row is stuck. It logs what the failover
// cost.
func runFailover(t *testing.T, tp *testenv.RedisTopology, topo redisio.Topology,
	master func(context.Context, redis.UniversalClient, redisio.Lists) *testenv.RedisNode) {
	b := setup(t, setupOpts{store: teststore.MySQL, rule: failoverRule, timeout: failoverTimeout, retry: "constant:unit=100ms"})
	for _, stmt := range attemptLog[teststore.MySQL] {
		b.exec(stmt)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	open := func() redis.UniversalClient {
		rdb, err := redisio.Open(ctx, tp.URL, redisio.Options{PoolSize: RedisPoolSize(1)})
		require.NoError(t, err)
		t.Cleanup(func() { _ = rdb.Close() })
		return rdb
	}
	lists := redisio.DefaultListsOn(topo, "items")
	if topo == redisio.Cluster {
		require.NoError(t, lists.CheckTag(), "the lists of the test")
	}
	uids := b.insertN(failoverRows, time.Now().UTC())
	logs := &testenv.SyncBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("services' warnings and errors:\n%s", logs.String())
		}
	})
	for _, id := range []string{"a", "b"} {
		b.runOn(ctx, b.store, redisio.New(open()), func(c *Config) {
			c.Kinds[0].Lists = lists
			c.InstanceID = "failover-" + id
			c.Clock = SystemClock{}
			c.MaxSleep = 50 * time.Millisecond
			c.BatchSize = 100
			c.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn})).With("instance", id)
		})
	}
	w := &failoverWorker{rdb: open(), lists: lists, answered: map[string]redisio.Result{}}
	wctx, cancelWorker := context.WithCancel(ctx)
	workerDone := make(chan struct{})
	go func() { defer close(workerDone); w.run(wctx) }()
	stopWorker := func() { cancelWorker(); <-workerDone }
	defer stopWorker()

	refreshedSince := func(at time.Time) int {
		var n int
		require.NoError(t, b.db.QueryRow("SELECT COUNT(*) FROM items WHERE refresh_last_success_at > ?", at).Scan(&n))
		return n
	}
	// Load first: every row refreshed at least once, then one more round of
	// results, so that the kill comes in the steady state.
	start := time.Now().UTC()
	testenv.Eventually(t, 30*time.Second, "every row refreshed before the kill", func() bool { return refreshedSince(start) == failoverRows })
	firstRound := w.count()
	testenv.Eventually(t, 30*time.Second, "one more round of results before the kill", func() bool { return w.count() >= firstRound+failoverRows })
	perPeriod := w.count()

	victim := master(ctx, w.rdb, lists)
	require.NotNil(t, victim, "the master of the kind's keys")
	replica := tp.ReplicaOf(t, victim)
	require.NotNil(t, replica, "the replica of %s", victim.Addr)
	loseLastWrites(t, victim, replica, lists.Input+"-junk")
	killed := time.Now().UTC()
	victim.Kill()
	replica.Resume()
	t.Logf("killed master %s at %s (%d results answered before)", victim.Addr, killed.Format(time.TimeOnly), perPeriod)

	// The service carries on by itself: results are applied again, then
	// every row is refreshed after the kill.
	var firstAgain time.Duration
	testenv.Eventually(t, 60*time.Second, "a row refreshed after the kill", func() bool {
		firstAgain = time.Since(killed)
		return refreshedSince(killed) > 0
	})
	testenv.Eventually(t, 60*time.Second, "every row refreshed after the kill", func() bool { return refreshedSince(killed) == failoverRows })
	allAgain := time.Since(killed)
	// And it keeps refreshing them: one more full period after that.
	again := time.Now().UTC()
	testenv.Eventually(t, 30*time.Second, "every row refreshed once more", func() bool { return refreshedSince(again) == failoverRows })
	stopWorker()

	// No attempt ended twice; every result the worker pushed ended its
	// attempt with it, or was lost with the master and ended by timeout.
	ended := attemptEnds(t, b.db)
	answered := w.snapshot()
	applied, lostWithMaster := 0, 0
	var wrong []string
	for attempt, r := range answered {
		e, ok := ended[attempt]
		switch {
		case !ok:
			// Answered after the worker's last check: still in flight.
		case e.success && e.lastError == "":
			applied++
		case strings.HasPrefix(e.lastError, "timed out"):
			lostWithMaster++
		default:
			wrong = append(wrong, fmt.Sprintf("%s attempt %s: answered %s, ended with success=%v error=%q", r.UID, attempt, r.Type, e.success, e.lastError))
		}
	}
	require.Empty(t, wrong)
	timeouts := 0
	for _, e := range ended {
		if strings.HasPrefix(e.lastError, "timed out") {
			timeouts++
		}
	}
	sched, err := schedule.Parse(failoverRule)
	require.NoError(t, err)
	states := b.states(uids)
	for _, uid := range uids {
		st := states[uid]
		require.False(t, st.Disabled(), "%s is disabled: %s", uid, st.DisabledReason)
		require.False(t, st.RefreshAt.IsZero(), "%s is stuck: refresh_at is NULL", uid)
		require.False(t, st.Running() && time.Since(st.TimeoutAt) > 5*time.Second,
			"%s is stuck in attempt %s, which timed out at %s", uid, st.AttemptUID, st.TimeoutAt)
		require.True(t, sched.Next(st.RefreshAt.Add(-time.Microsecond)).Equal(st.RefreshAt) || st.Running(),
			"%s: refresh_at %s is not an occurrence", uid, st.RefreshAt)
	}
	t.Logf("%s failover: first result applied %.1fs after the kill, every row refreshed again within %.1fs "+
		"(a row is due every 2s, attempt timeout %s); %d attempts timed out (%d of them answered, the result lost with the master), "+
		"%d results applied, none twice; %d jobs delivered again by the promoted replica",
		topo, firstAgain.Seconds(), allAgain.Seconds(), failoverTimeout, timeouts, lostWithMaster, applied, w.redelivered)
	require.Less(t, allAgain, failoverTimeout+20*time.Second, "the failover's cost is bounded by the attempt timeout plus the failover")
	// Whether the kill catches attempts in flight depends on where the
	// dispatcher is when it comes: on a loaded machine a run may lose
	// none (seen on Sentinel, about one run in three). The checks above
	// (none applied twice, none stuck, every row refreshed again within a
	// timeout of the failover) hold either way; the timeout of an attempt
	// whose job died with its process is proven by the kill tests.
	if timeouts == 0 {
		t.Logf("%s failover: the kill caught no attempt in flight this run; nothing timed out", topo)
	}
}

// loseLastWrites makes sure the master's writes from now until it is killed
// never reach its replica, as happens when a master dies with its replica
// lagging (replication is asynchronous): it stops the replica (the caller
// resumes it after killing the master) and writes 60 MB to junkKey on the
// master, more than the sockets between them buffer (up to 36 MB with
// Linux's largest TCP buffers), so that what follows stays in the master's
// memory. Then it returns 50 ms into the next burst of work: every row
// comes due on each even second (failoverRule), so the jobs and results of
// that burst are in flight in Redis when the master dies.
func loseLastWrites(t *testing.T, master, replica *testenv.RedisNode, junkKey string) {
	t.Helper()
	replica.Pause()
	rdb := redis.NewClient(&redis.Options{Addr: master.Addr})
	defer rdb.Close()
	require.NoError(t, rdb.Set(context.Background(), junkKey, strings.Repeat("x", 60<<20), time.Hour).Err())
	burst := time.Now().Truncate(2 * time.Second).Add(2*time.Second + 50*time.Millisecond)
	time.Sleep(time.Until(burst))
}

// failoverWorker answers every job with a success, through any client, and
// logs each attempt it answered. Redis errors during the failover are
// retried. A job the worker popped just before the kill can come back with
// the promoted replica (its LPOP was not replicated): it is answered again
// (counted in redelivered), and that second result is stale.
type failoverWorker struct {
	rdb         redis.UniversalClient
	lists       redisio.Lists
	mu          sync.Mutex
	answered    map[string]redisio.Result // by attempt uid
	redelivered int
}

func (w *failoverWorker) run(ctx context.Context) {
	for ctx.Err() == nil {
		if err := w.step(ctx); err != nil && ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond) // Redis fails over
		}
	}
}

func (w *failoverWorker) step(ctx context.Context) error {
	res, err := w.rdb.BLPop(ctx, time.Second, w.lists.Input).Result()
	if errors.Is(err, redis.Nil) {
		return nil
	}
	if err != nil {
		return err
	}
	more, err := w.rdb.LPopCount(ctx, w.lists.Input, 500).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		more = nil // those stay queued
	}
	out := make([]any, 0, 1+len(more))
	for _, raw := range append([]string{res[1]}, more...) {
		var job redisio.Job
		if err := json.Unmarshal([]byte(raw), &job); err != nil {
			return fmt.Errorf("job %q: %w", raw, err)
		}
		r := redisio.Result{UID: job.UID, AttemptUID: job.AttemptUID, Type: redisio.ResultSuccess}
		w.mu.Lock()
		if _, dup := w.answered[job.AttemptUID]; dup {
			w.redelivered++
		}
		w.answered[job.AttemptUID] = r
		w.mu.Unlock()
		enc, err := json.Marshal(r)
		if err != nil {
			return err
		}
		out = append(out, string(enc))
	}
	// A push that fails during the failover is lost, as a worker's crash
	// would lose it: the attempts time out and are retried.
	return w.rdb.RPush(context.WithoutCancel(ctx), w.lists.Output, out...).Err()
}

func (w *failoverWorker) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.answered)
}

func (w *failoverWorker) snapshot() map[string]redisio.Result {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]redisio.Result, len(w.answered))
	for k, v := range w.answered {
		out[k] = v
	}
	return out
}
