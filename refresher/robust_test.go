package refresher

import (
	"context"
	"crypto/sha1"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/internal/teststore"
	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/models/stores"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
)

// running is a Service started by runOn.
type running struct {
	svc    *Service
	cancel context.CancelFunc
	done   <-chan struct{} // closed when Run returned
	stop   func()          // cancel, then wait (at most 10s) for Run to return
}

// runOn runs a service with the bundle's config (as changed by mod) on the
// given store and Redis client until ctx ends, stop is called or the test
// ends.
func (b *testBundle) runOn(ctx context.Context, store models.Store, rio *redisio.Client, mod func(*Config)) *running {
	b.t.Helper()
	svc, err := New(b.config(mod), store, rio)
	require.NoError(b.t, err)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = svc.Run(ctx) }()
	r := &running{svc: svc, cancel: cancel, done: done}
	r.stop = func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			b.t.Error("service did not stop within 10s of cancel")
		}
	}
	b.t.Cleanup(r.stop)
	return r
}

// insertN creates n models m0000, m0001, ... due at `at`, in few statements.
func (b *testBundle) insertN(n int, at time.Time) []string {
	b.t.Helper()
	uids := make([]string, n)
	for i := range uids {
		uids[i] = fmt.Sprintf("m%04d", i)
	}
	for start := 0; start < n; start += 1000 {
		chunk := uids[start:min(start+1000, n)]
		var sb strings.Builder
		args := make([]any, 0, 3*len(chunk))
		sb.WriteString("INSERT INTO items (uid, input_url, refresh_at) VALUES ")
		for i, uid := range chunk {
			if i > 0 {
				sb.WriteString(",")
			}
			sb.WriteString("(?,?,?)")
			args = append(args, uid, "https://example.com/"+uid, at)
		}
		b.exec(sb.String(), args...)
	}
	return uids
}

// popJobs waits for n jobs (at most 10s each).
func (b *testBundle) popJobs(n int) []redisio.Job {
	b.t.Helper()
	jobs := make([]redisio.Job, n)
	for i := range jobs {
		jobs[i] = b.popJob()
	}
	return jobs
}

// popEachOnce pops n jobs (as popJobs) and checks that no model has two
// and that each carries its row's running attempt.
func (b *testBundle) popEachOnce(n int) []redisio.Job {
	b.t.Helper()
	jobs := b.popJobs(n)
	seen := map[string]bool{}
	for _, j := range jobs {
		require.False(b.t, seen[j.UID], "%s pushed twice", j.UID)
		seen[j.UID] = true
		require.Equal(b.t, b.state(j.UID).AttemptUID, j.AttemptUID, "%s", j.UID)
	}
	return jobs
}

// sendAll pushes results in one RPUSH, so that one Fetch sees all of them.
func (b *testBundle) sendAll(rs ...redisio.Result) {
	b.t.Helper()
	raws := make([]any, len(rs))
	for i, r := range rs {
		raw, err := json.Marshal(r)
		require.NoError(b.t, err)
		raws[i] = string(raw)
	}
	require.NoError(b.t, b.rdb.RPush(context.Background(), b.kind.Lists.Output, raws...).Err())
}

// states reads the refresh state of the given models.
func (b *testBundle) states(uids []string) map[string]policy.State {
	b.t.Helper()
	out := make(map[string]policy.State, len(uids))
	// The service may run meanwhile: its poller writes plain successes in
	// the order the database picks, so this read's locks can deadlock with
	// it, and the database then aborts one of the two. Like the service,
	// take a transient error again.
	var err error
	for range 5 {
		clear(out)
		err = b.store.Tx(context.Background(), func(tx models.Tx) error {
			rows, err := tx.LockByKeys(context.Background(), b.kind.Table, uids)
			for k, r := range rows {
				out[k] = r.State
			}
			return err
		})
		if err == nil || b.store.Classify(err) != models.Transient {
			break
		}
	}
	require.NoError(b.t, err)
	require.Len(b.t, out, len(uids))
	return out
}

// llen is the length of a Redis list.
func (b *testBundle) llen(key string) int64 {
	b.t.Helper()
	n, err := b.rdb.LLen(context.Background(), key).Result()
	require.NoError(b.t, err)
	return n
}

// inRedis counts, atomically, the results in the output list and in the
// processing list of instance id.
func (b *testBundle) inRedis(id string) int64 {
	b.t.Helper()
	var out, proc *redis.IntCmd
	_, err := b.rdb.TxPipelined(context.Background(), func(p redis.Pipeliner) error {
		out = p.LLen(context.Background(), b.kind.Lists.Output)
		proc = p.LLen(context.Background(), b.kind.Lists.Processing(id))
		return nil
	})
	require.NoError(b.t, err)
	return out.Val() + proc.Val()
}

// redisVia returns a Redis client that talks to the test Redis through a
// proxy the test can cut, without touching the shared server.
func redisVia(t *testing.T) (*testenv.Proxy, *redisio.Client) {
	t.Helper()
	opt, err := redis.ParseURL(testenv.RedisURL())
	require.NoError(t, err)
	p := testenv.NewProxy(t, opt.Addr)
	opt.Addr = p.Addr
	opt.DialTimeout = time.Second
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	return p, redisio.New(rdb)
}

func loopErrors(svc *Service, loop string) func() float64 {
	return func() float64 { return toFloat(svc.Metrics().Errors.WithLabelValues("items", loop)) }
}

// deadLetterEntry is one element of the dead-letter list.
type deadLetterEntry struct {
	Error         string `json:"error"`
	List          string `json:"list"`
	Message       string `json:"message"`
	MessageBase64 string `json:"message_base64"`
	Size          int    `json:"size"`
	SHA1          string `json:"sha1"`
	Truncated     bool   `json:"truncated"`
	At            string `json:"at"`
}

// Garbage on the output list goes to the dead-letter list with an error that
// says what is wrong; the good results around it are applied and the service
// keeps running.
func TestGarbageResultsAreDeadLettered(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{timeout: time.Hour})
	b.insert("m1")
	svc := b.start(nil)
	job := b.popJob()

	huge := `{"uid":"m1","attempt_uid":"` + job.AttemptUID + `","type":"status","status":"` +
		strings.Repeat("x", 1<<20) + `"}`
	garbage := []struct{ raw, err string }{
		{`this is not JSON`, "message is not JSON"},
		{"\xff\xfe{", "message is not JSON"},
		{`[1,2]`, "message is a JSON array, not an object"},
		{`{"uid":1,"attempt_uid":"` + job.AttemptUID + `","type":"success"}`, `"uid" is a number, want a string`},
		{`{"uid":"m1","attempt_uid":"` + job.AttemptUID + `","type":"success","permanent":"yes"}`, `"permanent" is a string, want true or false`},
		{`{"uid":"m1","attempt_uid":"` + job.AttemptUID + `","type":"done"}`, `"type" is "done", want "success", "failure", "status" or "extend"`},
		{`{"uid":"m1","type":"success"}`, `"attempt_uid" is missing`},
		{`{"uid":"nope","attempt_uid":"` + job.AttemptUID + `","type":"success"}`, `unknown model: no row in table items with uid = "nope"`},
		{huge, fmt.Sprintf("message is %d bytes, the limit is %d", len(huge), redisio.DefaultMaxResultBytes)},
	}
	// The garbage and a good result in one push, so they share a batch.
	vals := make([]any, 0, len(garbage)+1)
	for _, g := range garbage {
		vals = append(vals, g.raw)
	}
	good, err := json.Marshal(redisio.Result{UID: "m1", AttemptUID: job.AttemptUID, Type: "status", Status: "after garbage"})
	require.NoError(t, err)
	vals = append(vals, string(good))
	require.NoError(t, b.rdb.RPush(context.Background(), b.kind.Lists.Output, vals...).Err())

	b.waitFor("m1", "status after garbage", func(s policy.State) bool { return s.Status == "after garbage" })
	// The dead letters are written when the batch is acknowledged, just
	// after the commit, and counted just after that.
	waitCounter(t, func() float64 { return toFloat(svc.Metrics().DeadLetters.WithLabelValues("items")) },
		float64(len(garbage)), "dead letters counted")
	require.Equal(t, 1.0, results(svc, "success", "unknown_model")())

	dead, err := b.rdb.LRange(context.Background(), b.kind.Lists.Dead, 0, -1).Result()
	require.NoError(t, err)
	require.Len(t, dead, len(garbage))
	for i, raw := range dead {
		var d deadLetterEntry
		require.NoError(t, json.Unmarshal([]byte(raw), &d), "dead letter %d is JSON", i)
		require.Contains(t, d.Error, garbage[i].err, "dead letter %d", i)
		require.Equal(t, b.kind.Lists.Output, d.List)
		require.NotEmpty(t, d.At)
		// A dead letter keeps the message, or its first 4 KiB, with the
		// whole message's size and SHA-1.
		want := garbage[i].raw
		if len(want) > redisio.ExcerptBytes {
			want = want[:redisio.ExcerptBytes]
		}
		require.Equal(t, len(garbage[i].raw), d.Size, "dead letter %d size", i)
		require.Equal(t, len(garbage[i].raw) > redisio.ExcerptBytes, d.Truncated, "dead letter %d truncated", i)
		require.Equal(t, fmt.Sprintf("%x", sha1.Sum([]byte(garbage[i].raw))), d.SHA1, "dead letter %d sha1", i)
		if d.MessageBase64 != "" {
			msg, err := base64.StdEncoding.DecodeString(d.MessageBase64)
			require.NoError(t, err)
			require.Equal(t, want, string(msg), "dead letter %d keeps the message", i)
		} else {
			require.Equal(t, want, d.Message, "dead letter %d keeps the message", i)
		}
	}
	require.Zero(t, b.llen(b.kind.Lists.Output))
	require.Zero(t, b.llen(b.kind.Lists.Processing("test-a")))

	// The pipeline still works: the next good result is applied, and the
	// dispatcher starts the next planned refresh.
	b.send(redisio.Result{UID: "m1", AttemptUID: job.AttemptUID, Type: "success"})
	st := b.waitFor("m1", "success applied", func(s policy.State) bool { return !s.Running() })
	require.True(t, st.LastSuccessAt.Equal(t0))
	b.clock.Advance(4 * time.Hour)
	next := b.popJob()
	require.Equal(t, "m1", next.UID)
	b.send(redisio.Result{UID: "m1", AttemptUID: next.AttemptUID, Type: "status", Status: "still running"})
	b.waitFor("m1", "status of the next attempt", func(s policy.State) bool { return s.Status == "still running" })
	require.Equal(t, float64(len(garbage)), toFloat(svc.Metrics().DeadLetters.WithLabelValues("items")))
}

// Two services on one table and the same lists never start the same model
// twice: every model gets exactly one job, and the row
// holds that job's attempt.
func TestTwoDispatchersNeverStartTheSameModelTwice(t *testing.T) {
	t.Parallel()
	forEachStore(t, teststore.Servers, func(t *testing.T, store string) {
		const n = 3000
		b := setup(t, setupOpts{store: store, timeout: time.Hour})
		// Both services run (and poll every 20ms) before the rows appear, so
		// they claim the batches of 100 concurrently.
		a := b.start(func(c *Config) { c.InstanceID, c.BatchSize = "a", 100 })
		c := b.start(func(c *Config) { c.InstanceID, c.BatchSize = "b", 100 })
		uids := b.insertN(n, t0)

		jobs := make(map[string]redisio.Job, n)
		deadline := time.Now().Add(30 * time.Second)
		for len(jobs) < n {
			require.True(t, time.Now().Before(deadline), "only %d of %d jobs within 30s", len(jobs), n)
			res, err := b.rdb.BLPop(context.Background(), time.Second, b.kind.Lists.Input).Result()
			if errors.Is(err, redis.Nil) {
				continue
			}
			require.NoError(t, err)
			more, err := b.rdb.LPopCount(context.Background(), b.kind.Lists.Input, 1000).Result()
			if !errors.Is(err, redis.Nil) {
				require.NoError(t, err)
			}
			for _, raw := range append([]string{res[1]}, more...) {
				var job redisio.Job
				require.NoError(t, json.Unmarshal([]byte(raw), &job))
				if prev, dup := jobs[job.UID]; dup {
					t.Fatalf("model %s started twice: attempts %s (no %d) and %s (no %d)",
						job.UID, prev.AttemptUID, prev.AttemptNo, job.AttemptUID, job.AttemptNo)
				}
				jobs[job.UID] = job
			}
		}
		b.noJob()

		startedA := toFloat(a.Metrics().Started.WithLabelValues("items"))
		startedB := toFloat(c.Metrics().Started.WithLabelValues("items"))
		t.Logf("instance a started %v attempts, b %v", startedA, startedB)
		require.Equal(t, float64(n), startedA+startedB)
		require.NotZero(t, startedA, "both dispatchers must have claimed rows for the test to mean anything")
		require.NotZero(t, startedB, "both dispatchers must have claimed rows for the test to mean anything")

		states := b.states(uids)
		for _, uid := range uids {
			job, ok := jobs[uid]
			require.True(t, ok, "no job for %s", uid)
			require.Equal(t, 1, job.AttemptNo, "job of %s", uid)
			st := states[uid]
			require.Equal(t, 1, st.AttemptNo, "attempt_no of %s", uid)
			require.Equal(t, job.AttemptUID, st.AttemptUID, "attempt uid of %s", uid)
		}
	})
}

// A poller that dies after moving results to its processing list and before
// the commit loses nothing: another instance takes them over once the dead
// one's heartbeat expires, and applies every one.
func TestPollerCrashBeforeCommitLosesNoResult(t *testing.T) {
	t.Parallel()
	forEachStore(t, teststore.Servers, func(t *testing.T, store string) {
		b := setup(t, setupOpts{store: store, timeout: time.Hour})
		uids := b.insertN(20, t0)
		crashed := make(chan struct{})
		var once sync.Once
		a := b.runOn(context.Background(), b.store, b.rio, func(c *Config) {
			c.InstanceID = "a"
			c.faults.beforeCommit = func(string) error {
				once.Do(func() { close(crashed) })
				return errors.New("killed before commit")
			}
		})
		jobs := b.popJobs(len(uids))

		// Half succeed, half fail with a Retry-After, all in one batch.
		done := b.clock.Advance(5 * time.Minute)
		rs := make([]redisio.Result, len(jobs))
		for i, j := range jobs {
			rs[i] = redisio.Result{UID: j.UID, AttemptUID: j.AttemptUID, Type: "success"}
			if i%2 == 1 {
				rs[i] = redisio.Result{UID: j.UID, AttemptUID: j.AttemptUID, Type: "failure",
					Reason: "HTTP 503 for " + j.UID, RetryAfterSeconds: 3600}
			}
		}
		b.sendAll(rs...)
		select {
		case <-crashed:
		case <-time.After(10 * time.Second):
			t.Fatal("poller of instance a never reached the commit")
		}
		a.stop() // the rest of process a dies with its poller

		// Nothing was applied; every result waits in a's processing list.
		require.EqualValues(t, len(rs), b.llen(b.kind.Lists.Processing("a")))
		require.Zero(t, b.llen(b.kind.Lists.Output))
		before := b.states(uids)
		for _, j := range jobs {
			require.Equal(t, j.AttemptUID, before[j.UID].AttemptUID, "%s still runs its attempt", j.UID)
		}

		other := b.start(func(c *Config) { c.InstanceID = "b" })
		waitCounter(t, func() float64 {
			return results(other, "success", "applied")() + results(other, "failure", "applied")()
		}, float64(len(rs)), "instance b applies every result of instance a")
		after := b.states(uids)
		for i, j := range jobs {
			st := after[j.UID]
			require.False(t, st.Running(), "%s", j.UID)
			if i%2 == 0 {
				require.True(t, st.LastSuccessAt.Equal(done), "%s: last_success_at %s", j.UID, st.LastSuccessAt)
				require.Zero(t, st.AttemptNo)
			} else {
				require.Equal(t, "HTTP 503 for "+j.UID, st.LastError)
				require.True(t, st.RefreshAt.Equal(done.Add(time.Hour)), "%s: retry after the Retry-After: %s", j.UID, st.RefreshAt)
			}
		}
		require.Zero(t, b.llen(b.kind.Lists.Processing("a")))
		require.Zero(t, b.llen(b.kind.Lists.Output))
	})
}

// A poller that dies after the commit and before removing the batch from
// Redis: the batch is taken over and applied again by another instance, and
// since its attempts have ended every result is stale and changes nothing.
func TestPollerCrashAfterCommitBeforeAck(t *testing.T) {
	t.Parallel()
	forEachStore(t, teststore.Servers, func(t *testing.T, store string) {
		b := setup(t, setupOpts{store: store, timeout: time.Hour})
		uids := b.insertN(20, t0)
		proxy, rioA := redisVia(t)
		committing := make(chan struct{})
		var once sync.Once
		a := b.runOn(context.Background(), b.store, rioA, func(c *Config) {
			c.InstanceID = "a"
			// Redis goes away for a right before its commit: the commit
			// succeeds, the ack cannot, and a never talks to Redis again.
			c.faults.beforeCommit = func(string) error {
				once.Do(func() { proxy.Cut(); close(committing) })
				return nil
			}
		})
		jobs := b.popJobs(len(uids))
		b.clock.Advance(5 * time.Minute)
		rs := make([]redisio.Result, 0, 2*len(jobs))
		for i, j := range jobs {
			if i%2 == 0 {
				rs = append(rs, redisio.Result{UID: j.UID, AttemptUID: j.AttemptUID, Type: "success"})
			} else {
				rs = append(rs, redisio.Result{UID: j.UID, AttemptUID: j.AttemptUID, Type: "failure", Reason: "HTTP 500", RetryAfterSeconds: 3600})
			}
		}
		b.sendAll(rs...)
		select {
		case <-committing:
		case <-time.After(10 * time.Second):
			t.Fatal("poller of instance a never reached the commit")
		}
		waitCounter(t, func() float64 {
			return results(a.svc, "success", "applied")() + results(a.svc, "failure", "applied")()
		}, float64(len(rs)), "instance a applied the batch")
		waitCounter(t, loopErrors(a.svc, "poll"), 1, "instance a fails to ack")
		a.stop()
		require.EqualValues(t, len(rs), b.llen(b.kind.Lists.Processing("a")), "the batch is still in a's processing list")
		applied := b.states(uids)
		for _, j := range jobs {
			require.False(t, applied[j.UID].Running(), "%s: a committed", j.UID)
		}

		// Applied again later, the results would change last_success_at and
		// the failure counters.
		b.clock.Advance(10 * time.Minute)
		other := b.start(func(c *Config) { c.InstanceID = "b" })
		waitCounter(t, func() float64 {
			n := 0.0
			for _, typ := range []string{"success", "failure"} {
				n += results(other, typ, "stale")() + results(other, typ, "applied")()
			}
			return n
		}, float64(len(rs)), "instance b takes a's batch over")
		require.Zero(t, results(other, "success", "applied")())
		require.Zero(t, results(other, "failure", "applied")())
		require.Equal(t, applied, b.states(uids), "nothing changed twice")
		require.Zero(t, b.llen(b.kind.Lists.Processing("a")))
		require.Zero(t, b.llen(b.kind.Lists.Output))
		b.noJob()
	})
}

// A push that fails (Redis gone between the commit and the push) undoes its
// attempts without counting them; when Redis is back the jobs are pushed as
// first attempts.
func TestRedisDownDuringPushUndoesAttempts(t *testing.T) {
	t.Parallel()
	forEachStore(t, teststore.Servers, func(t *testing.T, store string) {
		b := setup(t, setupOpts{store: store, timeout: time.Hour})
		uids := b.insertN(5, t0)
		proxy, rio := redisVia(t)
		committed := make(chan map[string]policy.State, 1)
		var once sync.Once
		r := b.runOn(context.Background(), b.store, rio, func(c *Config) {
			c.faults.beforePush = func(string) {
				once.Do(func() {
					// What the dispatcher committed before the push.
					committed <- b.states(uids)
					proxy.Cut()
				})
			}
		})
		var during map[string]policy.State
		select {
		case during = <-committed:
		case <-time.After(10 * time.Second):
			t.Fatal("no push within 10s")
		}
		for _, uid := range uids {
			require.Equal(t, 1, during[uid].AttemptNo, "%s: the attempt is committed before the push", uid)
			require.NotEmpty(t, during[uid].AttemptUID)
		}
		waitCounter(t, func() float64 { return toFloat(r.svc.Metrics().PushFailures.WithLabelValues("items")) }, 1, "push failure")
		for _, uid := range uids {
			st := b.waitFor(uid, "attempt undone", func(s policy.State) bool { return s.AttemptUID == "" })
			require.Zero(t, st.AttemptNo, "%s: the attempt is not counted", uid)
			require.True(t, st.RefreshAt.Equal(t0), "%s: due again: %s", uid, st.RefreshAt)
			require.True(t, st.AttemptAt.IsZero(), "%s", uid)
			require.True(t, st.TimeoutAt.IsZero(), "%s", uid)
			require.True(t, st.FailingSince.IsZero(), "%s", uid)
			require.Empty(t, st.LastError, "%s", uid)
		}
		require.Zero(t, toFloat(r.svc.Metrics().Started.WithLabelValues("items")))
		require.Zero(t, b.llen(b.kind.Lists.Input))

		proxy.Restore()
		jobs := b.popJobs(len(uids))
		for _, j := range jobs {
			require.Equal(t, 1, j.AttemptNo, "%s", j.UID)
			require.Equal(t, j.AttemptUID, b.state(j.UID).AttemptUID)
		}
		// The dispatcher counts its starts after the push returns, so a
		// worker may pop the jobs before the count moves.
		started := func() float64 { return toFloat(r.svc.Metrics().Started.WithLabelValues("items")) }
		waitCounter(t, started, float64(len(uids)), "the pushed attempts counted as started")
		require.Equal(t, float64(len(uids)), started())
		b.noJob()
	})
}

// Redis down for a while: results workers push meanwhile are applied when
// it is back, a model that became due meanwhile starts then, and no model
// is stuck.
func TestRedisOutageLosesNothing(t *testing.T) {
	t.Parallel()
	forEachStore(t, teststore.Servers, func(t *testing.T, store string) {
		b := setup(t, setupOpts{store: store, timeout: time.Hour})
		b.insert("m1", "m2", "m3")
		proxy, rio := redisVia(t)
		r := b.runOn(context.Background(), b.store, rio, nil)
		jobs := map[string]redisio.Job{}
		for _, j := range b.popJobs(3) {
			jobs[j.UID] = j
		}
		// The jobs can be popped before the dispatcher has read RPUSH's reply;
		// a cut then fails its push, and it undoes the attempts (correctly: it
		// cannot know the push went through). Cut only once the push counted.
		waitCounter(t, func() float64 { return toFloat(r.svc.Metrics().Started.WithLabelValues("items")) }, 3, "push acknowledged")

		proxy.Cut()
		// Workers talk to Redis directly: their results arrive during the outage.
		b.sendAll(
			redisio.Result{UID: "m1", AttemptUID: jobs["m1"].AttemptUID, Type: "success"},
			redisio.Result{UID: "m2", AttemptUID: jobs["m2"].AttemptUID, Type: "failure", Reason: "HTTP 500"},
		)
		// A model created during the outage becomes due.
		b.exec("INSERT INTO items (uid, input_url, refresh_at) VALUES ('m4', 'https://example.com/m4', ?)", t0.Add(time.Minute))
		done := b.clock.Advance(time.Minute)
		waitCounter(t, loopErrors(r.svc, "poll"), 2, "poller notices the outage")
		waitCounter(t, loopErrors(r.svc, "dispatch"), 2, "dispatcher notices the outage")
		// Both results wait in Redis: in the output list, or one in the
		// processing list when Redis served the poller's BLMOVE before it
		// noticed the connection was gone.
		require.EqualValues(t, 2, b.inRedis("test-a"), "results wait in Redis")
		require.Zero(t, b.llen(b.kind.Lists.Input))
		require.False(t, b.state("m4").Running(), "nothing starts while Redis is down")

		proxy.Restore()
		st := b.waitFor("m1", "success applied", func(s policy.State) bool { return !s.Running() })
		require.Truef(t, st.LastSuccessAt.Equal(done), "m1 applied at %s, want %s (after the outage); state %+v", st.LastSuccessAt, done, st)
		// m2's failure retries at once (delays[0] = 0s) and m4 starts.
		started := map[string]redisio.Job{}
		for _, j := range b.popJobs(2) {
			started[j.UID] = j
		}
		require.Equal(t, 2, started["m2"].AttemptNo)
		require.Equal(t, 1, started["m4"].AttemptNo)
		require.Equal(t, "HTTP 500", b.state("m2").LastError)
		require.Equal(t, jobs["m3"].AttemptUID, b.state("m3").AttemptUID, "m3's attempt runs on")
		for _, uid := range []string{"m1", "m2", "m3", "m4"} {
			require.False(t, b.state(uid).RefreshAt.IsZero(), "%s is not stuck", uid)
		}
		require.Zero(t, b.llen(b.kind.Lists.Output))
	})
}

// The database down for a while (nothing lost, nothing stuck): results keep
// arriving in Redis and wait there; when the database is back every one is
// applied and no model is stuck. The service reaches the database through
// a proxy the test cuts; the test (the application) still reaches it.
func TestDatabaseOutageLosesNothing(t *testing.T) {
	t.Parallel()
	forEachStore(t, teststore.Servers, func(t *testing.T, store string) {
		b := setup(t, setupOpts{store: store, timeout: time.Hour})
		uids := b.insertN(10, t0)
		proxy := testenv.NewProxy(t, b.d.Addr(t))
		via, err := stores.Open(context.Background(), b.d.URLVia(t, proxy.Addr), stores.Options{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = via.Close() })
		r := b.runOn(context.Background(), via, b.rio, nil)

		jobs := b.popJobs(len(uids))
		b.sendAll(
			redisio.Result{UID: jobs[0].UID, AttemptUID: jobs[0].AttemptUID, Type: "success"},
			redisio.Result{UID: jobs[1].UID, AttemptUID: jobs[1].AttemptUID, Type: "success"},
		)
		// Applied (counted in the transaction), committed and acknowledged.
		waitCounter(t, results(r.svc, "success", "applied"), 2, "results applied before the outage")
		testenv.Eventually(t, 10*time.Second, "results acknowledged before the outage", func() bool { return b.inRedis("test-a") == 0 })

		proxy.Cut()
		done := b.clock.Advance(time.Minute)
		var rs []redisio.Result
		for _, j := range jobs[2:8] {
			rs = append(rs, redisio.Result{UID: j.UID, AttemptUID: j.AttemptUID, Type: "success"})
		}
		for _, j := range jobs[8:] {
			rs = append(rs, redisio.Result{UID: j.UID, AttemptUID: j.AttemptUID, Type: "failure", Reason: "HTTP 502"})
		}
		// Results trickle in during the outage.
		for _, res := range rs {
			b.send(res)
		}
		// A model created meanwhile (by an application that can still reach
		// its database) is due.
		b.exec("INSERT INTO items (uid, input_url, refresh_at) VALUES ('new', 'https://example.com/new', ?)", done)
		// Both loops fail, back off and try again, several times.
		waitCounter(t, loopErrors(r.svc, "poll"), 3, "poller notices the outage")
		waitCounter(t, loopErrors(r.svc, "dispatch"), 3, "dispatcher notices the outage")
		require.EqualValues(t, len(rs), b.inRedis("test-a"), "every result waits in Redis")
		require.False(t, b.state("new").Running())

		proxy.Restore()
		for _, j := range jobs[2:8] {
			st := b.waitFor(j.UID, "success applied", func(s policy.State) bool { return !s.LastSuccessAt.IsZero() })
			require.True(t, st.LastSuccessAt.Equal(done))
			require.False(t, st.Running())
		}
		// The failures retry at once (delays[0] = 0s) and the new model starts.
		for _, j := range b.popJobs(3) {
			if j.UID == "new" {
				require.Equal(t, 1, j.AttemptNo)
				continue
			}
			require.Equal(t, 2, j.AttemptNo, "%s", j.UID)
			require.Equal(t, "HTTP 502", b.state(j.UID).LastError)
		}
		for uid, st := range b.states(append(uids, "new")) {
			require.False(t, st.RefreshAt.IsZero(), "%s is not stuck", uid)
		}
		require.Zero(t, b.llen(b.kind.Lists.Output))
		require.Zero(t, b.llen(b.kind.Lists.Processing("test-a")))
		require.Equal(t, float64(len(rs)+2),
			results(r.svc, "success", "applied")()+results(r.svc, "failure", "applied")(), "each result applied once")
	})
}

// Cancelling Run's context lets the batch in hand finish: attempts committed
// are pushed, results fetched are committed and removed from Redis, and Run
// returns.
func TestGracefulShutdownFinishesBatchInHand(t *testing.T) {
	t.Parallel()

	// waitRun waits for Run to return after the cancel.
	waitRun := func(t *testing.T, r *running) {
		t.Helper()
		select {
		case <-r.done:
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return within 10s of cancel")
		}
	}

	t.Run("dispatcher", func(t *testing.T) {
		t.Parallel()
		b := setup(t, setupOpts{timeout: time.Hour})
		uids := b.insertN(3, t0)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		r := b.runOn(ctx, b.store, b.rio, func(c *Config) {
			c.faults.beforePush = func(string) { cancel() }
		})
		waitRun(t, r)
		// Run has returned: the attempts it committed must be pushed.
		require.EqualValues(t, len(uids), b.llen(b.kind.Lists.Input), "the committed attempts were pushed")
		for uid, st := range b.states(uids) {
			require.Equal(t, 1, st.AttemptNo, "%s", uid)
			require.True(t, st.Running(), "%s: not undone", uid)
		}
		require.Zero(t, toFloat(r.svc.Metrics().PushFailures.WithLabelValues("items")))
	})

	t.Run("poller", func(t *testing.T) {
		t.Parallel()
		b := setup(t, setupOpts{timeout: time.Hour})
		uids := b.insertN(3, t0)
		first := b.runOn(context.Background(), b.store, b.rio, func(c *Config) { c.InstanceID = "first" })
		jobs := b.popJobs(len(uids))
		first.stop()

		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		r := b.runOn(ctx, b.store, b.rio, func(c *Config) {
			c.InstanceID = "p"
			c.faults.beforeCommit = func(string) error { cancel(); return nil }
		})
		rs := make([]redisio.Result, len(jobs))
		for i, j := range jobs {
			rs[i] = redisio.Result{UID: j.UID, AttemptUID: j.AttemptUID, Type: "success"}
		}
		b.sendAll(rs...)
		waitRun(t, r)
		// Run has returned: the batch must be committed and acknowledged.
		for uid, st := range b.states(uids) {
			require.False(t, st.Running(), "%s: the result fetched before the cancel is committed", uid)
			require.True(t, st.LastSuccessAt.Equal(t0), "%s", uid)
		}
		require.Zero(t, b.llen(b.kind.Lists.Output))
		require.Zero(t, b.llen(b.kind.Lists.Processing("p")), "the batch is acknowledged")
		require.Equal(t, float64(len(rs)), results(r.svc, "success", "applied")())
	})
}

// TestKeyTheColumnCannotHoldIsAnUnknownModel: a result whose uid the key
// column cannot hold (an emoji in a latin1 column on MySQL, a NUL on
// PostgreSQL, where no text holds one) names no row, like any unknown uid:
// it goes to the dead-letter list as an unknown model, and the other
// results of its batch are applied in the same transaction, not one by one
// after the database refused the batch.
func TestKeyTheColumnCannotHoldIsAnUnknownModel(t *testing.T) {
	t.Parallel()
	forEachStore(t, teststore.Servers, func(t *testing.T, store string) {
		b := setup(t, setupOpts{store: store, timeout: time.Hour})
		odd := "m\x00"
		if store == teststore.MySQL {
			odd = "m\U0001F600"
			b.exec("ALTER TABLE items MODIFY uid CHAR(20) CHARACTER SET latin1 NOT NULL")
		}
		b.insert("m1", "m2")
		var commits atomic.Int64
		svc := b.start(func(c *Config) {
			c.faults.beforeCommit = func(string) error { commits.Add(1); return nil }
		})
		jobs := map[string]redisio.Job{}
		for _, j := range b.popJobs(2) {
			jobs[j.UID] = j
		}
		b.sendAll(
			redisio.Result{UID: "m1", AttemptUID: jobs["m1"].AttemptUID, Type: "success"},
			redisio.Result{UID: odd, AttemptUID: jobs["m1"].AttemptUID, Type: "success"},
			redisio.Result{UID: "m2", AttemptUID: jobs["m2"].AttemptUID, Type: "success"},
		)

		b.waitFor("m1", "success applied", func(s policy.State) bool { return !s.LastSuccessAt.IsZero() })
		b.waitFor("m2", "success applied", func(s policy.State) bool { return !s.LastSuccessAt.IsZero() })
		waitCounter(t, func() float64 { return toFloat(svc.Metrics().DeadLetters.WithLabelValues("items")) }, 1, "odd uid dead-lettered")
		dead, err := b.rdb.LRange(context.Background(), b.kind.Lists.Dead, 0, -1).Result()
		require.NoError(t, err)
		require.Len(t, dead, 1)
		var d deadLetterEntry
		require.NoError(t, json.Unmarshal([]byte(dead[0]), &d))
		require.Contains(t, d.Error, "unknown model: no row in table items with uid = ")
		var r redisio.Result
		require.NoError(t, json.Unmarshal([]byte(d.Message), &r))
		require.Equal(t, odd, r.UID)
		require.Equal(t, 1.0, results(svc, "success", "unknown_model")())
		require.EqualValues(t, 1, commits.Load(), "the batch is applied in one transaction, not message by message")
		require.Zero(t, b.llen(b.kind.Lists.Output))
	})
}

// TestMissingTableKeepsResults renames the kind's table away while results
// wait: they must not be dead-lettered (the database refusing a statement
// because of the schema is not a bad result), the error must say how to fix
// it, and once the table is back the results are applied.
func TestMissingTableKeepsResults(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{timeout: time.Hour})
	b.insert("m1", "m2")
	var logs testenv.SyncBuffer
	svc := b.start(func(c *Config) { c.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	jobs := b.popJobs(2)

	_, err := b.db.Exec("RENAME TABLE items TO items_away")
	require.NoError(t, err)
	for _, j := range jobs {
		b.send(redisio.Result{UID: j.UID, AttemptUID: j.AttemptUID, Type: "success"})
	}
	waitCounter(t, func() float64 { return toFloat(svc.Metrics().Errors.WithLabelValues("items", "poll")) }, 2, "poll passes failing on the missing table")
	require.Zero(t, b.llen(b.kind.Lists.Dead), "results dead-lettered because the table was missing")
	require.Contains(t, logs.String(), "doesn't exist")
	require.Contains(t, logs.String(), "refresher migrate")

	_, err = b.db.Exec("RENAME TABLE items_away TO items")
	require.NoError(t, err)
	for _, j := range jobs {
		b.waitFor(j.UID, "success applied after the table came back", func(s policy.State) bool { return !s.LastSuccessAt.IsZero() })
	}
	require.Zero(t, b.llen(b.kind.Lists.Dead))
}

// TestResultRefusedByTheApplication: an application trigger that rejects
// one model's update (SIGNAL) dead-letters that result with the trigger's
// message, while the others of its batch are applied.
func TestResultRefusedByTheApplication(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{timeout: time.Hour})
	b.insert("m1", "bad", "m2")
	_, err := b.db.Exec(`CREATE TRIGGER items_check BEFORE UPDATE ON items FOR EACH ROW
		IF NEW.uid = 'bad' AND NEW.refresh_last_success_at IS NOT NULL THEN
			SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'the application refuses this refresh';
		END IF`)
	require.NoError(t, err)
	svc := b.start(nil)
	jobs := map[string]redisio.Job{}
	for _, j := range b.popJobs(3) {
		jobs[j.UID] = j
	}
	var rs []redisio.Result
	for _, uid := range []string{"m1", "bad", "m2"} {
		rs = append(rs, redisio.Result{UID: uid, AttemptUID: jobs[uid].AttemptUID, Type: "success"})
	}
	b.sendAll(rs...)

	b.waitFor("m1", "success applied", func(s policy.State) bool { return !s.LastSuccessAt.IsZero() })
	b.waitFor("m2", "success applied", func(s policy.State) bool { return !s.LastSuccessAt.IsZero() })
	waitCounter(t, func() float64 { return toFloat(svc.Metrics().DeadLetters.WithLabelValues("items")) }, 1, "refused result dead-lettered")
	dead, err := b.rdb.LRange(context.Background(), b.kind.Lists.Dead, 0, -1).Result()
	require.NoError(t, err)
	require.Len(t, dead, 1)
	require.Contains(t, dead[0], "the application refuses this refresh")
	require.Contains(t, dead[0], `\"uid\":\"bad\"`)
	require.True(t, b.state("bad").Running(), "the refused result changed nothing")
}

// TestBusyInstanceTakesOverDeadInstance: an instance working through a
// backlog (so it always has a batch fetched ahead) still takes over, within
// a few heartbeats, the results a dead instance left in its processing
// list, and does not wait for the output list to run dry.
func TestBusyInstanceTakesOverDeadInstance(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{timeout: time.Hour})
	uids := b.insertN(5, t0)
	svc := b.start(func(c *Config) {
		c.BatchSize = 10
		c.Heartbeat = 2 * time.Second
		c.FetchBlock = 200 * time.Millisecond
	})
	jobs := b.popJobs(len(uids))

	// The backlog: results naming no row, kept above 2,000 until the test
	// ends, far more than a batch.
	ctx, cancel := context.WithCancel(context.Background())
	pushed := make(chan struct{})
	defer func() { cancel(); <-pushed }()
	go func() {
		defer close(pushed)
		noise := make([]any, 500)
		for i := range noise {
			noise[i] = fmt.Sprintf(`{"uid":"nobody%d","attempt_uid":"a","type":"success"}`, i)
		}
		for ctx.Err() == nil {
			if n, err := b.rdb.LLen(ctx, b.kind.Lists.Output).Result(); err == nil && n < 2000 {
				b.rdb.RPush(ctx, b.kind.Lists.Output, noise...)
			}
			time.Sleep(5 * time.Millisecond) // the producer's pace, not a wait
		}
	}()
	testenv.Eventually(t, 10*time.Second, "the backlog is drained in batches", func() bool {
		return toFloat(svc.Metrics().DeadLetters.WithLabelValues("items")) > 100
	})

	// A dead instance left the real results in its processing list (no
	// heartbeat key).
	dead := make([]any, len(jobs))
	for i, j := range jobs {
		raw, err := json.Marshal(redisio.Result{UID: j.UID, AttemptUID: j.AttemptUID, Type: "success"})
		require.NoError(t, err)
		dead[i] = string(raw)
	}
	require.NoError(t, b.rdb.RPush(context.Background(), b.kind.Lists.Processing("gone"), dead...).Err())
	waitCounter(t, results(svc, "success", "applied"), float64(len(jobs)), "the dead instance's results applied during the backlog")
	require.Zero(t, b.llen(b.kind.Lists.Processing("gone")))
	require.Positive(t, b.llen(b.kind.Lists.Output), "the backlog was still there")
}
