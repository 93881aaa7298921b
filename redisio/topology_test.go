package redisio

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
)

// TestOnRedisCluster runs every kind of call of the service on a Redis
// Cluster of 3 masters, for 6 kinds with the cluster's default lists: each
// Lua script and transaction stays in its kind's slot (a key in another
// slot fails with CROSSSLOT), and Recover finds another instance's
// processing list on the node that holds it.
func TestOnRedisCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Redis Cluster")
	}
	tp := testenv.RedisCluster(t)
	rdb, err := Open(t.Context(), tp.URL, Options{})
	require.NoError(t, err)
	defer rdb.Close()
	cc := rdb.(*redis.ClusterClient)
	masters := map[string]bool{}
	var all []Lists
	for _, kind := range []string{"k0", "k1", "k2", "k3", "k4", "k5"} {
		l := DefaultListsOn(Cluster, kind)
		all = append(all, l)
		require.NoError(t, l.CheckTag())
		node, err := cc.MasterForKey(t.Context(), l.Input)
		require.NoError(t, err)
		masters[node.Options().Addr] = true
		exerciseKind(t, New(rdb), rdb, l)
	}
	require.Len(t, masters, 3, "the 6 kinds spread over the 3 masters")

	// The gauges of every kind in one pipeline, across the masters.
	c := New(rdb)
	won, err := c.LockGauges(t.Context(), all, 1, "other", time.Minute)
	require.NoError(t, err)
	require.Equal(t, make([]bool, 6), won, "each kind's lock is held already")
	got, err := c.ShareGauges(t.Context(), all, make([][]byte, 6), nil, time.Minute)
	require.NoError(t, err)
	for i := range all {
		require.Equal(t, "{}", string(got[i]), all[i].Input)
	}
	// The charts' read of every kind in one pipeline, across the masters.
	pts, err := c.ReadStats(t.Context(), all, false, 0, 60)
	require.NoError(t, err)
	require.Len(t, pts, 6)
}

// TestOnRedisSentinel runs the same calls through Sentinel, with the
// single-server list names.
func TestOnRedisSentinel(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Redis servers and sentinels")
	}
	tp := testenv.RedisSentinel(t)
	rdb, err := Open(t.Context(), tp.URL, Options{})
	require.NoError(t, err)
	defer rdb.Close()
	exerciseKind(t, New(rdb), rdb, DefaultListsOn(Sentinel, "k"))
}

// exerciseKind makes each call of Client that touches a kind's keys once
// and checks its effect.
func exerciseKind(t *testing.T, c *Client, rdb redis.UniversalClient, l Lists) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	now := time.Now()

	n, err := c.Push(ctx, l.Input, []Job{{UID: "1", AttemptUID: "a1", Kind: "k", TimeoutAt: now.Add(time.Minute)}})
	require.NoError(t, err)
	require.EqualValues(t, 1, n)

	// Another instance died with a result in its processing list and no
	// heartbeat: Recover moves it back first.
	require.NoError(t, rdb.RPush(ctx, l.Processing("gone"), result(0)).Err())
	require.NoError(t, rdb.RPush(ctx, l.Output, result(1), "not json").Err())
	d := c.Drain(l, "me", 0)
	moved, err := d.Recover(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, moved, "the dead instance's result")
	msgs, err := d.Fetch(ctx, 10, 0)
	require.NoError(t, err)
	require.Len(t, msgs, 3)
	require.Equal(t, "0", msgs[0].Result.UID)
	require.Error(t, msgs[2].Err)
	require.NoError(t, rdb.RPush(ctx, l.Output, result(2)).Err())
	next, err := d.Next(ctx, 10)
	require.NoError(t, err)
	require.Len(t, next, 1)
	require.NoError(t, d.Ack(ctx, append(msgs, next...), msgs[2:3]))
	require.NoError(t, d.Heartbeat(ctx))

	total, entries, err := c.DeadLetters(ctx, l, 0, 10)
	require.NoError(t, err)
	require.EqualValues(t, 1, total)
	ok, err := c.ReplayDead(ctx, l, entries[0], "not json")
	require.NoError(t, err)
	require.True(t, ok)
	msgs, err = d.Fetch(ctx, 10, 0)
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	require.NoError(t, d.Ack(ctx, msgs, msgs))
	_, entries, err = c.DeadLetters(ctx, l, 0, 10)
	require.NoError(t, err)
	ok, err = c.DiscardDead(ctx, l, entries[0])
	require.NoError(t, err)
	require.True(t, ok)

	require.NoError(t, c.PauseKind(ctx, l, PauseInfo{Note: "r"}))
	require.NoError(t, c.PauseModels(ctx, l, []string{"m1", "m2"}, PauseInfo{Note: "r"}))
	before, err := c.Unpause(ctx, l, []string{"m1"})
	require.NoError(t, err)
	require.Len(t, before, 1)
	require.NoError(t, c.Hold(ctx, l.Throttle(), "g", now.Add(time.Minute), now))
	st, err := c.ReadDispatchState(ctx, l, true, now)
	require.NoError(t, err)
	require.NotNil(t, st.KindPause)
	require.Equal(t, []string{"m2"}, st.PausedModels)
	require.Contains(t, st.Holds, "g")
	ls, err := c.ReadListState(ctx, l)
	require.NoError(t, err)
	require.EqualValues(t, 1, ls.Input)

	minute := now.Unix() / 60
	res, fails, flagged, err := c.CountThenRead(ctx,
		[]Tally{{Key: l.IncidentBucket(minute), Results: 3, Failures: 1, TTL: time.Minute, FlagTTL: time.Minute,
			Stats: StatsAdd{Lists: l, At: now, Count: StatsCount{Applied: 3, Failed: 1}}}},
		[]string{l.IncidentBucket(minute), l.IncidentBucket(minute - 1)}, l.IncidentWorker())
	require.NoError(t, err)
	require.Equal(t, []any{3, 1, true}, []any{res, fails, flagged})

	won, err := c.LockGauges(ctx, []Lists{l}, 1, "me", time.Minute)
	require.NoError(t, err)
	require.Equal(t, []bool{true}, won)
	_, err = c.ShareGauges(ctx, []Lists{l}, [][]byte{[]byte("{}")}, []StatsSample{{At: now, Backlog: 7, LatenessSeconds: 30, Paused: true}}, time.Minute)
	require.NoError(t, err)
	_, err = c.PushCounting(ctx, l, nil, []Job{{Kind: "k", UID: "u2", AttemptUID: "a2", AttemptNo: 1, TimeoutAt: now}}, now)
	require.NoError(t, err)
	pts, err := c.ReadStats(ctx, []Lists{l}, false, minute, 1)
	require.NoError(t, err)
	require.Equal(t, StatsPoint{StatsCount: StatsCount{Dispatched: 1, Applied: 3, Failed: 1}, Backlog: 7, LatenessSeconds: 30, Paused: true}, pts[0][0])
}
