package redisio

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
)

// TestDrainOnMiniredis runs the drain's scripts on the embedded server that
// `refresher demo` uses: fetch with its byte bound and an oversized message,
// ack with a dead letter, the blocking wait, the heartbeat's expiry and the
// takeover. miniredis runs Lua itself (gopher-lua) and lacks some options
// (MEMORY USAGE ... SAMPLES), so what works on Redis is checked here too.
func TestDrainOnMiniredis(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	mr.ClockTTL(true)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	c, err := NewWithConfig(rdb, Config{MaxResultBytes: 1024})
	require.NoError(t, err)
	b := &bundle{rdb: rdb, client: c, lists: DefaultLists("k")}
	ctx := t.Context()

	pushResults(t, b, 3)
	big := `{"uid":"x","pad":"` + strings.Repeat("y", 5000) + `"}`
	require.NoError(t, rdb.RPush(ctx, b.lists.Output, big).Err())
	pushResults(t, b, 2)

	d := c.Drain(b.lists, "A", time.Second)
	msgs, err := d.Fetch(ctx, 100, 0)
	require.NoError(t, err)
	require.Len(t, msgs, 6)
	require.Equal(t, seq(0, 3), uidsOf(msgs[:3]))
	require.Error(t, msgs[3].Err, "the oversized message")
	require.Less(t, len(msgs[3].Raw), 5000, "the oversized message never leaves Redis whole")
	require.NoError(t, d.Ack(ctx, msgs, msgs[3:4]))
	dead, err := rdb.LRange(ctx, b.lists.Dead, 0, -1).Result()
	require.NoError(t, err)
	require.Len(t, dead, 1)
	require.Contains(t, dead[0], fmt.Sprintf(`"size":%d`, len(big)))
	require.Less(t, len(dead[0]), 8<<10, "a bounded dead letter")
	requireList(t, b, b.lists.Processing("A"))

	// The blocking wait returns a result pushed while it waits.
	go func() {
		// Pushed while the Fetch blocks, most likely: miniredis shows no
		// blocked client to wait for, and an earlier push is found as well.
		time.Sleep(200 * time.Millisecond)
		_ = rdb.RPush(ctx, b.lists.Output, result(7)).Err()
	}()
	msgs, err = d.Fetch(ctx, 10, 3*time.Second)
	require.NoError(t, err)
	require.Equal(t, []string{"7"}, uidsOf(msgs))

	// Unacknowledged, with the heartbeat expired (ClockTTL follows the wall
	// clock), the batch is taken over by another instance.
	testenv.Eventually(t, 5*time.Second, "A's heartbeat expired", func() bool { return rdb.Exists(ctx, b.lists.Heartbeat("A")).Val() == 0 })
	e := c.Drain(b.lists, "B", time.Second)
	n, err := e.Recover(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	msgs, err = e.Fetch(ctx, 10, 0)
	require.NoError(t, err)
	require.Equal(t, []string{"7"}, uidsOf(msgs))
}
