package redisio

import (
	"context"

	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
)

// RefusedForGood tells, on a real Redis's replies, the refusals that stay
// (NOPERM, an unknown command) from those that may pass another time (OOM,
// BUSY-like, a script's error). An OOM reply taken for a refusal for good
// switched a caller to its fallback for the Client's life (the drain's
// predicate took every reply but BUSY, LOADING and failovers for one).
func TestRefusedForGood(t *testing.T) {
	t.Parallel()
	tp := testenv.RedisAlone(t)
	ctx := t.Context()
	addr := tp.Servers[0].Addr
	admin := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = admin.Close() })
	require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "svc", "on", ">pw-acl-test", "~*", "+@all", "-eval", "-evalsha").Err())
	svc := redis.NewClient(&redis.Options{Addr: addr, Username: "svc", Password: "pw-acl-test"})
	t.Cleanup(func() { _ = svc.Close() })

	err := svc.Eval(ctx, "return 1", nil).Err()
	require.Error(t, err)
	require.True(t, RefusedForGood(err), "NOPERM: %v", err)
	err = admin.Do(ctx, "NOSUCHCOMMAND").Err()
	require.Error(t, err)
	require.True(t, RefusedForGood(err), "unknown command: %v", err)

	err = admin.Eval(ctx, "return redis.error_reply('failed')", nil).Err()
	require.Error(t, err)
	require.False(t, RefusedForGood(err), "a script's error: %v", err)
	require.False(t, RefusedForGood(context.DeadlineExceeded), "not a reply")

	require.NoError(t, admin.ConfigSet(ctx, "maxmemory", "1").Err())
	err = admin.Set(ctx, "k", "v", 0).Err()
	require.NoError(t, admin.ConfigSet(ctx, "maxmemory", "0").Err())
	require.Error(t, err)
	require.False(t, RefusedForGood(err), "OOM: %v", err)
}
