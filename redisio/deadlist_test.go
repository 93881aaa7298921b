package redisio

import (
	"context"
	"github.com/redis/go-redis/v9"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
)

// Replay moves a dead letter's original to the output list once, even when
// asked twice; discard removes an entry once.
func TestReplayAndDiscardDead(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	c := New(rdb)
	ctx := context.Background()
	l := DefaultLists(prefix + "k")
	require.NoError(t, rdb.RPush(ctx, l.Dead, "e1", "e2", "e3").Err())

	total, entries, err := c.DeadLetters(ctx, l, 1, 1)
	require.NoError(t, err)
	require.Equal(t, int64(3), total)
	require.Equal(t, []string{"e2"}, entries)

	for i, want := range []bool{true, false} {
		done, err := c.ReplayDead(ctx, l, "e1", "original 1")
		require.NoError(t, err)
		require.Equal(t, want, done, "replay %d", i+1)
	}
	require.Equal(t, []string{"original 1"}, rdb.LRange(ctx, l.Output, 0, -1).Val())

	for i, want := range []bool{true, false} {
		done, err := c.DiscardDead(ctx, l, "e3")
		require.NoError(t, err)
		require.Equal(t, want, done, "discard %d", i+1)
	}
	require.Equal(t, []string{"e2"}, rdb.LRange(ctx, l.Dead, 0, -1).Val())
}

// list, its pause key) may not write "<key>:once:<random>": discard and
// resume fall back to the body alone (runOnce), as before the receipts.
func TestOperatorWritesUnderKeyACL(t *testing.T) {
	t.Parallel()
	tp := testenv.RedisAlone(t)
	ctx := t.Context()
	addr := tp.Servers[0].Addr
	admin := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = admin.Close() })
	l := DefaultLists("k")
	require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "op", "on", ">pw-acl-test",
		"~"+l.Dead, "~"+l.Output, "~"+l.KindPause(), "+@all").Err())
	op := redis.NewClient(&redis.Options{Addr: addr, Username: "op", Password: "pw-acl-test"})
	t.Cleanup(func() { _ = op.Close() })
	c := New(op)
	require.NoError(t, admin.RPush(ctx, l.Dead, "a").Err())
	ok, err := c.DiscardDead(ctx, l, "a")
	require.NoError(t, err, "discard")
	require.True(t, ok)
	require.NoError(t, c.PauseKind(ctx, l, PauseInfo{Note: "n"}))
	was, err := c.ResumeKind(ctx, l)
	require.NoError(t, err, "resume")
	require.True(t, was)
}

// a replay whose push is refused (here the output key holds

// a string: WRONGTYPE) must leave the dead letter where it was, so that

// the operator can fix the cause and replay it. replayScript removes the

// dead letter first and pushes second, and Redis does not roll a script

// back: the replay reports an error and the message is gone from both

// lists. (once.go's "a body that fails leaves 0 there: done nothing" is

// untrue for it too: the body did remove the entry.)
func TestReplayRefusedKeepsDeadLetter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	require.NoError(t, b.rdb.RPush(ctx, b.lists.Dead, "e1").Err())
	require.NoError(t, b.rdb.Set(ctx, b.lists.Output, "not a list", 0).Err())
	_, err := b.client.ReplayDead(ctx, b.lists, "e1", "original 1")
	require.Error(t, err)
	require.Equal(t, []string{"e1"}, b.rdb.LRange(ctx, b.lists.Dead, 0, -1).Val(), "a refused replay lost its dead letter")
}
