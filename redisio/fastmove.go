package redisio

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// minFastMove is the least number of results a fetch moves natively (SORT
// ... STORE, see fetchScript) rather than through Lua strings. The native
// move returns the batch with a second round trip (LRANGE), which costs
// more than it saves on a few results.
const minFastMove = 100

// Whether the native move may be used on this Client's Redis: unknown until
// the first fetch asks (fastMoveProbe).
const (
	fastMoveUnknown int32 = iota
	fastMoveOn
	fastMoveOff
)

// fastMoveMin returns the least batch the fetch script may move natively
// (minFastMove), or 0 when it must not. The native move proves that no
// result of a batch is over the size limit by the batch's memory (MEMORY
// USAGE), which understates the size of a list whose nodes Redis
// compresses (list-compress-depth above 0), so it is used only when Redis
// says it does not compress lists. The answer is kept for the Client's
// life: a Redis that refuses CONFIG GET (managed services rename it, ACLs
// deny it) or an embedded server that lacks it gets the Lua move, which
// checks every result. A network error is returned and not kept; so is
// a reply that says Redis cannot answer now (BUSY with a script, LOADING,
// a cluster failing over: transientReply), which gets the Lua move this
// once.
func (c *Client) fastMoveMin(ctx context.Context) (int, error) {
	switch c.fastMove.Load() {
	case fastMoveOn:
		return minFastMove, nil
	case fastMoveOff:
		return 0, nil
	}
	v, err := c.rdb.ConfigGet(ctx, "list-compress-depth").Result()
	var reply redis.Error
	switch {
	case err == nil && v["list-compress-depth"] == "0":
		c.fastMove.Store(fastMoveOn)
		return minFastMove, nil
	case errors.As(err, &reply) && transientReply(reply.Error()):
		return 0, nil
	case err == nil || errors.As(err, &reply):
		c.fastMove.Store(fastMoveOff)
		return 0, nil
	}
	return 0, fmt.Errorf("ask whether Redis compresses lists: %w", err)
}

// transientReply says whether an error reply is Redis saying it cannot
// answer now rather than that it will not (an ACL's NOPERM, an unknown or
// renamed command, or a managed service's own wording of a refusal). It is
// narrower than !RefusedForGood on purpose: a CONFIG GET refused in words of
// its own would otherwise be asked again at every fetch.
func transientReply(msg string) bool {
	if reconfiguring(msg) {
		return true
	}
	for _, p := range []string{"BUSY ", "LOADING ", "MOVED ", "ASK "} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}
