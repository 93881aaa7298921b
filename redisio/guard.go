package redisio

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// The keys of throttle holds and of the incident guard are Lists.Throttle,
// Lists.IncidentBucket and Lists.IncidentWorker. Times are the caller's
// clock in Unix milliseconds; TTLs are durations, so a test's fake clock and
// Redis's own clock never need to agree.

// holdScript holds the groups of ARGV[2], ARGV[4], ... until the times
// (Unix ms) of ARGV[3], ARGV[5], ... in the sorted set KEYS[1], unless a
// group is already held longer (ZADD GT), and makes the set expire no
// earlier than ARGV[1] ms from now: it expires by itself after its last
// hold.
var holdScript = redis.NewScript(`
local args = {}
for i = 2, #ARGV, 2 do
  args[#args + 1] = ARGV[i + 1]
  args[#args + 1] = ARGV[i]
end
redis.call('ZADD', KEYS[1], 'GT', unpack(args))
local ttl = tonumber(ARGV[1])
if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
return 1`)

// maxHoldsPerScript bounds the groups one run of holdScript writes (Lua's
// unpack takes a few thousand values at most).
const maxHoldsPerScript = 1000

// Hold records that group is held until until (by the caller's clock, whose
// now is given) in the sorted set key. A later hold of the same group wins;
// an earlier one changes nothing. The key expires by itself once every hold
// in it has ended (plus a second).
func (c *Client) Hold(ctx context.Context, key, group string, until, now time.Time) error {
	return c.Holds(ctx, key, map[string]time.Time{group: until}, now)
}

// Holds is Hold for every group of holds (the end of its hold), in one
// round trip per up to 1000 groups: a poller's batch writes the holds its
// results decided at once.
func (c *Client) Holds(ctx context.Context, key string, holds map[string]time.Time, now time.Time) error {
	var args []any
	var last time.Time
	groups := 0
	for group, until := range holds {
		if until.Sub(now) <= 0 {
			continue // already over
		}
		if until.After(last) {
			last = until
		}
		args = append(args, group, until.UnixMilli())
		groups++
		if groups == maxHoldsPerScript {
			if err := c.runHolds(ctx, key, args, last, now); err != nil {
				return err
			}
			args, last, groups = args[:0], time.Time{}, 0
		}
	}
	if groups == 0 {
		return nil
	}
	return c.runHolds(ctx, key, args, last, now)
}

// runHolds runs holdScript for the (group, until) pairs of args, the
// latest of which ends at last.
func (c *Client) runHolds(ctx context.Context, key string, args []any, last, now time.Time) error {
	ttl := last.Sub(now) + time.Second
	err := holdScript.Run(ctx, c.rdb, []string{key}, append([]any{ttl.Milliseconds()}, args...)...).Err()
	if err != nil {
		if len(args) == 2 {
			return fmt.Errorf("hold throttle group %q in %q: %w", args[0], key, err)
		}
		return fmt.Errorf("hold %d throttle groups in %q: %w", len(args)/2, key, err)
	}
	return nil
}

// Held returns the groups of the sorted set key held after now (by the
// caller's clock), with the end of each hold. An absent key holds none.
func (c *Client) Held(ctx context.Context, key string, now time.Time) (map[string]time.Time, error) {
	cmd := queueHeld(ctx, c.rdb, key, now)
	return cmd()
}

// queueHeld queues Held's read on p (a client or a pipeline, so that the
// caller can send it with other commands in one round trip); the function
// it returns gives Held's result once p has run it.
func queueHeld(ctx context.Context, p redis.Cmdable, key string, now time.Time) func() (map[string]time.Time, error) {
	cmd := p.ZRangeByScoreWithScores(ctx, key, &redis.ZRangeBy{
		Min: "(" + strconv.FormatInt(now.UnixMilli(), 10), Max: "+inf"})
	return func() (map[string]time.Time, error) {
		zs, err := cmd.Result()
		if err != nil {
			return nil, fmt.Errorf("read throttle holds %q: %w", key, err)
		}
		held := make(map[string]time.Time, len(zs))
		for _, z := range zs {
			if g, ok := z.Member.(string); ok {
				held[g] = time.UnixMilli(int64(z.Score)).UTC()
			}
		}
		return held, nil
	}
}

// Counts sums the fields "results" and "failures" of the hashes keys (see
// Tally) and reports whether flag exists, in one round trip. Absent keys
// count 0.
func (c *Client) Counts(ctx context.Context, keys []string, flag string) (results, failures int, flagged bool, err error) {
	return c.CountThenRead(ctx, nil, keys, flag)
}

// Tally is a count for a bucket of the incident window: Results and
// Failures are added to the hash Key (fields "results" and "failures"),
// which then expires after TTL. With FlagTTL > 0 it also sets the flag of
// Add and CountThenRead for that long (a mark that expires by itself).
type Tally struct {
	Key               string
	Results, Failures int
	TTL               time.Duration
	FlagTTL           time.Duration
	// Stats is the batch's count for the charts, written with the tally
	// (see StatsAdd); the zero StatsAdd writes nothing.
	Stats StatsAdd
}

// queueTally queues t's writes on p.
func queueTally(ctx context.Context, p redis.Pipeliner, t Tally, flag string) {
	if t.Results > 0 || t.Failures > 0 {
		p.HIncrBy(ctx, t.Key, "results", int64(t.Results))
		p.HIncrBy(ctx, t.Key, "failures", int64(t.Failures))
		p.PExpire(ctx, t.Key, t.TTL)
	}
	if t.FlagTTL > 0 {
		p.Set(ctx, flag, "1", t.FlagTTL)
	}
	queueStats(ctx, p, t.Stats)
}

// Add adds tallies (counts and flag, see Tally) in one round trip and one
// transaction.
func (c *Client) Add(ctx context.Context, tallies []Tally, flag string) error {
	_, err := c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for _, t := range tallies {
			queueTally(ctx, p, t, flag)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("count results in the incident window: %w", err)
	}
	return nil
}

// CountThenRead adds tallies (as Add) and then reads the window
// (as Counts, which it returns), in one round trip and one transaction
// (MULTI/EXEC): the read sees the tallies. A failed call may still have
// written them, so the caller must not send them again (a lost count is
// better than one counted twice).
func (c *Client) CountThenRead(ctx context.Context, tallies []Tally, keys []string, flag string) (results, failures int, flagged bool, err error) {
	cmds := make([]*redis.SliceCmd, len(keys))
	var exists *redis.IntCmd
	pipelined := c.rdb.Pipelined
	if len(tallies) > 0 {
		pipelined = c.rdb.TxPipelined
	}
	_, err = pipelined(ctx, func(p redis.Pipeliner) error {
		for _, t := range tallies {
			queueTally(ctx, p, t, flag)
		}
		for i, k := range keys {
			cmds[i] = p.HMGet(ctx, k, "results", "failures")
		}
		exists = p.Exists(ctx, flag)
		return nil
	})
	if err != nil {
		return 0, 0, false, fmt.Errorf("read the incident window: %w", err)
	}
	for _, cmd := range cmds {
		v := cmd.Val()
		results += atoi(v[0])
		failures += atoi(v[1])
	}
	return results, failures, exists.Val() > 0, nil
}

func atoi(v any) int {
	s, _ := v.(string)
	n, _ := strconv.Atoi(s)
	return n
}
