package refresher

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
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
// timeout of 10 s, retries 100 ms after a failure. (With 5 s, under make
// test's load the oldest jobs that catchInFlight answers had waited in the
// list, the worker held, near their timeout: some rightly timed out before
// their results were applied, and the tests failed.)
const (
	failoverRule    = "DTSTART:20260101T000000Z\nRRULE:FREQ=SECONDLY;INTERVAL=2"
	failoverTimeout = 10 * time.Second
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
// refreshed, it leaves work in flight that the master that master returns
// holds alone, checked before the kill (see catchInFlight), and kills that
// master (SIGKILL). It checks that every row is refreshed after the kill,
// and once more after that; that no attempt ended twice (no result applied
// twice); that every result the worker pushed ended its attempt, or was
// lost with the master and its attempt timed out; that each job lost with
// the master ended its attempt by timing out, and that its row was
// refreshed again within a timeout of the attempt's start (or of Redis
// answering again, if later); that the jobs answered and applied just
// before the kill came back and changed nothing; and that no row is stuck.
// It logs what the failover cost.
func runFailover(t *testing.T, tp *testenv.RedisTopology, topo redisio.Topology,
	master func(context.Context, redis.UniversalClient, redisio.Lists) *testenv.RedisNode) {
	b := setup(t, setupOpts{store: teststore.MySQL, rule: failoverRule, timeout: failoverTimeout, retry: "constant:unit=100ms"})
	for _, stmt := range attemptLog[teststore.MySQL] {
		b.exec(stmt)
	}
	// When each attempt ended, for the delays of the rows caught in the
	// failover.
	b.exec("ALTER TABLE attempt_log ADD COLUMN ended_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)")
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
	caught := catchInFlight(t, b, w, victim, replica, lists)
	killed := time.Now().UTC()
	victim.Kill()
	replica.Resume()
	w.release()
	t.Logf("killed master %s at %s (%d results answered before); in flight: %d jobs queued before the replica stopped "+
		"(which it keeps), %d jobs pushed after it (lost), %d of the first answered and applied after it (their jobs come back)",
		victim.Addr, killed.Format(time.TimeOnly), perPeriod, caught.kept, len(caught.lost), len(caught.applied))

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
	// The jobs pushed after the replica stopped died with the master: each
	// of their attempts timed out and was retried. The jobs answered and
	// applied after it came back from the promoted replica and were
	// answered again: that second result changed nothing (each of their
	// attempts ended once, with its first result).
	for _, j := range caught.lost {
		e, ok := ended[j.AttemptUID]
		require.True(t, ok, "%s: the attempt %s whose job was lost with the master never ended", j.UID, j.AttemptUID)
		require.True(t, strings.HasPrefix(e.lastError, "timed out"), "%s: the attempt %s whose job was lost with the master ended with error %q, not by timing out", j.UID, j.AttemptUID, e.lastError)
		_, answeredLost := answered[j.AttemptUID]
		require.False(t, answeredLost, "%s: the job of attempt %s was lost with the master, yet the worker got it", j.UID, j.AttemptUID)
	}
	for _, j := range caught.applied {
		e := ended[j.AttemptUID]
		require.True(t, e.success && e.lastError == "", "%s: attempt %s answered before the kill ended with success=%v error=%q", j.UID, j.AttemptUID, e.success, e.lastError)
	}
	require.Positive(t, w.redelivered, "the jobs answered after the replica stopped come back from the promoted replica")
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
	// What the failover cost the rows caught in it: each lost attempt's
	// row is refreshed again at most one timeout after the attempt
	// started, plus the retry's wait and a pass of the service, or, when
	// Redis took longer than that to come back, that long after Redis
	// answered again.
	delays := caughtDelays(t, b.db, w, caught.lost)
	back := killed.Add(firstAgain)
	var late []string
	var timedOut, restarted, refreshed []time.Duration
	for _, j := range caught.lost {
		started := j.TimeoutAt.Add(-failoverTimeout)
		d := delays[j.AttemptUID]
		timedOut, restarted, refreshed = append(timedOut, d.timedOut), append(restarted, d.restarted), append(refreshed, d.refreshed)
		bound := max(failoverTimeout, back.Sub(started)) + failoverRetry + failoverSlack
		if d.refreshed > bound {
			late = append(late, fmt.Sprintf("%s: timed out %.2fs, restarted %.2fs, refreshed %.2fs after its lost attempt started (bound %.2fs)",
				j.UID, d.timedOut.Seconds(), d.restarted.Seconds(), d.refreshed.Seconds(), bound.Seconds()))
		}
	}
	require.Empty(t, late, "rows caught in the failover refreshed later than one timeout (and a pass) after their attempt started")
	t.Logf("%s failover: first result applied %.1fs after the kill, every row refreshed again within %.1fs "+
		"(a row is due every 2s, attempt timeout %s); %d attempts timed out (%d of them answered: the result lost with the master, or late), "+
		"%d results applied, none twice; %d jobs delivered again by the promoted replica, their results stale. "+
		"The %d rows whose job was lost, after their attempt started: timed out %s, restarted %s, refreshed %s",
		topo, firstAgain.Seconds(), allAgain.Seconds(), failoverTimeout, timeouts, lostWithMaster, applied, w.redelivered,
		len(caught.lost), secondsSpread(timedOut), secondsSpread(restarted), secondsSpread(refreshed))
	require.Less(t, allAgain, failoverTimeout+20*time.Second, "the failover's cost is bounded by the attempt timeout plus the failover")
}

// failoverRetry is the wait before a retry in the failover tests (the
// retry policy constant:unit=100ms), and failoverSlack the time a pass of
// the service may take on a loaded machine: after its attempt times out, a
// row caught in a failover is dispatched again after failoverRetry,
// answered and applied within failoverSlack (0.6-2.2 s measured on 2 cores
// at a load average of 16-20; a second timeout would be 10 s).
const (
	failoverRetry = 100 * time.Millisecond
	failoverSlack = 3 * time.Second
)

// inFlight is what catchInFlight left in flight for the kill: jobs whose
// push reached only the master (lost), jobs answered and applied whose
// pops reached only the master (applied: they come back), and how many
// jobs queued before the replica stopped were still queued (kept).
type inFlight struct {
	lost, applied []redisio.Job
	kept          int
}

// catchInFlight sets up, and checks, work in flight on master that its
// replica will never see, so that the kill that follows loses some for
// certain: it holds the worker (the caller releases it after the kill)
// until jobs are queued, stops the replica from getting the master's
// writes (loseLastWrites), lets the worker answer some of the queued jobs
// and waits until their results are applied, and then waits until the
// service has pushed the next jobs of those rows. The promoted replica
// will hold the jobs answered (their pops were lost) but not the new ones.
func catchInFlight(t *testing.T, b *testBundle, w *failoverWorker, master, replica *testenv.RedisNode, lists redisio.Lists) inFlight {
	t.Helper()
	ctx := context.Background()
	const answer = 100 // jobs answered after the replica stopped
	w.hold()
	rdb := redis.NewClient(&redis.Options{Addr: master.Addr})
	defer rdb.Close()
	queued := func() []redisio.Job {
		raws, err := rdb.LRange(ctx, lists.Input, 0, -1).Result()
		require.NoError(t, err)
		jobs := make([]redisio.Job, len(raws))
		for i, raw := range raws {
			require.NoError(t, json.Unmarshal([]byte(raw), &jobs[i]))
		}
		return jobs
	}
	testenv.Eventually(t, 10*time.Second, fmt.Sprintf("%d jobs queued for the held worker", 2*answer), func() bool {
		return rdb.LLen(ctx, lists.Input).Val() >= 2*answer
	})
	loseLastWrites(t, master, replica, lists.Input+"-junk")
	before := map[string]bool{}
	for _, j := range queued() {
		before[j.AttemptUID] = true
	}
	applied := w.answer(ctx, answer)
	require.Len(t, applied, answer, "jobs answered after the replica stopped")
	attempts := make([]any, len(applied))
	for i, j := range applied {
		attempts[i] = j.AttemptUID
	}
	marks := strings.TrimSuffix(strings.Repeat("?,", len(attempts)), ",")
	testenv.EventuallyNil(t, 10*time.Second, "the results answered after the replica stopped applied", func() error {
		var n int
		if err := b.db.QueryRow("SELECT COUNT(*) FROM attempt_log WHERE attempt_uid IN ("+marks+")", attempts...).Scan(&n); err != nil {
			return err
		}
		if n < len(attempts) {
			return fmt.Errorf("%d of %d applied", n, len(attempts))
		}
		return nil
	})
	// Those rows come due again on the next even second: their new jobs
	// are pushed to the master alone.
	var lost []redisio.Job
	testenv.EventuallyNil(t, 10*time.Second, "jobs pushed after the replica stopped, queued", func() error {
		lost = lost[:0]
		for _, j := range queued() {
			if !before[j.AttemptUID] {
				lost = append(lost, j)
			}
		}
		if len(lost) < answer/2 {
			return fmt.Errorf("%d queued", len(lost))
		}
		return nil
	})
	// Checked before the kill: each lost job's attempt is the row's current
	// one.
	ids := make([]any, len(lost))
	for i, j := range lost {
		ids[i] = j.AttemptUID
	}
	var current int
	require.NoError(t, b.db.QueryRow("SELECT COUNT(*) FROM items WHERE refresh_attempt_uid IN ("+
		strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",")+")", ids...).Scan(&current))
	require.Equal(t, len(lost), current, "the attempts of the jobs pushed after the replica stopped are current")
	return inFlight{lost: lost, applied: applied, kept: len(before) - len(applied)}
}

// caughtDelay is what happened to the row of a job lost with the master,
// after the attempt started: when the attempt timed out, when the attempt
// that refreshed the row started, and when its success was written.
type caughtDelay struct{ timedOut, restarted, refreshed time.Duration }

// caughtDelays returns, by attempt uid, the caughtDelay of each job in
// lost, from the attempt_log rows (with their ended_at, added by
// runFailover) and the jobs w answered.
func caughtDelays(t *testing.T, db *sql.DB, w *failoverWorker, lost []redisio.Job) map[string]caughtDelay {
	t.Helper()
	type entry struct {
		uid, attempt string
		success      bool
		at           time.Time
	}
	rows, err := db.Query("SELECT uid, attempt_uid, success_changed, UNIX_TIMESTAMP(ended_at) FROM attempt_log ORDER BY id")
	require.NoError(t, err)
	defer rows.Close()
	var log []entry
	for rows.Next() {
		var e entry
		var at float64
		require.NoError(t, rows.Scan(&e.uid, &e.attempt, &e.success, &at))
		e.at = time.Unix(0, int64(at*1e9))
		log = append(log, e)
	}
	require.NoError(t, rows.Err())
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]caughtDelay{}
	for _, j := range lost {
		started := j.TimeoutAt.Add(-failoverTimeout)
		i := slices.IndexFunc(log, func(e entry) bool { return e.attempt == j.AttemptUID })
		require.GreaterOrEqual(t, i, 0, "attempt %s of %s ended", j.AttemptUID, j.UID)
		k := slices.IndexFunc(log[i+1:], func(e entry) bool { return e.uid == j.UID && e.success })
		require.GreaterOrEqual(t, k, 0, "%s refreshed after its attempt %s timed out", j.UID, j.AttemptUID)
		ok := log[i+1+k]
		restartedAt, answered := w.timeoutAt[ok.attempt]
		require.True(t, answered, "%s: the worker answered attempt %s, which refreshed it", j.UID, ok.attempt)
		out[j.AttemptUID] = caughtDelay{
			timedOut:  log[i].at.Sub(started),
			restarted: restartedAt.Add(-failoverTimeout).Sub(started),
			refreshed: ok.at.Sub(started),
		}
	}
	return out
}

// secondsSpread says "min-max s (median m s)" of ds.
func secondsSpread(ds []time.Duration) string {
	v := make([]float64, len(ds))
	for i, d := range ds {
		v[i] = d.Seconds()
	}
	if len(v) == 0 {
		return "-"
	}
	slices.Sort(v)
	return fmt.Sprintf("%.2f-%.2fs (median %.2fs)", v[0], v[len(v)-1], medianOf(v))
}

// loseLastWrites makes sure the master's writes from now until it is killed
// never reach its replica, as happens when a master dies with its replica
// lagging (replication is asynchronous): it stops the replica (the caller
// resumes it after killing the master) and writes 60 MB to junkKey on the
// master, more than the sockets between them buffer (up to 36 MB with
// Linux's largest TCP buffers), so that what follows stays in the master's
// memory.
func loseLastWrites(t *testing.T, master, replica *testenv.RedisNode, junkKey string) {
	t.Helper()
	replica.Pause()
	rdb := redis.NewClient(&redis.Options{Addr: master.Addr})
	defer rdb.Close()
	require.NoError(t, rdb.Set(context.Background(), junkKey, strings.Repeat("x", 60<<20), time.Hour).Err())
}

// failoverWorker answers every job with a success, through any client, and
// logs each attempt it answered. Redis errors during the failover are
// retried. A job the worker popped just before the kill can come back with
// the promoted replica (its LPOP was not replicated): it is answered again
// (counted in redelivered), and that second result is stale. hold stops it
// between two steps until release; meanwhile answer takes a step of the
// test's own.
type failoverWorker struct {
	rdb         redis.UniversalClient
	lists       redisio.Lists
	mu          sync.Mutex
	answered    map[string]redisio.Result // by attempt uid
	timeoutAt   map[string]time.Time      // each answered job's, by attempt uid
	redelivered int
	// stepMu is held during each of run's steps; held, set under it, is
	// closed by release.
	stepMu sync.Mutex
	held   chan struct{}
}

func (w *failoverWorker) run(ctx context.Context) {
	for ctx.Err() == nil {
		w.stepMu.Lock()
		if held := w.held; held != nil {
			w.stepMu.Unlock()
			select {
			case <-held:
			case <-ctx.Done():
			}
			continue
		}
		err := w.step(ctx)
		w.stepMu.Unlock()
		if err != nil && ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond) // Redis fails over
		}
	}
}

// hold returns once the worker has finished the step it was taking, if
// any, and takes no more until release.
func (w *failoverWorker) hold() {
	w.stepMu.Lock()
	defer w.stepMu.Unlock()
	if w.held == nil {
		w.held = make(chan struct{})
	}
}

// release lets a held worker go on.
func (w *failoverWorker) release() {
	w.stepMu.Lock()
	defer w.stepMu.Unlock()
	if w.held != nil {
		close(w.held)
		w.held = nil
	}
}

// answer pops up to n jobs at once, without waiting, answers them and
// returns them; for a held worker.
func (w *failoverWorker) answer(ctx context.Context, n int) []redisio.Job {
	raws, err := w.rdb.LPopCount(ctx, w.lists.Input, n).Result()
	if err != nil {
		return nil
	}
	jobs, err := w.reply(ctx, raws)
	if err != nil {
		return nil
	}
	return jobs
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
	_, err = w.reply(ctx, append([]string{res[1]}, more...))
	return err
}

// reply answers the jobs raws with successes in one push, and returns them.
func (w *failoverWorker) reply(ctx context.Context, raws []string) ([]redisio.Job, error) {
	jobs := make([]redisio.Job, len(raws))
	out := make([]any, 0, len(raws))
	for i, raw := range raws {
		job := &jobs[i]
		if err := json.Unmarshal([]byte(raw), job); err != nil {
			return nil, fmt.Errorf("job %q: %w", raw, err)
		}
		r := redisio.Result{UID: job.UID, AttemptUID: job.AttemptUID, Type: redisio.ResultSuccess}
		w.mu.Lock()
		if w.timeoutAt == nil {
			w.timeoutAt = map[string]time.Time{}
		}
		w.timeoutAt[job.AttemptUID] = job.TimeoutAt
		if _, dup := w.answered[job.AttemptUID]; dup {
			w.redelivered++
		}
		w.answered[job.AttemptUID] = r
		w.mu.Unlock()
		enc, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		out = append(out, string(enc))
	}
	// A push that fails during the failover is lost, as a worker's crash
	// would lose it: the attempts time out and are retried.
	return jobs, w.rdb.RPush(context.WithoutCancel(ctx), w.lists.Output, out...).Err()
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
