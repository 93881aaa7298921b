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

// Holds: the later end wins, ended holds are not returned, and the key
// expires by itself after its last hold (a TTL relative to the caller's
// clock, whatever Redis's own clock says).
func TestHoldAndHeld(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	c := New(rdb)
	ctx := context.Background()
	key := prefix + "items-input:throttle"
	now := time.Date(2020, 1, 1, 10, 0, 0, 0, time.UTC) // long past: the TTL must not use it as an instant

	require.NoError(t, c.Hold(ctx, key, "api-a", now.Add(10*time.Minute), now))
	require.NoError(t, c.Hold(ctx, key, "api-a", now.Add(5*time.Minute), now)) // earlier: ignored
	require.NoError(t, c.Hold(ctx, key, "api-b", now.Add(time.Minute), now))
	require.NoError(t, c.Hold(ctx, key, "api-c", now, now)) // already over: nothing written

	held, err := c.Held(ctx, key, now)
	require.NoError(t, err)
	require.Equal(t, map[string]time.Time{"api-a": now.Add(10 * time.Minute), "api-b": now.Add(time.Minute)}, held)
	ttl := rdb.PTTL(ctx, key).Val()
	require.True(t, ttl > 10*time.Minute && ttl <= 10*time.Minute+time.Second, "ttl %s", ttl)

	held, err = c.Held(ctx, key, now.Add(time.Minute)) // api-b's hold ends at that instant
	require.NoError(t, err)
	require.Equal(t, map[string]time.Time{"api-a": now.Add(10 * time.Minute)}, held)

	held, err = c.Held(ctx, prefix+"absent", now)
	require.NoError(t, err)
	require.Empty(t, held)
}

func TestCountsAndFlag(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	c := New(rdb)
	ctx := context.Background()
	b1, b2 := prefix+"incident:1", prefix+"incident:2"
	require.NoError(t, c.Add(ctx, []Tally{{Key: b1, Results: 10, Failures: 8, TTL: time.Minute}}, ""))
	require.NoError(t, c.Add(ctx, []Tally{{Key: b1, Results: 5, Failures: 5, TTL: time.Minute}}, ""))
	require.NoError(t, c.Add(ctx, []Tally{{Key: b2, Results: 3, TTL: time.Minute}}, ""))
	r, f, w, err := c.Counts(ctx, []string{b1, b2, prefix + "incident:3"}, prefix+"incident:worker")
	require.NoError(t, err)
	require.Equal(t, []any{18, 13, false}, []any{r, f, w})
	ttl := rdb.PTTL(ctx, b1).Val()
	require.True(t, ttl > 0 && ttl <= time.Minute, "ttl %s", ttl)

	require.NoError(t, c.Add(ctx, []Tally{{FlagTTL: time.Minute}}, prefix+"incident:worker"))
	_, _, w, err = c.Counts(ctx, nil, prefix+"incident:worker")
	require.NoError(t, err)
	require.True(t, w)
}

// CountThenRead writes its tallies before it reads, in one call: the read
// sees them.
func TestCountThenRead(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	c := New(rdb)
	ctx := context.Background()
	b1, b2, flag := prefix+"incident:1", prefix+"incident:2", prefix+"incident:worker"
	require.NoError(t, c.Add(ctx, []Tally{{Key: b1, Results: 10, Failures: 8, TTL: time.Minute}}, ""))
	r, f, w, err := c.CountThenRead(ctx, []Tally{
		{Key: b1, Results: 5, Failures: 1, TTL: time.Minute},
		{Key: b2, Results: 3, Failures: 3, TTL: 2 * time.Minute, FlagTTL: time.Minute},
	}, []string{b1, b2}, flag)
	require.NoError(t, err)
	require.Equal(t, []any{18, 12, true}, []any{r, f, w})
	ttl := rdb.PTTL(ctx, b2).Val()
	require.True(t, ttl > time.Minute && ttl <= 2*time.Minute, "ttl %s", ttl)
	ttl = rdb.PTTL(ctx, flag).Val()
	require.True(t, ttl > 0 && ttl <= time.Minute, "flag ttl %s", ttl)

	// A flag alone writes no counts.
	_, _, _, err = c.CountThenRead(ctx, []Tally{{Key: prefix + "incident:3", FlagTTL: time.Minute}}, nil, flag)
	require.NoError(t, err)
	require.Zero(t, rdb.Exists(ctx, prefix+"incident:3").Val())
}

// scriptRuns counts the scripts a client runs (EVALSHA, and EVAL after a
// NOSCRIPT), one round trip each.
type scriptRuns struct{ n atomic.Int64 }

func (*scriptRuns) DialHook(next redis.DialHook) redis.DialHook { return next }

func (s *scriptRuns) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "evalsha" || cmd.Name() == "eval" {
			s.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (*scriptRuns) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// Holds writes every group of a batch in one script run: the later end of
// each group wins, ended holds are left out, and the set lives until its
// latest hold ends.
func TestHoldsInOneRoundTrip(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	c := New(rdb)
	ctx := context.Background()
	key := prefix + "items-input:throttle"
	now := time.Date(2020, 1, 1, 10, 0, 0, 0, time.UTC)
	require.NoError(t, c.Hold(ctx, key, "api-a", now.Add(10*time.Minute), now)) // loads the script
	runs := &scriptRuns{}
	rdb.AddHook(runs)

	require.NoError(t, c.Holds(ctx, key, map[string]time.Time{
		"api-a": now.Add(5 * time.Minute), // earlier than its hold: ignored
		"api-b": now.Add(time.Minute),
		"api-c": now.Add(20 * time.Minute),
		"api-d": now, // already over: not written
	}, now))
	require.Equal(t, int64(1), runs.n.Load(), "script runs for 4 groups")
	held, err := c.Held(ctx, key, now)
	require.NoError(t, err)
	require.Equal(t, map[string]time.Time{"api-a": now.Add(10 * time.Minute), "api-b": now.Add(time.Minute), "api-c": now.Add(20 * time.Minute)}, held)
	ttl := rdb.PTTL(ctx, key).Val()
	require.True(t, ttl > 20*time.Minute && ttl <= 20*time.Minute+time.Second, "ttl %s", ttl)

	require.NoError(t, c.Holds(ctx, key, map[string]time.Time{"api-e": now}, now))
	require.Equal(t, int64(1), runs.n.Load(), "nothing to hold: no round trip")
}
