package redisio

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Stub replaces oversized messages of the output list in place: the list
// keeps its length and order, only the first max are looked at, a stub is
// left alone, and the next Fetch returns each stub as the oversized message
// it stands for, with its size and SHA-1, and its dead letter is small.
func TestStubInPlace(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	d := b.client.Drain(b.lists, "A", 0)
	big := func(c string) string { return `{"uid":"` + c + `","pad":"` + strings.Repeat(c, 70<<10) + `"}` }
	a, z := big("a"), big("z")
	require.NoError(t, b.rdb.RPush(ctx, b.lists.Output, result(0), a, result(1), z).Err())

	n, err := d.Stub(ctx, 3) // z is fourth: not looked at
	require.NoError(t, err)
	require.Equal(t, 1, n)
	items := b.rdb.LRange(ctx, b.lists.Output, 0, -1).Val()
	require.Len(t, items, 4)
	require.Equal(t, result(0), items[0])
	require.Less(t, len(items[1]), ExcerptBytes+200, "a is a stub")
	require.Equal(t, result(1), items[2])
	require.Equal(t, z, items[3])

	n, err = d.Stub(ctx, 10)
	require.NoError(t, err)
	require.Equal(t, 1, n, "the stub of a is left alone, z is stubbed")

	msgs, err := d.Fetch(ctx, 10, 0)
	require.NoError(t, err)
	require.Len(t, msgs, 4)
	for i, want := range []string{a, z} {
		m := msgs[2*i+1]
		require.ErrorContains(t, m.Err, "the limit is 65536")
		require.Equal(t, len(want), m.Size)
		require.Equal(t, want[:ExcerptBytes+1], string(m.Raw))
	}
	require.Equal(t, "0", msgs[0].Result.UID)
	require.Equal(t, "1", msgs[2].Result.UID)
	require.NoError(t, d.Ack(ctx, msgs, []Message{msgs[1], msgs[3]}))
	for i, want := range []string{a, z} {
		var e deadLetterEntry
		raw := b.rdb.LIndex(ctx, b.lists.Dead, int64(i)).Val()
		require.Less(t, len(raw), 8<<10)
		require.NoError(t, json.Unmarshal([]byte(raw), &e))
		require.Equal(t, len(want), e.Size)
		require.Equal(t, sha1hex(want), e.SHA1)
	}
}
