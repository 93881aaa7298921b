package redisio

import (
	"context"
	"errors"
	"net"
	"strings"

	"github.com/redis/go-redis/v9"
)

// reloadOnFailure makes a cluster client read the cluster's slot map again
// (CLUSTER SLOTS, from any node that answers) after a command fails for a
// reason other than the command's own: a node that does not answer, or a
// cluster that says it is down. go-redis reloads the map by itself only on
// MOVED, ASK and READONLY replies, and otherwise once a minute; but a
// killed master answers nothing, so without this the client would keep
// dialling it for up to a minute after its replica took over. Reloads are
// coalesced by go-redis (one at a time, 200 ms apart), so a burst of
// failures costs a few CLUSTER SLOTS.
type reloadOnFailure struct{ cc *redis.ClusterClient }

func (h reloadOnFailure) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h reloadOnFailure) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.check(ctx, err)
		return err
	}
}

func (h reloadOnFailure) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.check(ctx, err)
		return err
	}
}

func (h reloadOnFailure) check(ctx context.Context, err error) {
	if nodeFailed(err) && ctx.Err() == nil {
		h.cc.ReloadState(context.WithoutCancel(ctx))
	}
}

// nodeFailed says whether err means a node is gone or the cluster is
// reconfiguring, rather than a reply to the command (nil, a script's error,
// WRONGTYPE).
func nodeFailed(err error) bool {
	if err == nil || errors.Is(err, redis.Nil) || errors.Is(err, context.Canceled) {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	var reply redis.Error
	if errors.As(err, &reply) {
		return reconfiguring(err.Error())
	}
	return true // EOF, a closed pool, a refused connection
}

// reconfiguring says whether an error reply means the cluster or the
// replication is being reconfigured (a failover): try again later.
func reconfiguring(msg string) bool {
	return strings.HasPrefix(msg, "CLUSTERDOWN") || strings.HasPrefix(msg, "TRYAGAIN") || strings.HasPrefix(msg, "MASTERDOWN")
}
