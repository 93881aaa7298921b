package worker

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/redisio"
)

// A pop of more jobs whose every reply is lost (go-redis gives up after
// its MaxRetries) is sent again with the same receipt until a reply comes:
// it returns the jobs its first run kept, and the next pop takes the rest.
// Before, the next pop deleted that receipt as the previous pop's, and its
// jobs were in no list and in no worker's hands.
func TestPopMoreAllRepliesLostKeepsItsJobs(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	input := prefix + "in"
	for i := range 6 {
		pushJobTo(t, rdb, input, strconv.Itoa(i), "https://example.com/", time.Now().Add(time.Hour))
	}
	require.NoError(t, popScript.Load(t.Context(), rdb).Err()) // so that EVALSHA runs it
	p, u := testenv.RedisProxy(t)
	lossy, err := redisio.Open(t.Context(), u, redisio.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = lossy.Close() })
	w, err := New(Config{Kind: "k", Redis: lossy, Input: input, Output: prefix + "out", Logger: quietLogger()})
	require.NoError(t, err)

	// Every try go-redis makes of the first pop of more loses its reply (1
	// + MaxRetries 3).
	var done []<-chan struct{}
	for range 4 {
		done = append(done, p.LoseReply(func(a []string) bool {
			return len(a) > 1 && a[0] == "evalsha" && a[1] == popScript.Hash()
		}))
	}
	got := map[string]bool{}
	for range 2 {
		msgs, err := w.pop(t.Context(), 3)
		require.NoError(t, err)
		require.Len(t, msgs, 3)
		for _, m := range msgs {
			got[uidOf(t, m)] = true
		}
	}
	for _, d := range done {
		<-d
	}
	require.Equal(t, map[string]bool{"0": true, "1": true, "2": true, "3": true, "4": true, "5": true}, got)
	require.Zero(t, rdb.LLen(t.Context(), input).Val())
}

func uidOf(t *testing.T, msg string) string {
	t.Helper()
	var j redisio.Job
	require.NoError(t, json.Unmarshal([]byte(msg), &j))
	return j.UID
}

// The pop script on a Redis Cluster, lanes included, returns every job and
// no error: its receipts keep their list's hash tag (with a receipt out of
// the list's slot, a CROSSSLOT error, this fails).
func TestPopScriptOnCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Redis Cluster")
	}
	tp := testenv.RedisCluster(t)
	rdb, err := redisio.Open(t.Context(), tp.URL, redisio.Options{})
	require.NoError(t, err)
	defer rdb.Close()
	input := "{k}-input"
	lane := input + ":p0"
	for i := range 7 {
		list := input
		if i < 3 {
			list = lane
		}
		require.NoError(t, rdb.RPush(t.Context(), list, `{"uid":"`+strconv.Itoa(i)+`"}`).Err())
	}
	w, err := New(Config{Kind: "k", Redis: rdb, Input: input, PriorityInputs: []string{lane}, Output: "{k}-output", Logger: quietLogger()})
	require.NoError(t, err)
	var all []string
	for range 3 {
		msgs, err := w.pop(t.Context(), 3)
		require.NoError(t, err)
		all = append(all, msgs...)
	}
	require.Len(t, all, 7)
}

// A worker whose Redis user may BLPOP, LPOP and RPUSH but not run scripts
// (an ACL written for an earlier worker, or a server without Lua) takes its
// free slots' jobs with LPOP, as the worker did before the pop script:
// before this fallback, every pop of more failed (NOPERM) and Run backed
// off 1 s, 2 s, 4 s ... 30 s after each BLPOP, one job per pop.
func TestWorkerWithoutScripts(t *testing.T) {
	t.Parallel()
	srv, _ := testServer(t)
	tp := testenv.RedisAlone(t)
	ctx := t.Context()
	addr := tp.Servers[0].Addr
	admin := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = admin.Close() })
	require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "worker", "on", ">pw-acl-test", "~*", "+@all", "-eval", "-evalsha").Err())
	rdb := redis.NewClient(&redis.Options{Addr: addr, Username: "worker", Password: "pw-acl-test"})
	t.Cleanup(func() { _ = rdb.Close() })
	for i := range 8 {
		pushJobTo(t, admin, "in", strconv.Itoa(i), srv.URL+"/ok", time.Now().Add(time.Hour))
	}
	w, err := New(Config{Kind: "k", Redis: rdb, Input: "in", Output: "out", Concurrency: 4,
		AllowPrivateNetworks: true, Logger: quietLogger()})
	require.NoError(t, err)
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(rctx) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && admin.LLen(ctx, "out").Val() < 8 {
		time.Sleep(50 * time.Millisecond)
	}
	require.Equal(t, int64(8), admin.LLen(ctx, "out").Val(), "results within 5 s of 8 queued jobs")
}
