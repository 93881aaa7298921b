package redisio

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Next fetches the batches that follow the ones in flight, without
// returning those again, stubs an oversized message like Fetch, and Ack
// takes whole batches, oldest first, one or several at a time; the batch
// key lives until the last one is acknowledged.
func TestNextPipelines(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	d := b.client.Drain(b.lists, "A", 0)
	big := `{"uid":"big","pad":"` + strings.Repeat("b", 70<<10) + `"}`
	require.NoError(t, b.rdb.RPush(ctx, b.lists.Output, result(0), result(1), result(2), big, result(4), result(5)).Err())

	first, err := d.Fetch(ctx, 2, 0)
	require.NoError(t, err)
	require.Equal(t, seq(0, 2), uidsOf(first))
	second, err := d.Next(ctx, 2)
	require.NoError(t, err)
	require.Len(t, second, 2)
	require.Equal(t, "2", second[0].Result.UID)
	require.Equal(t, len(big), second[1].Size, "the oversized message is stubbed")
	require.Equal(t, big[:ExcerptBytes+1], string(second[1].Raw))
	require.Equal(t, sha1hex(big), second[1].sha1)
	third, err := d.Next(ctx, 10)
	require.NoError(t, err)
	require.Equal(t, seq(4, 6), uidsOf(third))
	none, err := d.Next(ctx, 10)
	require.NoError(t, err)
	require.Empty(t, none)
	require.Equal(t, int64(6), b.rdb.LLen(ctx, b.lists.Processing("A")).Val())

	require.EqualError(t, d.Ack(ctx, second, nil), `ack results of "`+b.lists.Output+
		`": a message is from a later batch than the oldest in flight (Ack the batches in the order they were fetched)`)
	require.NoError(t, d.Ack(ctx, first, nil))
	require.Equal(t, int64(1), b.rdb.Exists(ctx, b.lists.batchKey("A")).Val(), "batches are still in flight")
	// Two batches in one Ack: whole ones only.
	both := append(append([]Message{}, second...), third...)
	require.EqualError(t, d.Ack(ctx, both[:3], nil), `ack 3 results of "`+b.lists.Output+
		`": the batch has 2 messages; pass every fetched message, dead ones included`)
	require.NoError(t, d.Ack(ctx, both, second[1:]))
	requireNoBatchInFlight(t, b, "A")
	requireList(t, b, b.lists.Processing("A"))
	require.Equal(t, int64(1), b.rdb.LLen(ctx, b.lists.Dead).Val())
}

// When another instance took the batches in flight back (this one's
// heartbeat expired), Next changes nothing and says so, every Ack of the
// old batches fails, and nothing is lost: the other instance fetches every
// result, and this one goes on with what comes next.
func TestNextAfterTakeover(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	a := b.client.Drain(b.lists, "A", 0)
	other := b.client.Drain(b.lists, "B", 0)
	pushResults(t, b, 6)

	first, err := a.Fetch(ctx, 2, 0)
	require.NoError(t, err)
	second, err := a.Next(ctx, 2)
	require.NoError(t, err)
	require.Equal(t, seq(2, 4), uidsOf(second))

	// A's heartbeat expires (deleted here rather than waited for).
	require.NoError(t, b.rdb.Del(ctx, b.lists.Heartbeat("A")).Err())
	n, err := other.Recover(ctx)
	require.NoError(t, err)
	require.Equal(t, 4, n)

	_, err = a.Next(ctx, 2)
	require.ErrorIs(t, err, ErrRecovered)
	requireList(t, b, b.lists.Processing("A"))
	requireList(t, b, b.lists.Output, results(0, 6)...)
	require.ErrorContains(t, a.Ack(ctx, first, nil), "no batch in flight")

	got, err := other.Fetch(ctx, 4, 0)
	require.NoError(t, err)
	require.Equal(t, seq(0, 4), uidsOf(got))
	require.NoError(t, other.Ack(ctx, got, nil))
	rest, err := a.Next(ctx, 10)
	require.NoError(t, err)
	require.Equal(t, seq(4, 6), uidsOf(rest))
	require.NoError(t, a.Ack(ctx, rest, nil))
	requireList(t, b, b.lists.Output)
	requireList(t, b, b.lists.Processing("A"))
}
