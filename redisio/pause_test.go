package redisio

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
)

// ReadDispatchState reads the kind's pause, its paused models and the
// throttle holds in one round trip, from the keys named by Lists.
func TestReadDispatchState(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	c := New(rdb)
	ctx := context.Background()
	l := DefaultLists(prefix + "k")
	now := time.Now()

	st, err := c.ReadDispatchState(ctx, l, true, now)
	require.NoError(t, err)
	require.Nil(t, st.KindPause)
	require.Empty(t, st.PausedModels)
	require.Empty(t, st.Holds)

	until := now.Add(time.Minute).Truncate(time.Millisecond).UTC()
	require.NoError(t, c.Hold(ctx, l.Throttle(), "g1", until, now))
	require.NoError(t, c.PauseKind(ctx, l, PauseInfo{Note: "upgrade", By: "ops"}))
	require.NoError(t, c.PauseModels(ctx, l, []string{"a", "b"}, PauseInfo{Note: "n"}))

	hook := &counter{}
	rdb.AddHook(hook)
	st, err = c.ReadDispatchState(ctx, l, true, now)
	require.NoError(t, err)
	require.Equal(t, int64(1), hook.trips.Load(), "round trips")
	require.Equal(t, &PauseInfo{Note: "upgrade", By: "ops"}, st.KindPause)
	require.ElementsMatch(t, []string{"a", "b"}, st.PausedModels)
	require.Equal(t, map[string]time.Time{"g1": until}, st.Holds)

	st, err = c.ReadDispatchState(ctx, l, false, now)
	require.NoError(t, err)
	require.Nil(t, st.Holds, "holds not asked for")

	// Unpause returns what it removed, and RestorePauses puts it back.
	before, err := c.Unpause(ctx, l, []string{"a", "c"})
	require.NoError(t, err)
	require.Len(t, before, 1)
	paused, err := c.PausedModels(ctx, l)
	require.NoError(t, err)
	require.Len(t, paused, 1)
	require.NoError(t, c.RestorePauses(ctx, l, before))
	ok, err := c.ModelPaused(ctx, l, "a")
	require.NoError(t, err)
	require.True(t, ok)

	was, err := c.ResumeKind(ctx, l)
	require.NoError(t, err)
	require.True(t, was)
	p, err := c.KindPause(ctx, l)
	require.NoError(t, err)
	require.Nil(t, p)
}

// A pause written by hand (not JSON) still pauses, with its text as the
// note.
func TestPauseByHand(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	c := New(rdb)
	ctx := context.Background()
	l := DefaultLists(prefix + "k")
	require.NoError(t, rdb.Set(ctx, l.KindPause(), "db upgrade", 0).Err())
	st, err := c.ReadListState(ctx, l)
	require.NoError(t, err)
	require.Equal(t, &PauseInfo{Note: "db upgrade"}, st.KindPause)
}
