package redisio

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
)

// The operator's replay, discard and resume under Redis users whose ACL
// denies part of what they do: the action is done once or refused with an
// error, and a dead letter is never lost.

// an operator's Redis user that may not RPUSH (a command

// refused inside the script, checked when the script calls it, unlike its

// keys). The once script writes its receipt, removes the dead letter and

// is refused at the RPUSH; Redis 7.0 words that "ERR The user executing

// the script can't run this command", so runOnce returns the error (no

// fallback), but the dead letter is gone from both lists (replayScript

// removes before it pushes). Were the refusal worded NOPERM (a later

// Redis), runOnce would run the body again alone, whose LREM finds

// nothing: false ("no longer there") and no error.
func TestReplayRefusedRPushKeepsDeadLetter(t *testing.T) {
	t.Parallel()
	tp := testenv.RedisAlone(t)
	ctx := t.Context()
	addr := tp.Servers[0].Addr
	admin := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = admin.Close() })
	l := DefaultLists("k")
	require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "op", "on", ">pw-acl-test",
		"~*", "+@all", "-rpush").Err())
	op := redis.NewClient(&redis.Options{Addr: addr, Username: "op", Password: "pw-acl-test"})
	t.Cleanup(func() { _ = op.Close() })
	require.NoError(t, admin.RPush(ctx, l.Dead, "a").Err())
	ok, err := New(op).ReplayDead(ctx, l, "a", "orig")
	t.Logf("replay: %v, %v; dead %q output %q", ok, err, admin.LRange(ctx, l.Dead, 0, -1).Val(), admin.LRange(ctx, l.Output, 0, -1).Val())
	require.Error(t, err, "a replay refused at its RPUSH reported no error (and %v)", ok)
	require.Equal(t, []string{"a"}, admin.LRange(ctx, l.Dead, 0, -1).Val(), "a replay refused at its RPUSH lost its dead letter")
}

// an operator's Redis user whose ACL denies the SET command

// (a dead-letter janitor: lists and scripts, no strings) may not write the

// once receipt either. Redis refuses the script's SET with "ERR The user

// executing the script can't run this command", not NOPERM, so runOnce

// does not fall back to the body alone and the discard fails, where

// docs/protocol.md says a user who may not write those keys "gets the

// action alone, as before".
func TestDiscardWithoutSetFallsBack(t *testing.T) {
	t.Parallel()
	tp := testenv.RedisAlone(t)
	ctx := t.Context()
	addr := tp.Servers[0].Addr
	admin := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = admin.Close() })
	l := DefaultLists("k")
	require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "op", "on", ">pw-acl-test",
		"~*", "+@all", "-set").Err())
	op := redis.NewClient(&redis.Options{Addr: addr, Username: "op", Password: "pw-acl-test"})
	t.Cleanup(func() { _ = op.Close() })
	require.NoError(t, admin.RPush(ctx, l.Dead, "a").Err())
	ok, err := New(op).DiscardDead(ctx, l, "a")
	require.NoError(t, err, "a discard by a user without SET")
	require.True(t, ok)
	require.Empty(t, admin.LRange(ctx, l.Dead, 0, -1).Val())
}

// a replay whose Redis user may write

// the dead list and its receipts but only read the output list is refused

// with an error (Redis 7 checks a script's declared keys before it runs),

// and the dead letter stays: runOnce's plain fallback does not turn the

// refusal into "no longer there".
func TestReplayRefusedAtOutputKeepsDeadLetter(t *testing.T) {
	t.Parallel()
	tp := testenv.RedisAlone(t)
	ctx := t.Context()
	addr := tp.Servers[0].Addr
	admin := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = admin.Close() })
	l := DefaultLists("k")
	require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "op", "on", ">pw-acl-test",
		"~"+l.Dead+"*", "%R~"+l.Output, "+@all").Err())
	op := redis.NewClient(&redis.Options{Addr: addr, Username: "op", Password: "pw-acl-test"})
	t.Cleanup(func() { _ = op.Close() })
	require.NoError(t, admin.RPush(ctx, l.Dead, "a").Err())
	ok, err := New(op).ReplayDead(ctx, l, "a", "orig")
	require.Error(t, err, "a replay refused at the output list reports no error")
	require.False(t, ok)
	require.Equal(t, []string{"a"}, admin.LRange(ctx, l.Dead, 0, -1).Val(), "the refused replay removed the dead letter")
	require.Zero(t, admin.LLen(ctx, l.Output).Val())
}

// a Redis at maxclients refuses the

// connection of the CONFIG GET probe; go-redis reports that as a network

// error (not an error reply), so fastMoveMin does not keep the Lua move

// a replay under an ACL that names

// the kind's keys only (TestOperatorWritesUnderKeyACL covers discard and

// resume) falls back to the body alone and moves the original once.
func TestReplayUnderKeyACL(t *testing.T) {
	t.Parallel()
	tp := testenv.RedisAlone(t)
	ctx := t.Context()
	addr := tp.Servers[0].Addr
	admin := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = admin.Close() })
	l := DefaultLists("k")
	require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "op", "on", ">pw-acl-test",
		"~"+l.Dead, "~"+l.Output, "+@all").Err())
	op := redis.NewClient(&redis.Options{Addr: addr, Username: "op", Password: "pw-acl-test"})
	t.Cleanup(func() { _ = op.Close() })
	require.NoError(t, admin.RPush(ctx, l.Dead, "a", "a").Err())
	ok, err := New(op).ReplayDead(ctx, l, "a", "orig")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, []string{"a"}, admin.LRange(ctx, l.Dead, 0, -1).Val())
	require.Equal(t, []string{"orig"}, admin.LRange(ctx, l.Output, 0, -1).Val())
}

// An operator's Redis user whose ACL names the kind's keys only (its dead
