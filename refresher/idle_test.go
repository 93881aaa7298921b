package refresher

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/models"
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
		if args := cmd.Args(); (name == "evalsha" || name == "eval") && len(args) > 3+7 && fmt.Sprint(args[2]) == "7" {
			name = "fetch" // the fetch script: the only one with 7 keys
		}
		c.n[name]++
		c.mu.Unlock()
		return next(ctx, cmd)
	}
}

// of returns how many name commands were counted since the last take.
func (c *commandCount) of(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[name]
}

func (c *commandCount) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = map[string]int{}
	return n
}

// nextDueCount counts the store's NextDue and NextDueMany calls.
type nextDueCount struct {
	models.Store
	one, many atomic.Int32
}

func (s *nextDueCount) NextDue(ctx context.Context, t models.Table) (time.Time, bool, error) {
	s.one.Add(1)
	return s.Store.NextDue(ctx, t)
}

func (s *nextDueCount) NextDueMany(ctx context.Context, ts []models.Table) ([]models.Next, error) {
	s.many.Add(1)
	return s.Store.NextDueMany(ctx, ts)
}

// An idle kind (nothing due, no results) costs few round trips. Its
// dispatcher parks at the due watch, which asks the database for every idle
// kind in one NextDueMany per MaxSleep: the dispatcher asks no NextDue of its
// own, reads no input list length, and reads neither the pauses nor the
// throttle holds (they only matter for rows it claims). Its poller blocks
// for idleFetchBlock, not FetchBlock, between fetch scripts.
func TestIdleKindRoundTrips(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	opt, err := redis.ParseURL(testenv.RedisURL())
	require.NoError(t, err)
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	count := &commandCount{n: map[string]int{}}
	rdb.AddHook(count)
	store := &nextDueCount{Store: b.store}
	// Heartbeat 9s: an idle fetch blocks 3s instead of FetchBlock's 1s.
	b.runOn(context.Background(), store, redisio.New(rdb), func(c *Config) {
		c.Heartbeat, c.FetchBlock = 9*time.Second, time.Second
	})
	b.passes.wait(t, 5) // started, and idle
	// The poller is idle from its second fetch on: the first, at start,
	// blocks for FetchBlock.
	testenv.Eventually(t, 10*time.Second, "the poller's second fetch", func() bool { return count.of("fetch") >= 2 })
	count.take()
	one, many := store.one.Load(), store.many.Load()
	b.passes.wait(t, 20) // at least 20 idle passes (the watch's looks), every MaxSleep (20ms)
	// The window over which the commands are counted: the sleep is the
	// measure, not a wait. Its 1s blocking steps (redisio's) cannot be
	// shortened by the config.
	time.Sleep(5500 * time.Millisecond)
	n := count.take()
	one, many = store.one.Load()-one, store.many.Load()-many
	t.Logf("commands of an idle kind in 20 passes and 6s: %v; NextDue %d, NextDueMany %d", n, one, many)
	require.Zero(t, one, "an idle dispatcher asks NextDue itself")
	require.GreaterOrEqual(t, many, int32(20), "the due watch looks for the idle kind every MaxSleep")
	require.Zero(t, n["llen"], "an idle dispatcher reads the input list's length")
	require.Zero(t, n["hkeys"]+n["zrangebyscore"], "an idle dispatcher reads the paused models or the throttle holds")
	// About 6 blocking steps of 1s, and a fetch script every 3s, not
	// every second.
	require.LessOrEqual(t, n["fetch"], 3, "fetch scripts while idle")
	require.LessOrEqual(t, n["blmove"], 8, "blocking waits while idle")
}

// A parked dispatcher (its kind idle) still finds what becomes due without
// a signal to the service, at the due watch's next look: a row the
// application inserts due with its own SQL, and a planned row whose time
// comes. At most two looks (one may have read the table just before) pass
// before the pass that starts it.
func TestParkedDispatcherWakes(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{timeout: time.Hour})
	store := &nextDueCount{Store: b.store}
	var log passLog
	b.runOn(context.Background(), store, b.rio, func(c *Config) {
		c.Observer.AfterDispatch = log.hook
	})
	parked := func() {
		t.Helper()
		b.passes.wait(t, 3)
		one := store.one.Load()
		b.passes.wait(t, 3)
		require.Equal(t, one, store.one.Load(), "the dispatcher is parked: it asks no NextDue itself")
	}
	startedAny := func(n int) bool { return n > 0 }
	startedAfter := func(from int) {
		t.Helper()
		job := b.popJob()
		var started []int
		testenv.Eventually(t, 10*time.Second, "the pass that started "+job.UID+" ends", func() bool {
			_, started = log.since(from)
			return slices.ContainsFunc(started, startedAny)
		})
		looks := slices.IndexFunc(started, startedAny)
		require.LessOrEqual(t, looks, 2, "looks before the pass that started the row: %v", started)
	}

	parked()
	from := log.len()
	b.insert("app-set") // due at t0, the clock's now
	startedAfter(from)

	_, err := b.db.Exec("INSERT INTO items (uid, input_url, refresh_at) VALUES (?, ?, ?)", "planned", "https://example.com/", t0.Add(time.Hour))
	require.NoError(t, err)
	parked()
	from = log.len()
	b.cfg.Clock.(*testClock).Advance(time.Hour) // app-set's attempt times out too
	startedAfter(from)
}
