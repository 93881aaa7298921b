package redisio

import (
	"context"
	"testing"
	"time"

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
	require.NoError(t, c.Count(ctx, b1, 10, 8, time.Minute))
	require.NoError(t, c.Count(ctx, b1, 5, 5, time.Minute))
	require.NoError(t, c.Count(ctx, b2, 3, 0, time.Minute))
	r, f, w, err := c.Counts(ctx, []string{b1, b2, prefix + "incident:3"}, prefix+"incident:worker")
	require.NoError(t, err)
	require.Equal(t, []any{18, 13, false}, []any{r, f, w})
	ttl := rdb.PTTL(ctx, b1).Val()
	require.True(t, ttl > 0 && ttl <= time.Minute, "ttl %s", ttl)

	require.NoError(t, c.Flag(ctx, prefix+"incident:worker", time.Minute))
	_, _, w, err = c.Counts(ctx, nil, prefix+"incident:worker")
	require.NoError(t, err)
	require.True(t, w)
}
