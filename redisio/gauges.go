package redisio

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// The alert gauges' sharing (refresher.Gauges): one instance counts a kind
// per interval, under the kind's lock (Lists.GaugeLock), and stores what it
// counted in the kind's snapshot (Lists.GaugeSnapshot), which every
// instance reports. Both keys derive from the kind's lists, so two
// deployments on one Redis never see each other's counts.

// gaugeLockScript takes the gauge lock KEYS[1] for the period ARGV[1]
// unless it is held for that period or a later one: its value is ARGV[2],
// which starts with the period, and it lives ARGV[3] ms. It returns the
// lock's value. A lock named by its period, not only by its TTL, lets a
// lone instance count at each of its ticks whatever the delays: its tick of
// the next period never meets the lock of the last, which a TTL shorter
// than the interval, racing the ticker, did under load. A value that does
// not start with a period and a space is an earlier version's lock (when
// it was taken, then a word; it lives less than an interval): held.
var gaugeLockScript = redis.NewScript(`
local held = redis.call('GET', KEYS[1])
if held then
  local p = tonumber(string.match(held, '^(%d+) '))
  if not p or p >= tonumber(ARGV[1]) then return held end
end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return ARGV[2]`)

// LockGauges tries the gauge lock of each kind of lists for the period
// period (GaugePeriod) for ttl, in one round trip; won[i] says whether this
// caller holds lists[i]'s lock and should count that kind. The lock's
// value is the period, owner (for whoever looks) and a random word of the
// call's own, and the lock is won when the script answers that value: so
// the pipeline sent again after its reply was lost (go-redis's
// MaxRetries), which finds the call's own lock, still wins it, where no
// instance would count the kind in that period.
func (c *Client) LockGauges(ctx context.Context, lists []Lists, period int64, owner string, ttl time.Duration) (won []bool, err error) {
	value := strconv.FormatInt(period, 10) + " " + owner + " " + rand.Text()
	holders := make([]*redis.Cmd, len(lists))
	if _, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, l := range lists {
			// EVAL, not EVALSHA: a pipeline cannot load a script it lacks.
			holders[i] = gaugeLockScript.Eval(ctx, p, []string{l.GaugeLock()}, period, value, ttl.Milliseconds())
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("lock the gauges: %w", err)
	}
	won = make([]bool, len(lists))
	for i, h := range holders {
		v, _ := h.Text()
		won[i] = v == value
	}
	return won, nil
}

// GaugePeriod returns the number of the gauges' period of length interval
// that holds at: the Unix time in intervals. Every instance names a period
// alike (clocks apart by less than an interval mostly agree).
func GaugePeriod(at time.Time, interval time.Duration) int64 {
	return at.UnixMilli() / max(interval.Milliseconds(), 1)
}

// ShareGauges stores the snapshot put[i] of each kind lists[i] that has one
// (expiring after ttl), with samples[i] in the kind's stats for the charts
// (see StatsSample; samples may be nil), and reads the snapshot of each
// that has none, in one round trip. got[i] is the snapshot read, nil for a
// kind whose snapshot was stored or is absent (the winner has not counted
// yet).
func (c *Client) ShareGauges(ctx context.Context, lists []Lists, put [][]byte, samples []StatsSample, ttl time.Duration) (got [][]byte, err error) {
	gets := make([]*redis.StringCmd, len(lists))
	if _, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, l := range lists {
			if put[i] != nil {
				p.Set(ctx, l.GaugeSnapshot(), put[i], ttl)
				if samples != nil {
					queueSample(ctx, p, l, samples[i])
				}
			} else {
				gets[i] = p.Get(ctx, l.GaugeSnapshot())
			}
		}
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("share the gauges: %w", err)
	}
	got = make([][]byte, len(lists))
	for i, g := range gets {
		if g != nil && g.Err() == nil {
			got[i] = []byte(g.Val())
		}
	}
	return got, nil
}
