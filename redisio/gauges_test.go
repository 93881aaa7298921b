package redisio

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The gauge lock is named by its period: the next period's lock is won at
// once, while the last one's has not expired (a lone instance counts at
// every tick, however its ticks are delayed), and an instance whose tick
// names a period already taken, or an earlier one (its clock behind), does
// not count it again.
func TestLockGaugesByPeriod(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	lock := func(period int64, owner string) bool {
		t.Helper()
		won, err := b.client.LockGauges(ctx, []Lists{b.lists}, period, owner, time.Minute)
		require.NoError(t, err)
		return won[0]
	}
	require.True(t, lock(7, "a"))
	require.False(t, lock(7, "b"), "period 7 is a's")
	require.False(t, lock(7, "a"), "a tick of the same period, even of a")
	require.True(t, lock(8, "a"), "the next period, within the last one's TTL")
	require.False(t, lock(7, "b"), "a late clock's tick of an earlier period")
	require.True(t, lock(9, "b"))

	require.Equal(t, int64(2), GaugePeriod(time.UnixMilli(59_999), 20*time.Second))
	require.Equal(t, int64(3), GaugePeriod(time.UnixMilli(60_000), 20*time.Second))
}

// During a rolling upgrade, an instance of the version before the period
// lock holds the gauge lock as "<RFC3339> <random>" (SET NX, 0.9
// interval): held, not read as period 2026 and taken, so that the kind is
// not counted twice in that interval.
func TestGaugeLockOfTheLastVersionHeld(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	now := time.Now()
	old := now.Format(time.RFC3339Nano) + " OLDINSTANCEWORD"
	require.NoError(t, b.rdb.Set(ctx, b.lists.GaugeLock(), old, 13*time.Second).Err())
	won, err := b.client.LockGauges(ctx, []Lists{b.lists}, GaugePeriod(now, 15*time.Second), "new", 30*time.Second)
	require.NoError(t, err)
	require.Equal(t, []bool{false}, won, "the old version's lock, held this interval, is taken: %q", b.rdb.Get(ctx, b.lists.GaugeLock()).Val())
}
