package redisio

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
)

// A native move's batch is read back from the master even when the
// cluster URL sends reads to replicas (read_only): a replica that lags
// still holds the previous batch, which Fetch would return as the new one
// while Ack trimmed the new one: lost results.
func TestNativeMoveReadsTheMasterNotAReplica(t *testing.T) {
	t.Parallel()
	tp := testenv.RedisCluster(t)
	ctx := t.Context()
	l := DefaultListsOn(Cluster, "k0")
	rdb, err := Open(ctx, tp.URL+"?read_only=true", Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rdb.Close() })
	master, err := rdb.(*redis.ClusterClient).MasterForKey(ctx, l.Output)
	require.NoError(t, err)
	mAddr := master.Options().Addr
	replica := tp.ReplicaOf(t, tp.Server(mAddr))
	mc := redis.NewClient(&redis.Options{Addr: mAddr})
	t.Cleanup(func() { _ = mc.Close() })
	rc := redis.NewClient(&redis.Options{Addr: replica.Addr})
	t.Cleanup(func() { _ = rc.Close() })
	// Until the client's slot map lists the replica, it reads the master.
	cc := rdb.(*redis.ClusterClient)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		cc.ReloadState(ctx)
		if n, err := cc.SlaveForKey(ctx, l.Output); err == nil && n.Options().Addr == replica.Addr {
			break
		}
		require.True(t, time.Now().Before(deadline), "the cluster client never routed reads to the replica")
	}

	const n = minFastMove
	all := make([]any, 3*n)
	for i := range all {
		all[i] = result(i)
	}
	require.NoError(t, rdb.RPush(ctx, l.Output, all...).Err())
	d := New(rdb).Drain(l, "A", 0)
	var first []Message
	for try := 0; try < 20 && len(first) == 0; try++ {
		first, err = d.Fetch(ctx, n, 0)
	}
	require.NoError(t, err)
	require.Equal(t, seq(0, n), uidsOf(first))
	require.NoError(t, mc.Do(ctx, "WAIT", 1, 2000).Err())
	// The replica stops applying writes but still answers reads.
	require.NoError(t, rc.Do(ctx, "CLIENT", "PAUSE", 3000, "WRITE").Err())
	t.Cleanup(func() { rc.Do(ctx, "CLIENT", "UNPAUSE") })
	require.NoError(t, d.Ack(ctx, first, nil))
	second, err := d.Fetch(ctx, n, 0)
	require.NoError(t, err)
	require.Equal(t, seq(n, 2*n), uidsOf(second), "the batch was read from a lagging replica")
	require.NoError(t, d.Ack(ctx, second, nil))
	require.NoError(t, rc.Do(ctx, "CLIENT", "UNPAUSE").Err())
	require.Equal(t, results(2*n, 3*n), mc.LRange(ctx, l.Output, 0, -1).Val())
}

// aclDrain returns a Drain of lists "k" whose Redis user may not run the
// commands deny names (e.g. "-copy"), on a Redis of its own, and a client
// with every right to look at the lists.
func aclDrain(t *testing.T, cfg Config, deny ...string) (*Drain, *redis.Client, Lists) {
	t.Helper()
	tp := testenv.RedisAlone(t)
	ctx := t.Context()
	addr := tp.Servers[0].Addr
	admin := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = admin.Close() })
	args := []any{"ACL", "SETUSER", "svc", "on", ">pw-acl-test", "~*", "+@all"}
	for _, d := range deny {
		args = append(args, d)
	}
	require.NoError(t, admin.Do(ctx, args...).Err())
	rdb := redis.NewClient(&redis.Options{Addr: addr, Username: "svc", Password: "pw-acl-test"})
	t.Cleanup(func() { _ = rdb.Close() })
	c, err := NewWithConfig(rdb, cfg)
	require.NoError(t, err)
	l := DefaultLists("k")
	return c.Drain(l, "A", 0), admin, l
}

// A Redis whose ACL denies COPY (or MEMORY, which the size proof needs):
// the fetch falls back to the Lua move and leaves each result in one list
// (a script's writes are not undone when it stops on an error, so a copy
// left behind would be applied twice).
func TestNativeMoveRefusedFallsBackToLua(t *testing.T) {
	t.Parallel()
	// Thirty batches: the move is a SORT, and the proof copies slices
	// (COPY); three: the move is a COPY, then PERSIST.
	for _, c := range []struct {
		deny  string
		total int
	}{{"-copy", 30 * minFastMove}, {"-memory", 30 * minFastMove}, {"-persist", 3 * minFastMove}} {
		deny, total := c.deny, c.total
		t.Run(deny, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			// A size limit under the batch's weight: the proof copies
			// slices (COPY, MEMORY USAGE).
			d, admin, l := aclDrain(t, Config{MaxResultBytes: 2000}, deny)
			vals := make([]any, total)
			for i := range vals {
				vals[i] = result(i)
			}
			require.NoError(t, admin.RPush(ctx, l.Output, vals...).Err())
			msgs, err := d.Fetch(ctx, minFastMove, 0)
			require.NoError(t, err)
			require.Equal(t, seq(0, minFastMove), uidsOf(msgs))
			in := admin.LLen(ctx, l.Output).Val() + admin.LLen(ctx, l.Processing("A")).Val() + admin.LLen(ctx, l.Ahead("A")).Val()
			require.EqualValues(t, total, in, "results in the lists")
			require.Zero(t, admin.Exists(ctx, l.scratchKey("A")).Val())
			require.NoError(t, d.Ack(ctx, msgs, nil))
			require.EqualValues(t, total-minFastMove, admin.LLen(ctx, l.Output).Val()+admin.LLen(ctx, l.Processing("A")).Val())
		})
	}
}

// A Redis whose ACL denies MEMORY still drains: the Lua move reads the
// output list one message at a time.
func TestDrainWithoutMemoryCommand(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	d, admin, l := aclDrain(t, Config{}, "-memory")
	require.NoError(t, admin.RPush(ctx, l.Output, result(1), result(2)).Err())
	msgs, err := d.Fetch(ctx, 10, 0)
	require.NoError(t, err)
	require.Equal(t, []string{"1", "2"}, uidsOf(msgs))
}

// An output list of thirty batches is moved with SORT ... STORE
// (not COPY), in order, to the processing and the ahead list; a batch over
// the size limit is weighed in slices and leaves no scratch key.
func TestNativeMoveBySort(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	log := &cmdLog{}
	b.rdb.AddHook(log)
	pushResults(t, b, 30*minFastMove)
	d := b.client.Drain(b.lists, "A", 0)
	msgs, err := d.Fetch(ctx, minFastMove, 0)
	require.NoError(t, err)
	require.Equal(t, seq(0, minFastMove), uidsOf(msgs))
	require.Contains(t, log.names, "lrange")
	next, err := d.Next(ctx, minFastMove)
	require.NoError(t, err)
	require.Equal(t, seq(minFastMove, 2*minFastMove), uidsOf(next))
	requireList(t, b, b.lists.Ahead("A"), results(minFastMove, 2*minFastMove)...)
	require.NoError(t, d.Ack(ctx, append(msgs, next...), nil))

	c, err := NewWithConfig(b.rdb, Config{MaxResultBytes: 2000})
	require.NoError(t, err)
	d2 := c.Drain(b.lists, "B", 0)
	log.names = nil
	msgs, err = d2.Fetch(ctx, minFastMove, 0)
	require.NoError(t, err)
	require.Equal(t, seq(2*minFastMove, 3*minFastMove), uidsOf(msgs))
	require.Contains(t, log.names, "lrange", "the heavy batch was not moved natively")
	require.Zero(t, b.rdb.Exists(ctx, b.lists.scratchKey("B")).Val())
}

// A CONFIG GET answered BUSY (another client's long script) does not turn
// the native move off for the Client's life: the next fetch asks again.
func TestFastMoveAsksAgainAfterBusy(t *testing.T) {
	t.Parallel()
	tp := testenv.RedisAlone(t)
	ctx := t.Context()
	addr := tp.Servers[0].Addr
	admin := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = admin.Close() })
	require.NoError(t, admin.ConfigSet(ctx, "busy-reply-threshold", "100").Err())
	done := make(chan struct{})
	go func() {
		defer close(done)
		busy := redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: 10 * time.Second})
		defer busy.Close()
		busy.Eval(ctx, `local t = redis.call('TIME')
while true do
  local n = redis.call('TIME')
  if (n[1] - t[1]) * 1000000 + (n[2] - t[2]) > 1500000 then break end
end
return 1`, nil)
	}()
	time.Sleep(500 * time.Millisecond)
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	c := New(rdb)
	_, err := c.fastMoveMin(ctx)
	require.NoError(t, err, "a BUSY reply is not an error of the fetch")
	<-done
	require.Equal(t, fastMoveUnknown, c.fastMove.Load(), "BUSY was kept as the answer")
	least, err := c.fastMoveMin(ctx)
	require.NoError(t, err)
	require.Equal(t, minFastMove, least)
}

// errorReply is an error reply of Redis (go-redis's redis.Error).
type errorReply string

func (e errorReply) Error() string { return string(e) }
func (errorReply) RedisError()     {}

// refuseConfig answers every CONFIG command with msg, as a managed Redis or
// a proxy whose own wording is neither NOPERM nor "unknown command", and
// counts them.
type refuseConfig struct {
	msg   string
	calls atomic.Int64
}

func (*refuseConfig) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *refuseConfig) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "config" {
			h.calls.Add(1)
			cmd.SetErr(errorReply(h.msg))
			return cmd.Err()
		}
		return next(ctx, cmd)
	}
}
func (*refuseConfig) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A Redis that refuses CONFIG GET in words of its own (neither NOPERM nor
// "unknown command") gets the Lua move for the Client's life: asked once,
// not at every fetch (one more round trip per batch).
func TestConfigRefusedInOtherWordsAskedOnce(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	c := redis.NewClient(&redis.Options{Addr: rdb.Options().Addr, DB: rdb.Options().DB})
	t.Cleanup(func() { _ = c.Close() })
	h := &refuseConfig{msg: "ERR command 'CONFIG' is not allowed"}
	c.AddHook(h)
	client := New(c)
	d := client.Drain(DefaultLists(prefix+"k"), "A", 0)
	for range 3 {
		_, err := d.Fetch(t.Context(), 10, 0)
		require.NoError(t, err)
	}
	require.Equal(t, int64(1), h.calls.Load(), "CONFIG GET asked at every fetch")
}

// A Redis at maxclients refuses the connection of the CONFIG GET probe;
// go-redis reports that as a network error, not an error reply, so
// fastMoveMin does not keep the Lua move for the Client's life, and asks
// again once Redis accepts connections.
func TestFastMoveAsksAgainAfterMaxClients(t *testing.T) {
	t.Parallel()
	tp := testenv.RedisAlone(t)
	ctx := t.Context()
	addr := tp.Servers[0].Addr
	admin := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1})
	t.Cleanup(func() { _ = admin.Close() })
	require.NoError(t, admin.ConfigSet(ctx, "maxclients", "1").Err())
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	c := New(rdb)
	_, err := c.fastMoveMin(ctx)
	require.Error(t, err, "the refused connection")
	require.Equal(t, fastMoveUnknown, c.fastMove.Load(), "a passing maxclients refusal was kept")
	require.NoError(t, admin.ConfigSet(ctx, "maxclients", "1000").Err())
	least, err := c.fastMoveMin(ctx)
	require.NoError(t, err)
	require.Equal(t, minFastMove, least)
}
