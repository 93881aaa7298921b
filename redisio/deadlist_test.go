package redisio

import (
	"context"
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

// A replay whose push is refused (here the output key holds a string:
// WRONGTYPE) leaves the dead letter where it was, so that the operator can
// fix the cause and replay it: the script pushes before it removes, as
// Redis does not undo a script's earlier writes.
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
