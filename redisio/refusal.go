package redisio

import (
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
)

// RefusedForGood says whether err is Redis's reply that it will not run the
// command, whenever it is sent: the user may not (an ACL's NOPERM) or the
// server has no such command (unknown, renamed or absent, as a server
// without Lua has no EVAL). Every other reply may pass another time: Redis
// cannot answer now (BUSY with a script, LOADING, MOVED or ASK, a cluster
// or replication failing over), is out of memory (OOM), is a replica
// (READONLY), or the command failed this time. A caller that keeps a
// fallback for the client's life (the worker's plain LPOP) takes it on
// this answer only. (The drain's CONFIG GET probe is the other way round:
// it keeps any refusal but the few that say "not now", transientReply.)
func RefusedForGood(err error) bool {
	var reply redis.Error
	if !errors.As(err, &reply) {
		return false
	}
	msg := reply.Error()
	return strings.HasPrefix(msg, "NOPERM") || strings.Contains(msg, "unknown command")
}
