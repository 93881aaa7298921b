package redisio

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// The operator's reads and changes of a kind's dead-letter list (the
// dashboard and the API): list, replay and discard. Entries are named by
// their exact text, which is stable while they stay in the list.

// DeadLetters returns the length of the dead-letter list and its entries
// from offset (0: the oldest) up to limit of them, in one round trip.
func (c *Client) DeadLetters(ctx context.Context, l Lists, offset, limit int64) (total int64, entries []string, err error) {
	p := c.rdb.Pipeline()
	n := p.LLen(ctx, l.Dead)
	rng := p.LRange(ctx, l.Dead, offset, offset+limit-1)
	if _, err := p.Exec(ctx); err != nil {
		return 0, nil, fmt.Errorf("read %s: %w", l.Dead, err)
	}
	return n.Val(), rng.Val(), nil
}

// replayScript removes one dead letter (by its exact text) and, only if it
// was there, pushes the original onto the output list: a replay that races
// another never pushes a message twice.
var replayScript = redis.NewScript(`
if redis.call('LREM', KEYS[1], 1, ARGV[1]) == 1 then
  redis.call('RPUSH', KEYS[2], ARGV[2])
  return 1
end
return 0`)

// ReplayDead removes the dead letter whose text is entry and pushes msg
// (its original message) onto the output list, in one atomic step; it
// reports false, and pushes nothing, when the entry is no longer there.
func (c *Client) ReplayDead(ctx context.Context, l Lists, entry, msg string) (bool, error) {
	n, err := replayScript.Run(ctx, c.rdb, []string{l.Dead, l.Output}, entry, msg).Int()
	if err != nil {
		return false, fmt.Errorf("replay from %s: %w", l.Dead, err)
	}
	return n == 1, nil
}

// DiscardDead removes the dead letter whose text is entry; it reports
// false when it is no longer there.
func (c *Client) DiscardDead(ctx context.Context, l Lists, entry string) (bool, error) {
	n, err := c.rdb.LRem(ctx, l.Dead, 1, entry).Result()
	if err != nil {
		return false, fmt.Errorf("discard from %s: %w", l.Dead, err)
	}
	return n == 1, nil
}
