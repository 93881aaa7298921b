package refresher

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/redisio"
)

// commandCount counts the Redis commands a client sends, by name.
type commandCount struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *commandCount) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *commandCount) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.mu.Lock()
		for _, cmd := range cmds {
			c.n[strings.ToLower(cmd.Name())]++
		}
		c.mu.Unlock()
		return next(ctx, cmds)
	}
}

func (c *commandCount) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.mu.Lock()
		name := strings.ToLower(cmd.Name())
		if name == "evalsha" && len(cmd.Args()) == 15 {
			name = "fetch" // the fetch script: 4 keys and 8 arguments
		}
		c.n[name]++
		c.mu.Unlock()
		return next(ctx, cmd)
	}
}

func (c *commandCount) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = map[string]int{}
	return n
}

// An idle kind (nothing due, no results) costs few round trips: its
// dispatcher's passes ask the database's NextDue and do not read the input
// list's length, and its poller blocks for idleFetchBlock, not FetchBlock,
// between fetch scripts. Nor does it read the pauses or the throttle holds:
// they only matter for rows it claims.
func TestIdleKindRoundTrips(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	opt, err := redis.ParseURL(testenv.RedisURL())
	require.NoError(t, err)
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	count := &commandCount{n: map[string]int{}}
	rdb.AddHook(count)
	// Heartbeat 9s: an idle fetch blocks 3s instead of FetchBlock's 1s.
	b.runOn(context.Background(), b.store, redisio.New(rdb), func(c *Config) {
		c.Heartbeat, c.FetchBlock = 9*time.Second, time.Second
	})
	b.passes.wait(t, 5) // started, and idle
	time.Sleep(1500 * time.Millisecond)
	count.take()
	b.passes.wait(t, 20) // at least 20 idle passes, every MaxSleep (20ms)
	time.Sleep(5500 * time.Millisecond)
	n := count.take()
	t.Logf("commands of an idle kind in 20 passes and 6s: %v", n)
	require.Zero(t, n["llen"], "an idle dispatcher reads the input list's length")
	require.Zero(t, n["hkeys"]+n["zrangebyscore"], "an idle dispatcher reads the paused models or the throttle holds")
	// About 6 blocking steps of 1s, and a fetch script every 3s, not
	// every second.
	require.LessOrEqual(t, n["fetch"], 3, "fetch scripts while idle")
	require.LessOrEqual(t, n["blmove"], 8, "blocking waits while idle")
}
