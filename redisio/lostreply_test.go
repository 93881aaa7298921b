package redisio

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
)

// The tests of this file lose the reply of one command after Redis ran it
// (testenv.Proxy.LoseReply), so that go-redis, with the options Open gives
// it (MaxRetries 3, the default), sends it again, and check what running
// it twice does.

// lossy returns a Client of b's Redis through a proxy, opened as the
// service opens its Redis (Open, go-redis's default retries), and the
// proxy.
func lossy(t *testing.T, b *bundle) (*Client, *testenv.Proxy) {
	t.Helper()
	p, u := testenv.RedisProxy(t)
	rdb, err := Open(t.Context(), u, Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rdb.Close() })
	return New(rdb), p
}

// runOf matches a run of s (EVALSHA, or EVAL when Redis lacked it).
func runOf(s *redis.Script) func(args []string) bool {
	return func(a []string) bool {
		return len(a) > 1 && (a[0] == "evalsha" && a[1] == s.Hash() || a[0] == "eval" && redis.NewScript(a[1]).Hash() == s.Hash())
	}
}

// command matches the command name whose first key is key.
func command(name, key string) func(args []string) bool {
	return func(a []string) bool { return len(a) > 1 && a[0] == name && a[1] == key }
}

// lost fails the test unless the proxy lost a reply.
func lost(t *testing.T, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	default:
		t.Fatal("no reply was lost: the command did not run through the proxy")
	}
}

// The fetch script sent twice returns the batch the first run moved: the
// second run reads it from the processing list (Fetch) or behind the
// batches in flight (Next), and moves nothing more.
func TestFetchReplyLost(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	c, p := lossy(t, b)
	pushResults(t, b, 9)
	d := c.Drain(b.lists, "A", 0)

	done := p.LoseReply(runOf(fetchScript))
	first, err := d.Fetch(ctx, 3, 0)
	require.NoError(t, err)
	lost(t, done)
	require.Equal(t, seq(0, 3), uidsOf(first))

	done = p.LoseReply(runOf(fetchScript))
	next, err := d.Next(ctx, 3)
	require.NoError(t, err)
	lost(t, done)
	require.Equal(t, seq(3, 6), uidsOf(next))
	requireList(t, b, b.lists.Processing("A"), results(0, 6)...)
	requireList(t, b, b.lists.Output, results(6, 9)...)

	require.NoError(t, d.Ack(ctx, first, nil))
	require.NoError(t, d.Ack(ctx, next, nil))
	requireList(t, b, b.lists.Processing("A"))
}

// A batch moved natively (COPY) whose reply is lost: the script sent again
// finds it in the processing list, or in the ahead list behind a batch in
// flight, and returns it.
func TestFetchNativeMoveReplyLost(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	c, p := lossy(t, b)
	if least, err := c.fastMoveMin(ctx); err != nil || least == 0 {
		t.Skipf("this Redis does not move batches natively (%d, %v)", least, err)
	}
	pushResults(t, b, 3*minFastMove)
	d := c.Drain(b.lists, "A", 0)
	done := p.LoseReply(runOf(fetchScript))
	first, err := d.Fetch(ctx, minFastMove, 0)
	require.NoError(t, err)
	lost(t, done)
	require.Equal(t, seq(0, minFastMove), uidsOf(first))
	done = p.LoseReply(runOf(fetchScript))
	next, err := d.Next(ctx, minFastMove)
	require.NoError(t, err)
	lost(t, done)
	require.Equal(t, seq(minFastMove, 2*minFastMove), uidsOf(next))
	require.NoError(t, d.Ack(ctx, first, nil))
	require.NoError(t, d.Ack(ctx, next, nil))
	requireList(t, b, b.lists.Processing("A"))
	requireList(t, b, b.lists.Ahead("A"))
	requireList(t, b, b.lists.Output, results(2*minFastMove, 3*minFastMove)...)
}

// An Ack sent twice removes its batch once, writes its dead letters once,
// and reports success: the second run sees that the first one was done
// (the batch key holds the next token). It used to report ErrRecovered,
// and the poller then skipped the batch's counts (charts, incident window)
// and dropped the batch fetched ahead, which it fetched again.
func TestAckReplyLost(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	c, p := lossy(t, b)
	pushResults(t, b, 6)
	d := c.Drain(b.lists, "A", 0)
	first, err := d.Fetch(ctx, 3, 0)
	require.NoError(t, err)
	next, err := d.Next(ctx, 3)
	require.NoError(t, err)

	first[1].Err = invalid("unknown model")
	done := p.LoseReply(runOf(ackScript))
	require.NoError(t, d.Ack(ctx, first, first[1:2]))
	lost(t, done)
	requireList(t, b, b.lists.Processing("A"), results(3, 6)...)
	require.Equal(t, int64(1), b.rdb.LLen(ctx, b.lists.Dead).Val(), "dead letters written once")

	// The last batch in flight: the key is not deleted at once, so that
	// the Ack sent again sees it was done.
	done = p.LoseReply(runOf(ackScript))
	require.NoError(t, d.Ack(ctx, next, nil))
	lost(t, done)
	requireList(t, b, b.lists.Processing("A"))

	pushResults(t, b, 2)
	again, err := d.Fetch(ctx, 10, 0)
	require.NoError(t, err)
	require.Equal(t, seq(0, 2), uidsOf(again))
	require.NoError(t, d.Ack(ctx, again, nil))
}

// Recover sent twice moves the lists back once: the second run finds them
// empty. Nothing is duplicated or lost, and the order is kept.
func TestRecoverReplyLost(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	c, p := lossy(t, b)
	pushResults(t, b, 6)
	dead := b.client.Drain(b.lists, "dead", time.Second)
	_, err := dead.Fetch(ctx, 3, 0)
	require.NoError(t, err)
	_, err = dead.Next(ctx, 3)
	require.NoError(t, err)
	require.NoError(t, b.rdb.Del(ctx, b.lists.Heartbeat("dead"), b.lists.Heartbeat("dead"+aheadSuffix)).Err())

	d := c.Drain(b.lists, "A", 0)
	done := p.LoseReply(func(a []string) bool {
		return runOf(recoverScript)(a) && len(a) > 3 && a[3] == b.lists.Processing("dead")
	})
	_, err = d.Recover(ctx)
	require.NoError(t, err)
	lost(t, done)
	requireList(t, b, b.lists.Output, results(0, 6)...)
	requireList(t, b, b.lists.Processing("dead"))
}

// A push sent twice queues its jobs twice, in order: go-redis cannot know
// whether the first RPUSH ran. The duplicates carry the same attempt UID,
// so only one of their results is applied and the others are stale (see
// refresher's TestDuplicatedJobAppliedOnce). The charts count the
// dispatched jobs twice too (PushCounting's pipeline is sent again whole).
func TestPushReplyLost(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	c, p := lossy(t, b)
	js := jobs(3)
	done := p.LoseReply(command("rpush", b.lists.Input))
	queued, err := c.Push(ctx, b.lists.Input, js)
	require.NoError(t, err)
	lost(t, done)
	require.Equal(t, int64(6), queued)
	got := b.rdb.LRange(ctx, b.lists.Input, 0, -1).Val()
	require.Len(t, got, 6)
	require.Equal(t, got[:3], got[3:])

	at := time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)
	done = p.LoseReply(command("rpush", b.lists.Input))
	_, err = c.PushCounting(ctx, b.lists, nil, js, at)
	require.NoError(t, err)
	lost(t, done)
	require.Equal(t, int64(12), b.rdb.LLen(ctx, b.lists.Input).Val())
	minute, _ := statsKeys(b.lists, at)
	require.Equal(t, "6", b.rdb.HGet(ctx, minute, statDispatched).Val(), "3 jobs counted twice")
}

// The writes that set a value (pauses, throttle holds, lease answers) are
// the same when sent twice.
func TestIdempotentWritesReplyLost(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	c, p := lossy(t, b)
	now := time.Now()

	info := PauseInfo{Note: "n", By: "me", At: now.UTC().Truncate(time.Second)}
	done := p.LoseReply(command("set", b.lists.KindPause()))
	require.NoError(t, c.PauseKind(ctx, b.lists, info))
	lost(t, done)
	done = p.LoseReply(command("hset", b.lists.PausedModels()))
	require.NoError(t, c.PauseModels(ctx, b.lists, []string{"1", "2"}, info))
	lost(t, done)
	st, err := c.ReadDispatchState(ctx, b.lists, false, now)
	require.NoError(t, err)
	require.Equal(t, &info, st.KindPause)
	require.ElementsMatch(t, []string{"1", "2"}, st.PausedModels)

	done = p.LoseReply(runOf(holdScript))
	require.NoError(t, c.Holds(ctx, b.lists.Throttle(), map[string]time.Time{"g": now.Add(time.Minute)}, now))
	lost(t, done)
	held, err := c.Held(ctx, b.lists.Throttle(), now)
	require.NoError(t, err)
	require.Equal(t, now.Add(time.Minute).UnixMilli(), held["g"].UnixMilli())

	a := LeaseAnswer{AttemptUID: "x", Running: true, TimeoutAt: now.Add(time.Minute).UTC().Truncate(time.Microsecond)}
	done = p.LoseReply(command("set", b.lists.Lease("x")))
	require.NoError(t, c.WriteLeases(ctx, b.lists, []LeaseAnswer{a}, now))
	lost(t, done)
	got, ok, err := ReadLease(ctx, b.rdb, b.lists, "x")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, a, got)

}

// The incident window's counts go in MULTI/EXEC, which go-redis does not
// send again once it was written: a lost reply is an error, and the
// counts are written once (CountThenRead's callers do not send them
// again).
func TestTallyReplyLost(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	c, p := lossy(t, b)
	key := b.prefix + "bucket"
	tally := Tally{Key: key, Results: 5, Failures: 2, TTL: time.Minute}
	done := p.LoseReply(command("hincrby", key))
	_, _, _, err := c.CountThenRead(ctx, []Tally{tally}, []string{key}, b.prefix+"flag")
	require.Error(t, err)
	lost(t, done)
	results, failures, _, err := c.Counts(ctx, []string{key}, b.prefix+"flag")
	require.NoError(t, err)
	require.Equal(t, []int{5, 2}, []int{results, failures}, "counted once")
}

// Replaying a dead letter sent twice pushes it once and reports that it
// replayed it: the run sent again finds the first one's receipt
// (onceScript). It used to find the entry gone and report false, and the
// dashboard told the operator that the entry was already gone.
func TestReplayDeadReplyLost(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	c, p := lossy(t, b)
	require.NoError(t, b.rdb.RPush(ctx, b.lists.Dead, "entry", "entry").Err())
	require.NoError(t, replayScript.once.Load(ctx, b.rdb).Err()) // so that the EVALSHA lost runs it
	done := p.LoseReply(runOf(replayScript.once))
	ok, err := c.ReplayDead(ctx, b.lists, "entry", "msg")
	require.NoError(t, err)
	lost(t, done)
	require.True(t, ok, "reported replayed")
	requireList(t, b, b.lists.Output, "msg")
	requireList(t, b, b.lists.Dead, "entry")
}

// Discarding a dead letter sent twice removes one entry and reports it
// removed. As a plain LREM it removed a second, identical entry (two
// failures of one attempt with the same text) and reported false.
func TestDiscardDeadReplyLost(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	c, p := lossy(t, b)
	require.NoError(t, b.rdb.RPush(ctx, b.lists.Dead, "entry", "entry").Err())
	require.NoError(t, discardScript.once.Load(ctx, b.rdb).Err()) // so that the EVALSHA lost runs it
	done := p.LoseReply(runOf(discardScript.once))
	ok, err := c.DiscardDead(ctx, b.lists, "entry")
	require.NoError(t, err)
	lost(t, done)
	require.True(t, ok, "reported discarded")
	requireList(t, b, b.lists.Dead, "entry")

	ok, err = c.DiscardDead(ctx, b.lists, "entry")
	require.NoError(t, err)
	require.True(t, ok, "a new call is not the one sent again")
	ok, err = c.DiscardDead(ctx, b.lists, "entry")
	require.NoError(t, err)
	require.False(t, ok)
}

// Resuming a kind sent twice reports that the kind was paused: the run sent
// again finds the first one's receipt. As a plain DEL it reported false,
// and the API, the dashboard and the CLI said the kind was not paused (and
// the ledger did not record the resume).
func TestResumeKindReplyLost(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	c, p := lossy(t, b)
	require.NoError(t, c.PauseKind(ctx, b.lists, PauseInfo{Note: "n"}))
	require.NoError(t, resumeKindScript.once.Load(ctx, b.rdb).Err()) // so that the EVALSHA lost runs it
	done := p.LoseReply(runOf(resumeKindScript.once))
	was, err := c.ResumeKind(ctx, b.lists)
	require.NoError(t, err)
	lost(t, done)
	require.True(t, was, "reported paused")
	require.Zero(t, b.rdb.Exists(ctx, b.lists.KindPause()).Val())
	was, err = c.ResumeKind(ctx, b.lists)
	require.NoError(t, err)
	require.False(t, was)
}

// The gauge lock's pipeline sent again still wins the lock its first run
// took: before, its SET NX failed on the caller's own lock, and no
// instance counted the kind's gauges until the lock expired. The script
// finds the call's own value and answers it.
func TestLockGaugesReplyLost(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	c, p := lossy(t, b)
	done := p.LoseReply(func(a []string) bool {
		return len(a) > 3 && a[0] == "eval" && a[3] == b.lists.GaugeLock()
	})
	won, err := c.LockGauges(ctx, []Lists{b.lists}, 7, "me", time.Minute)
	require.NoError(t, err)
	lost(t, done)
	require.Equal(t, []bool{true}, won)
	won, err = c.LockGauges(ctx, []Lists{b.lists}, 7, "me", time.Minute)
	require.NoError(t, err)
	require.Equal(t, []bool{false}, won, "held by the first call, of the same owner")
}

// The charts' counts written alone (AddStats) go in MULTI/EXEC, which
// go-redis does not send again: a lost reply is an error and the counts
// are written once; as a plain pipeline, sent again, they were counted
// twice.
func TestAddStatsReplyLost(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	c, p := lossy(t, b)
	at := time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)
	minute, _ := statsKeys(b.lists, at)
	done := p.LoseReply(command("hincrby", minute))
	err := c.AddStats(ctx, []StatsAdd{{Lists: b.lists, At: at, Count: StatsCount{Failed: 3}}})
	lost(t, done)
	require.Equal(t, "3", b.rdb.HGet(ctx, minute, statFailed).Val(), "counted once")
	require.Error(t, err)
}
