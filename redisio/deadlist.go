package redisio

import (
	"context"
	"fmt"
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

// replayScript pushes the original onto the output list only if its dead
// letter (by its exact text) is there, then removes the letter: a replay
// that races another never pushes a message twice, and one whose push is
// refused (an ACL without RPUSH, an output key that is not a list) keeps
// its letter, as Redis does not undo a script's earlier writes when a
// later command fails. It runs once per call (newOnceScript): sent again
// after a lost reply, it reports what its first run did.
var replayScript = newOnceScript(`
if redis.call('LPOS', KEYS[2], ARGV[2]) then
  redis.call('RPUSH', KEYS[3], ARGV[3])
  redis.call('LREM', KEYS[2], 1, ARGV[2])
  return 1
end
return 0`)

// ReplayDead removes the dead letter whose text is entry and pushes msg
// (its original message) onto the output list, in one atomic step; it
// reports false, and pushes nothing, when the entry is no longer there.
func (c *Client) ReplayDead(ctx context.Context, l Lists, entry, msg string) (bool, error) {
	n, err := c.runOnce(ctx, replayScript, []string{l.Dead, l.Output}, entry, msg)
	if err != nil {
		return false, fmt.Errorf("replay from %s: %w", l.Dead, err)
	}
	return n == 1, nil
}

// discardScript removes one dead letter (by its exact text), once per call
// (newOnceScript): a plain LREM sent again after a lost reply would remove a
// second, identical entry, and report that the first was gone.
var discardScript = newOnceScript(`return redis.call('LREM', KEYS[2], 1, ARGV[2])`)

// DiscardDead removes the dead letter whose text is entry; it reports
// false when it is no longer there.
func (c *Client) DiscardDead(ctx context.Context, l Lists, entry string) (bool, error) {
	n, err := c.runOnce(ctx, discardScript, []string{l.Dead}, entry)
	if err != nil {
		return false, fmt.Errorf("discard from %s: %w", l.Dead, err)
	}
	return n == 1, nil
}
