package redisio

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
)

// The operator's replay, discard and resume under Redis users whose ACL
// denies part of what they do: each is done once, or refused with an
// error, and a dead letter is never lost.

// aclOperator starts a Redis of its own with a user "op" under the ACL
// rules, and returns an admin client, a Client of that user and the lists
// of kind "k", with a dead letter "a" in them.
func aclOperator(t *testing.T, rules func(l Lists) []any) (admin *redis.Client, op *Client, l Lists) {
	t.Helper()
	tp := testenv.RedisAlone(t)
	ctx := t.Context()
	addr := tp.Servers[0].Addr
	admin = redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = admin.Close() })
	l = DefaultLists("k")
	args := append([]any{"ACL", "SETUSER", "op", "on", ">pw-acl-test"}, rules(l)...)
	require.NoError(t, admin.Do(ctx, args...).Err())
	rdb := redis.NewClient(&redis.Options{Addr: addr, Username: "op", Password: "pw-acl-test"})
	t.Cleanup(func() { _ = rdb.Close() })
	require.NoError(t, admin.RPush(ctx, l.Dead, "a").Err())
	return admin, New(rdb), l
}

// A user that may not RPUSH is refused inside the script, after its
// receipt is written (Redis 7.0 words it "ERR ... can't run this
// command"). The replay pushes before it removes, and Redis does not undo
// a script's earlier writes: the refusal comes back as an error and the
// dead letter stays.
func TestReplayRefusedRPushKeepsDeadLetter(t *testing.T) {
	t.Parallel()
	admin, op, l := aclOperator(t, func(Lists) []any { return []any{"~*", "+@all", "-rpush"} })
	ctx := t.Context()
	ok, err := op.ReplayDead(ctx, l, "a", "orig")
	require.Error(t, err, "a replay refused at its RPUSH reported no error (and %v)", ok)
	require.Equal(t, []string{"a"}, admin.LRange(ctx, l.Dead, 0, -1).Val(), "a replay refused at its RPUSH lost its dead letter")
}

// A user denied SET may not write the once receipt: Redis refuses the
// script's SET with "ERR ...", not NOPERM, and the once script answers
// onceRefused, so the discard runs alone (docs/protocol.md: such a user
// "gets the action alone, as before").
func TestDiscardWithoutSetFallsBack(t *testing.T) {
	t.Parallel()
	admin, op, l := aclOperator(t, func(Lists) []any { return []any{"~*", "+@all", "-set"} })
	ok, err := op.DiscardDead(t.Context(), l, "a")
	require.NoError(t, err, "a discard by a user without SET")
	require.True(t, ok)
	require.Empty(t, admin.LRange(t.Context(), l.Dead, 0, -1).Val())
}

// A user that may write the dead list and its receipts but only read the
// output list is refused before the script runs (Redis 7 checks a
// script's declared keys): an error, and the dead letter stays; the plain
// fallback does not turn the refusal into "no longer there".
func TestReplayRefusedAtOutputKeepsDeadLetter(t *testing.T) {
	t.Parallel()
	admin, op, l := aclOperator(t, func(l Lists) []any { return []any{"~" + l.Dead + "*", "%R~" + l.Output, "+@all"} })
	ctx := t.Context()
	ok, err := op.ReplayDead(ctx, l, "a", "orig")
	require.Error(t, err, "a replay refused at the output list reports no error")
	require.False(t, ok)
	require.Equal(t, []string{"a"}, admin.LRange(ctx, l.Dead, 0, -1).Val(), "the refused replay removed the dead letter")
	require.Zero(t, admin.LLen(ctx, l.Output).Val())
}

// A user whose ACL names the kind's keys only (its dead list, its output,
// its pause key) may not write "<key>:once:<random>" (NOPERM before the
// script runs): replay, discard and resume run alone (runOnce's plain), as
// before the receipts, each once.
func TestOperatorWritesUnderKeyACL(t *testing.T) {
	t.Parallel()
	admin, op, l := aclOperator(t, func(l Lists) []any { return []any{"~" + l.Dead, "~" + l.Output, "~" + l.KindPause(), "+@all"} })
	ctx := t.Context()
	require.NoError(t, admin.RPush(ctx, l.Dead, "a", "b").Err()) // "a", "a", "b"
	ok, err := op.ReplayDead(ctx, l, "a", "orig")
	require.NoError(t, err, "replay")
	require.True(t, ok)
	require.Equal(t, []string{"a", "b"}, admin.LRange(ctx, l.Dead, 0, -1).Val(), "the replay removed one letter")
	require.Equal(t, []string{"orig"}, admin.LRange(ctx, l.Output, 0, -1).Val())
	ok, err = op.DiscardDead(ctx, l, "b")
	require.NoError(t, err, "discard")
	require.True(t, ok)
	require.NoError(t, op.PauseKind(ctx, l, PauseInfo{Note: "n"}))
	was, err := op.ResumeKind(ctx, l)
	require.NoError(t, err, "resume")
	require.True(t, was)
}
