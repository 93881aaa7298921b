//go:build linux

package refresher

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
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
	"github.com/refresher/refresher/schedule"
)

// killChildEnv carries the childSpec (JSON) to a child process that runs a
// Service for TestKilledServiceLosesNoResult.
const killChildEnv = "REFRESHER_TEST_KILL_CHILD"

// childSpec is what a child service needs; the parent owns the database and
// the Redis keys.
type childSpec struct {
	Database string // a URL for stores.Open
	Redis    string
	Lists    redisio.Lists
	Instance string
	Rule     string
	Timeout  time.Duration
	Retry    string
}

// The kill test's settings: a rule whose occurrences come every minute, an
// attempt timeout longer than a result can wait in a dead child's
// processing list during the test (the kill phase, about 5s, plus the
// heartbeat and a recover period, 4s), and retries 100ms after a failure.
const (
	killRule    = "DTSTART:20260101T000000Z\nRRULE:FREQ=MINUTELY"
	killTimeout = 15 * time.Second
	killRetry   = "constant:unit=100ms"
	killModels  = 300
	killRounds  = 6
)

// TestKillHelperProcess is not a test: it runs a Service with the system
// clock, on the store childSpec.Database names (opened like the service
// opens it, models/stores), until SIGTERM (graceful) or SIGKILL, when
// started by TestKilledServiceLosesNoResult with killChildEnv set.
func TestKillHelperProcess(t *testing.T) {
	raw := os.Getenv(killChildEnv)
	if raw == "" {
		return
	}
	var spec childSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "child: bad spec:", err)
		os.Exit(2)
	}
	if err := runChild(spec); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func runChild(spec childSpec) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	store, err := stores.Open(ctx, spec.Database, stores.Options{})
	if err != nil {
		return err
	}
	defer store.Close()
	opt, err := redis.ParseURL(spec.Redis)
	if err != nil {
		return err
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	sched, err := schedule.Parse(spec.Rule)
	if err != nil {
		return err
	}
	retry, err := policy.ParseRetry(spec.Retry)
	if err != nil {
		return err
	}
	svc, err := New(Config{
		Kinds: []Kind{{
			Name:     "items",
			Table:    models.Table{Name: "items", Key: "uid", Payload: []string{"input_url"}},
			Lists:    spec.Lists,
			Schedule: sched,
			Policy:   policy.Policy{Kind: "items", Timeout: spec.Timeout, Retry: retry},
		}},
		InstanceID: spec.Instance,
		BatchSize:  100,
		MaxSleep:   50 * time.Millisecond,
		FetchBlock: 100 * time.Millisecond,
		Heartbeat:  2 * time.Second,
		Logger:     slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})).With("instance", spec.Instance),
	}, store, redisio.New(rdb))
	if err != nil {
		return err
	}
	return svc.Run(ctx)
}

// Nothing is lost and nothing stuck, with real processes, on MySQL and on
// PostgreSQL: a service killed (SIGKILL) at random moments, several times,
// and restarted under a new instance ID, loses no result and leaves no
// model stuck. A worker (this test) answers every job, a third of the
// first attempts with a failure. A trigger on the table (attemptLog) logs
// how every attempt ended; each attempt the worker answered must have
// ended with the worker's answer: a timeout would mean its result was lost
// (or waited in Redis longer than the attempt timeout, which the settings
// rule out). The children's output goes to a testenv.SyncBuffer, shown when
// the test fails.
func TestKilledServiceLosesNoResult(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts a service for about 10s, on each store")
	}
	t.Parallel()
	forEachStore(t, teststore.Servers, func(t *testing.T, store string) {
		b := setup(t, setupOpts{store: store, rule: killRule, timeout: killTimeout})
		ctx := context.Background()
		for _, stmt := range attemptLog[store] {
			b.exec(stmt)
		}
		uids := b.insertN(killModels, time.Now().UTC())

		spec := childSpec{
			Database: b.d.URL, Redis: testenv.RedisURL(), Lists: b.kind.Lists,
			Rule: killRule, Timeout: killTimeout, Retry: killRetry,
		}
		logs := &testenv.SyncBuffer{}
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("children's logs:\n%s", logs.String())
			}
		})
		start := func(instance string) *exec.Cmd {
			s := spec
			s.Instance = instance
			raw, err := json.Marshal(s)
			require.NoError(t, err)
			cmd := exec.Command(os.Args[0], "-test.run=^TestKillHelperProcess$", "-test.count=1")
			cmd.Env = append(os.Environ(), killChildEnv+"="+string(raw))
			cmd.Stdout, cmd.Stderr = logs, logs
			cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			require.NoError(t, cmd.Start())
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			return cmd
		}

		// The worker answers every job until the test ends.
		w := &killWorker{b: b, answered: map[string]redisio.Result{}}
		wctx, stopWorker := context.WithCancel(ctx)
		workerDone := make(chan error, 1)
		go func() { workerDone <- w.run(wctx) }()
		t.Cleanup(func() {
			stopWorker()
			select {
			case err := <-workerDone:
				if err != nil && !errors.Is(err, context.Canceled) {
					t.Errorf("worker: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Error("worker did not stop")
			}
		})

		seed := uint64(time.Now().UnixNano())
		t.Logf("kill moments seed %d", seed)
		rng := rand.New(rand.NewPCG(seed, seed))
		killed := 0
		for round := range killRounds {
			child := start(fmt.Sprintf("kill-%d", round))
			if round > 0 {
				// The application asks for a refresh of every idle model, so
				// that each child has jobs to push and results to apply.
				b.exec(`UPDATE items SET refresh_at = ` + b.d.Now() + `
				WHERE refresh_attempt_uid IS NULL AND refresh_disabled_until_update IS NULL`)
			}
			proc := b.kind.Lists.Processing(fmt.Sprintf("kill-%d", round))
			switch round % 3 {
			case 0:
				// A random moment in the child's life, not a wait for a
				// condition.
				time.Sleep(time.Duration(100+rng.IntN(900)) * time.Millisecond)
			case 1:
				// The moment its poller holds a batch, fetched and not yet
				// acknowledged (or a little after).
				b.pollList(proc, 2*time.Second, func(n int64) bool { return n > 0 })
			case 2:
				// Right after its poller acknowledged a batch.
				if b.pollList(proc, 2*time.Second, func(n int64) bool { return n > 0 }) {
					b.pollList(proc, time.Second, func(n int64) bool { return n == 0 })
				}
			}
			require.NoError(t, child.Process.Signal(syscall.SIGKILL))
			_ = child.Wait()
			killed++
		}
		left := b.leftInProcessing()
		t.Logf("%d kills; %d results left in dead instances' processing lists", killed, left)

		final := start("final")
		t.Cleanup(func() {
			_ = final.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { _ = final.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = final.Process.Kill()
				t.Error("final child did not stop within 10s of SIGTERM")
			}
		})

		// Every model reaches a success and waits for its next occurrence, and
		// no result is left in Redis.
		sched, err := schedule.Parse(killRule)
		require.NoError(t, err)
		testenv.EventuallyNil(t, killTimeout+15*time.Second, "settled after the last kill", func() error {
			if why := b.killSettled(uids, sched); why != "" {
				return errors.New(why)
			}
			return nil
		})

		// Every result the worker pushed was applied: its attempt ended with
		// the worker's answer.
		ended := attemptEnds(t, b.d)

		answered := w.snapshot()
		applied := 0
		var lost []string
		for attempt, r := range answered {
			e, ok := ended[attempt]
			switch {
			case !ok:
				lost = append(lost, fmt.Sprintf("%s attempt %s: never ended", r.UID, attempt))
			case r.Type == redisio.ResultSuccess && e.success && e.lastError == "":
				applied++
			case r.Type == redisio.ResultFailure && e.lastError == r.Reason:
				applied++
			default:
				lost = append(lost, fmt.Sprintf("%s attempt %s: answered %s, ended with success=%v error=%q",
					r.UID, attempt, r.Type, e.success, e.lastError))
			}
		}
		timeouts := 0
		for _, e := range ended {
			if strings.HasPrefix(e.lastError, "timed out") {
				timeouts++
			}
		}
		t.Logf("results pushed %d, applied %d; %d attempts ended, %d by timeout (their jobs were never pushed: killed between commit and push)",
			len(answered), applied, len(ended), timeouts)
		if len(lost) > 0 {
			t.Fatalf("%d of %d results lost, e.g.:\n%s", len(lost), len(answered), strings.Join(lost[:min(len(lost), 10)], "\n"))
		}
		require.Equal(t, len(answered), applied)
	})
}

// attemptLog creates, by store, the table attempt_log and the trigger that
// writes into it how each attempt of items ended: when refresh_attempt_uid
// changes from an attempt, the attempt, the error and whether
// refresh_last_success_at changed.
var attemptLog = map[string][]string{
	teststore.MySQL: {`CREATE TABLE attempt_log (
		id BIGINT AUTO_INCREMENT PRIMARY KEY,
		uid CHAR(20) NOT NULL,
		attempt_uid CHAR(20) NOT NULL,
		next_attempt_uid CHAR(20) NULL,
		last_error VARCHAR(1024) NULL,
		success_changed BOOL NOT NULL,
		attempt_no INT NOT NULL)`,
		`CREATE TRIGGER items_attempt_ended AFTER UPDATE ON items FOR EACH ROW
		IF OLD.refresh_attempt_uid IS NOT NULL AND NOT (OLD.refresh_attempt_uid <=> NEW.refresh_attempt_uid) THEN
			INSERT INTO attempt_log (uid, attempt_uid, next_attempt_uid, last_error, success_changed, attempt_no)
			VALUES (NEW.uid, OLD.refresh_attempt_uid, NEW.refresh_attempt_uid, NEW.refresh_last_error,
				NOT (OLD.refresh_last_success_at <=> NEW.refresh_last_success_at), NEW.refresh_attempt_no);
		END IF`},
	teststore.Postgres: {`CREATE TABLE attempt_log (
		id bigserial PRIMARY KEY,
		uid varchar(20) NOT NULL,
		attempt_uid varchar(20) NOT NULL,
		next_attempt_uid varchar(20) NULL,
		last_error varchar(1024) NULL,
		success_changed boolean NOT NULL,
		attempt_no integer NOT NULL)`,
		`CREATE FUNCTION items_attempt_ended() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF OLD.refresh_attempt_uid IS NOT NULL AND OLD.refresh_attempt_uid IS DISTINCT FROM NEW.refresh_attempt_uid THEN
				INSERT INTO attempt_log (uid, attempt_uid, next_attempt_uid, last_error, success_changed, attempt_no)
				VALUES (NEW.uid, OLD.refresh_attempt_uid, NEW.refresh_attempt_uid, NEW.refresh_last_error,
					OLD.refresh_last_success_at IS DISTINCT FROM NEW.refresh_last_success_at, NEW.refresh_attempt_no);
			END IF;
			RETURN NULL;
		END $$`,
		`CREATE TRIGGER items_attempt_ended AFTER UPDATE ON items FOR EACH ROW EXECUTE FUNCTION items_attempt_ended()`},
}

// attemptEnd is how an attempt ended, from the attempt_log trigger.
type attemptEnd struct {
	uid       string
	lastError string
	success   bool
}

// attemptEnds reads the attempt_log trigger's rows by attempt UID and fails
// the test if an attempt ended twice.
func attemptEnds(t *testing.T, db interface {
	Query(string, ...any) (*sql.Rows, error)
}) map[string]attemptEnd {
	t.Helper()
	ended := map[string]attemptEnd{}
	rows, err := db.Query("SELECT uid, attempt_uid, COALESCE(last_error, ''), success_changed FROM attempt_log")
	require.NoError(t, err)
	defer rows.Close()
	for rows.Next() {
		var e attemptEnd
		var attempt string
		require.NoError(t, rows.Scan(&e.uid, &attempt, &e.lastError, &e.success))
		_, dup := ended[attempt]
		require.False(t, dup, "attempt %s of %s ended twice", attempt, e.uid)
		ended[attempt] = e
	}
	require.NoError(t, rows.Err())
	return ended
}

// killSettled returns "" when every model is idle after a success with
// refresh_at on an occurrence of sched, and no result waits in Redis;
// otherwise what is not so.
func (b *testBundle) killSettled(uids []string, sched *schedule.Schedule) string {
	states := b.states(uids)
	for _, uid := range uids {
		st := states[uid]
		switch {
		case st.Running():
			return fmt.Sprintf("%s runs attempt %d (%s)", uid, st.AttemptNo, st.AttemptUID)
		case st.Disabled():
			return fmt.Sprintf("%s is disabled: %s", uid, st.DisabledReason)
		case st.LastSuccessAt.IsZero():
			return fmt.Sprintf("%s never succeeded (last error %q)", uid, st.LastError)
		case st.RefreshAt.IsZero():
			return fmt.Sprintf("%s is stuck: refresh_at is NULL", uid)
		case !sched.Next(st.RefreshAt.Add(-time.Microsecond)).Equal(st.RefreshAt) || !st.RefreshAt.After(st.LastSuccessAt):
			return fmt.Sprintf("%s: refresh_at %s is not the occurrence after the success at %s", uid, st.RefreshAt, st.LastSuccessAt)
		}
	}
	if n := b.llen(b.kind.Lists.Output); n > 0 {
		return fmt.Sprintf("%d results wait in the output list", n)
	}
	if n := b.leftInProcessing(); n > 0 {
		return fmt.Sprintf("%d results wait in processing lists", n)
	}
	return ""
}

// pollList checks the length of a list every millisecond until cond holds
// (true) or limit passes (false). Unlike testenv.Eventually it catches a
// moment, which may pass unseen without failing the test.
func (b *testBundle) pollList(key string, limit time.Duration, cond func(int64) bool) bool {
	for end := time.Now().Add(limit); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if cond(b.llen(key)) {
			return true
		}
	}
	return false
}

// leftInProcessing counts the results in every processing list of the kind.
func (b *testBundle) leftInProcessing() int64 {
	b.t.Helper()
	ctx := context.Background()
	keys, err := b.rdb.Keys(ctx, b.kind.Lists.Processing("*")).Result()
	require.NoError(b.t, err)
	var n int64
	for _, k := range keys {
		n += b.llen(k)
	}
	return n
}

// killWorker answers every job on the input list at once: a failure for the
// first attempt of a third of the models, a success otherwise.
type killWorker struct {
	b        *testBundle
	mu       sync.Mutex
	answered map[string]redisio.Result // by attempt uid
}

func (w *killWorker) run(ctx context.Context) error {
	lists := w.b.kind.Lists
	for ctx.Err() == nil {
		res, err := w.b.rdb.BLPop(ctx, time.Second, lists.Input).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return err
		}
		more, err := w.b.rdb.LPopCount(ctx, lists.Input, 1000).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		var out []any
		for _, raw := range append([]string{res[1]}, more...) {
			var job redisio.Job
			if err := json.Unmarshal([]byte(raw), &job); err != nil {
				return fmt.Errorf("job %q: %w", raw, err)
			}
			r := redisio.Result{UID: job.UID, AttemptUID: job.AttemptUID, Type: redisio.ResultSuccess}
			h := fnv.New32a()
			_, _ = h.Write([]byte(job.UID))
			if job.AttemptNo == 1 && h.Sum32()%3 == 0 {
				r = redisio.Result{UID: job.UID, AttemptUID: job.AttemptUID, Type: redisio.ResultFailure,
					Reason: "HTTP 503 for attempt " + job.AttemptUID}
			}
			w.mu.Lock()
			if _, dup := w.answered[job.AttemptUID]; dup {
				w.mu.Unlock()
				return fmt.Errorf("attempt %s of %s was pushed twice", job.AttemptUID, job.UID)
			}
			w.answered[job.AttemptUID] = r
			w.mu.Unlock()
			enc, err := json.Marshal(r)
			if err != nil {
				return err
			}
			out = append(out, string(enc))
		}
		if err := w.b.rdb.RPush(context.WithoutCancel(ctx), lists.Output, out...).Err(); err != nil {
			return err
		}
	}
	return ctx.Err()
}

func (w *killWorker) snapshot() map[string]redisio.Result {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]redisio.Result, len(w.answered))
	for k, v := range w.answered {
		out[k] = v
	}
	return out
}
