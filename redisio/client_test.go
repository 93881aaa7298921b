package redisio

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
)

// counter is a go-redis hook that counts round trips (a pipeline is one) and
// records command names.
type counter struct {
	trips atomic.Int64
	mu    sync.Mutex
	names []string
}

func (c *counter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.trips.Add(1)
		c.mu.Lock()
		c.names = append(c.names, cmd.Name())
		c.mu.Unlock()
		return next(ctx, cmd)
	}
}

func (c *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.trips.Add(1)
		return next(ctx, cmds)
	}
}

type bundle struct {
	rdb    *redis.Client
	client *Client
	lists  Lists
	prefix string
}

func setup(t *testing.T) *bundle {
	t.Helper()
	rdb, prefix := testenv.Redis(t)
	c, err := NewWithConfig(rdb, Config{Now: func() time.Time { return time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC) }})
	require.NoError(t, err)
	return &bundle{rdb: rdb, client: c, lists: DefaultLists(prefix + "k"), prefix: prefix}
}

func jobs(n int) []Job {
	out := make([]Job, n)
	for i := range out {
		out[i] = Job{Kind: "k", UID: strconv.Itoa(i), AttemptUID: "a" + strconv.Itoa(i), AttemptNo: 1,
			TimeoutAt: time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC), Payload: map[string]any{"input_url": "https://example.com/" + strconv.Itoa(i)}}
	}
	return out
}

func TestDefaultLists(t *testing.T) {
	t.Parallel()
	l := DefaultLists("big_tables")
	require.Equal(t, Lists{Input: "big_tables-input", Output: "big_tables-output", Dead: "big_tables-dead"}, l)
	require.Equal(t, "big_tables-output:processing:host-1", l.Processing("host-1"))
	require.Equal(t, "big_tables-output:heartbeat:host-1", l.Heartbeat("host-1"))
	require.Equal(t, `a\*b\?\[c\]\\-output:processing:*`, DefaultLists(`a*b?[c]\`).processingPattern())
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	_, err := NewWithConfig(nil, Config{})
	require.EqualError(t, err, "redisio.New: nil Redis client (pass one from redisio.Open)")
	_, err = NewWithConfig(redis.NewClient(&redis.Options{}), Config{MaxResultBytes: -1})
	require.EqualError(t, err, "redisio.New: MaxResultBytes is -1, want 0 (default 65536) or more")

	func() {
		defer func() {
			require.Equal(t, "redisio.New: nil Redis client (pass one from redisio.Open)", fmt.Sprint(recover()))
		}()
		New(nil)
	}()

	t.Run("Defaults", func(t *testing.T) {
		c := Config{}.WithDefaults()
		require.Equal(t, DefaultMaxResultBytes, c.MaxResultBytes)
		require.True(t, c.Now != nil)
	})
}

func TestPushIsFIFOInOneRoundTrip(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	hook := &counter{}
	b.rdb.AddHook(hook)

	js := jobs(1000)
	queued, err := b.client.Push(ctx, b.lists.Input, js)
	require.NoError(t, err)
	require.Equal(t, int64(1000), queued, "list length after the push")
	require.Equal(t, int64(1), hook.trips.Load(), "pushing 1000 jobs")
	require.Equal(t, []string{"rpush"}, hook.names)

	n, err := b.client.Len(ctx, b.lists.Input)
	require.NoError(t, err)
	require.Equal(t, int64(1000), n)

	// A worker pops from the left and sees the jobs in push order, exactly
	// as AppendJob writes them.
	popped, err := b.rdb.LPopCount(ctx, b.lists.Input, 1000).Result()
	require.NoError(t, err)
	for i, raw := range popped {
		want, err := encodeJob(js[i])
		require.NoError(t, err)
		require.Equal(t, string(want), raw)
	}

	// Nothing to push: no command.
	queued, err = b.client.Push(ctx, b.lists.Input, nil)
	require.NoError(t, err)
	require.Zero(t, queued)
	require.Equal(t, int64(3), hook.trips.Load()) // RPUSH, LLEN, LPOP above

	// A job that cannot be encoded: nothing is pushed.
	bad := jobs(3)
	bad[2].AttemptUID = ""
	_, err = b.client.Push(ctx, b.lists.Input, bad)
	require.EqualError(t, err,
		`push 3 jobs to "`+b.lists.Input+`": encode k job 2: attempt_uid is empty`)
	n, err = b.client.Len(ctx, b.lists.Input)
	require.NoError(t, err)
	require.Equal(t, int64(0), n)
}

// A Redis that is not there gives wrapped errors, quickly, from every call,
// with go-redis's default options.
func TestRedisUnreachable(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = rdb.Close() })
	c := New(rdb)
	lists := DefaultLists("unreachable")
	ctx := t.Context()
	// A drain per call: the calls run at once, and a Drain is one poller's.
	drain := func() *Drain { return c.Drain(lists, "A", 0) }

	for name, call := range map[string]func() error{
		"Push":      func() error { _, err := c.Push(ctx, lists.Input, jobs(3)); return err },
		"Len":       func() error { _, err := c.Len(ctx, lists.Input); return err },
		"Fetch":     func() error { _, err := drain().Fetch(ctx, 10, 5*time.Second); return err },
		"Heartbeat": func() error { return drain().Heartbeat(ctx) },
		"Recover":   func() error { _, err := drain().Recover(ctx); return err },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			err := call()
			took := time.Since(start)
			require.Error(t, err)
			require.ErrorContains(t, err, "connection refused")
			require.ErrorContains(t, err, "unreachable-") // names the list
			// go-redis's own retries (5 dials 100 ms apart, MaxRetries 3)
			// take about 1.7 s; redisio adds none.
			require.True(t, took < 3*time.Second, "took %s", took)
		})
	}
}

// Redis goes away during a push and between fetch and ack: the push fails
// without queuing anything, the ack fails, and once Redis is back the batch
// is fetched again and nothing is lost.
func TestRedisGoesAwayAndComesBack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	opt, err := redis.ParseURL(testenv.RedisURL())
	require.NoError(t, err)
	p := testenv.NewProxy(t, opt.Addr)
	opt.Addr = p.Addr
	opt.MaxRetries = -1
	viaProxy := redis.NewClient(opt)
	t.Cleanup(func() { _ = viaProxy.Close() })
	c := New(viaProxy)
	d := c.Drain(b.lists, "A", 0)

	pushResults(t, b, 3)
	msgs, err := d.Fetch(ctx, 10, 0)
	require.NoError(t, err)
	require.Len(t, msgs, 3)

	p.Cut()
	_, err = c.Push(ctx, b.lists.Input, jobs(5))
	require.ErrorContains(t, err, `push 5 messages to "`+b.lists.Input+`": `)
	err = d.Ack(ctx, msgs, nil)
	require.ErrorContains(t, err, `ack 3 results of "`+b.lists.Output+`" (0 dead): `)
	_, err = d.Fetch(ctx, 10, time.Second)
	require.ErrorContains(t, err, `fetch up to 10 results from "`+b.lists.Output+`": `)
	require.Equal(t, int64(0), b.rdb.LLen(ctx, b.lists.Input).Val()) // the push queued nothing

	p.Restore()
	again, err := d.Fetch(ctx, 10, 0)
	require.NoError(t, err)
	require.Equal(t, uidsOf(msgs), uidsOf(again))
	require.NoError(t, d.Ack(ctx, again, nil))
	requireList(t, b, b.lists.Processing("A"))
	requireList(t, b, b.lists.Output)
	_, err = c.Push(ctx, b.lists.Input, jobs(5))
	require.NoError(t, err)
	require.Equal(t, int64(5), b.rdb.LLen(ctx, b.lists.Input).Val())
}

func BenchmarkPush1000Jobs(b *testing.B) {
	rdb, prefix := testenv.Redis(b)
	c := New(rdb)
	js := jobs(1000)
	list := prefix + "bench-input"
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Push(ctx, list, js); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		rdb.Del(ctx, list)
		b.StartTimer()
	}
}
