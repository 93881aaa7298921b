package refresher

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
)

// guardTrips counts the round trips to Redis that read or write the
// incident window (HMGET of its buckets, HINCRBY of its counts).
type guardTrips struct{ n atomic.Int64 }

func (*guardTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (g *guardTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if isGuardCmd(cmd) {
			g.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (g *guardTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if slices.ContainsFunc(cmds, isGuardCmd) {
			g.n.Add(1)
		}
		return next(ctx, cmds)
	}
}

func isGuardCmd(c redis.Cmder) bool { return c.Name() == "hmget" || c.Name() == "hincrby" }

// Three batches of results back to back cost the incident guard one round
// trip each (the window's read, which writes the previous batch's counts
// first) and one more after the next empty fetch, which writes the last
// batch's counts: 4, where a read and a write per batch were 6. Every
// result is counted once.
func TestIncidentGuardOneRoundTripPerBatch(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{timeout: time.Hour})
	uids := make([]string, 12)
	for i := range uids {
		uids[i] = fmt.Sprintf("g%02d", i)
	}
	b.insert(uids...)
	trips := &guardTrips{}
	b.rdb.AddHook(trips)
	b.start(func(c *Config) { c.BatchSize = 4 })
	jobs := b.jobsByUID(len(uids))

	msgs := make([]any, 0, len(uids))
	for _, uid := range uids {
		raw, err := json.Marshal(redisio.Result{UID: uid, AttemptUID: jobs[uid].AttemptUID, Type: "success"})
		require.NoError(t, err)
		msgs = append(msgs, raw)
	}
	trips.n.Store(0) // the idle poller's reads so far are not the batches'
	require.NoError(t, b.rdb.RPush(context.Background(), b.kind.Lists.Output, msgs...).Err())
	for _, uid := range uids {
		b.waitFor(uid, "success applied", func(s policy.State) bool { return !s.Running() })
	}
	bucket := b.kind.Lists.Input + ":incident:" + strconv.FormatInt(b.clock.Now().Unix()/60, 10)
	reader := redis.NewClient(b.rdb.Options()) // its reads are not the service's
	defer reader.Close()
	// Written after the next empty fetch (at most idleFetchBlock, 0.67s
	// here), well before the idle poller's read every idleCheck (5s).
	var got []any
	testenv.EventuallyNil(t, 3*time.Second, "12 results in the window", func() error {
		var err error
		got, err = reader.HMGet(context.Background(), bucket, "results", "failures").Result()
		require.NoError(t, err)
		if got[0] != "12" {
			return fmt.Errorf("the window holds %v results", got[0])
		}
		return nil
	})
	require.Equal(t, "0", got[1], "failures in the window")
	require.Equal(t, int64(4), trips.n.Load(), "the incident guard's round trips for 3 batches")
}

// stoppable runs a service with the bundle's config (as changed by mod)
// and returns it with stop, which cancels it and waits until it has
// stopped (at most 10s), so that the poller's last counts are written.
func stoppable(t *testing.T, b *testBundle, mod func(*Config)) (*Service, func()) {
	t.Helper()
	svc, err := New(b.config(mod), b.store, b.rio)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = svc.Run(ctx) }()
	stop := func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("the service did not stop within 10s")
		}
	}
	t.Cleanup(func() { cancel(); <-done })
	return svc, stop
}

// windowNow reads the incident window's bucket of the clock's minute.
func windowNow(t *testing.T, b *testBundle) []any {
	t.Helper()
	bucket := b.kind.Lists.Input + ":incident:" + strconv.FormatInt(b.clock.Now().Unix()/60, 10)
	got, err := b.rdb.HMGet(context.Background(), bucket, "results", "failures").Result()
	require.NoError(t, err)
	return got
}

// A poller that stops writes the counts of its last batch, which waited for
// the next read of the window.
func TestIncidentCountsWrittenOnStop(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{timeout: time.Hour})
	b.insert("s1", "s2")
	// The fetch after the batch blocks for 5s: the stop comes during it.
	_, stop := stoppable(t, b, func(c *Config) { c.FetchBlock, c.Heartbeat = 5*time.Second, 30*time.Second })
	jobs := b.jobsByUID(2)
	var rs []redisio.Result
	for uid, j := range jobs {
		rs = append(rs, redisio.Result{UID: uid, AttemptUID: j.AttemptUID, Type: "success"})
	}
	b.sendAll(rs...)
	for uid := range jobs {
		b.waitFor(uid, "success applied", func(s policy.State) bool { return !s.Running() })
	}
	stop()
	require.Equal(t, []any{"2", "0"}, windowNow(t, b), "the window after the stop")
}

// A batch whose Ack fails comes back and is applied again (its results
// stale): its results count once in the incident window, not twice.
func TestIncidentCountsABatchThatComesBackOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{timeout: time.Hour})
	b.insert("s1", "s2")
	var failed atomic.Bool
	svc, stop := stoppable(t, b, func(c *Config) {
		c.faults.beforeAck = func(string) error {
			if failed.CompareAndSwap(false, true) {
				return errors.New("Redis lost the Ack")
			}
			return nil
		}
	})
	jobs := b.jobsByUID(2)
	var rs []redisio.Result
	for uid, j := range jobs {
		rs = append(rs, redisio.Result{UID: uid, AttemptUID: j.AttemptUID, Type: "success"})
	}
	b.sendAll(rs...)
	waitCounter(t, results(svc, "success", "stale"), 2, "the batch applied again, stale")
	testenv.Eventually(t, 10*time.Second, "the batch acknowledged", func() bool { return b.inRedis(b.cfg.InstanceID) == 0 })
	stop()
	require.Equal(t, []any{"2", "0"}, windowNow(t, b), "the window after the batch came back")
}
