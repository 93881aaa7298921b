package redisio

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
)

// A cluster client reads the slot map again after a failure of a node, not
// after a reply to the command.
func TestNodeFailed(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	ctx := context.Background()
	reply := rdb.Do(ctx, "nosuchcommand").Err()
	wrongType := rdb.LPush(ctx, prefix+"s", "x").Err()
	require.NoError(t, wrongType)
	wrongType = rdb.Get(ctx, prefix+"s").Err()
	var re redis.Error
	require.ErrorAs(t, reply, &re, "a reply error")
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{redis.Nil, false},
		{context.Canceled, false},
		{reply, false},
		{wrongType, false},
		{io.EOF, true},
		{&net.OpError{Op: "dial", Err: errors.New("connection refused")}, true},
		{errors.New("redis: client is closed"), true},
	} {
		require.Equal(t, tc.want, nodeFailed(tc.err), "%v", tc.err)
	}
}
