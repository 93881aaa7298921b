package redisio

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// The alert gauges' sharing (refresher.Gauges): one instance counts a kind
// per interval, under the kind's lock (Lists.GaugeLock), and stores what it
// counted in the kind's snapshot (Lists.GaugeSnapshot), which every
// instance reports. Both keys derive from the kind's lists, so two
// deployments on one Redis never see each other's counts.

// LockGauges tries the gauge lock of each kind of lists for ttl (SET NX,
// owner as the value, for whoever looks), in one round trip; won[i] says
// whether this caller holds lists[i]'s lock and should count that kind.
// The value is owner and a random word of the call's own, and the lock is
// won when it holds that value after the SET: so the pipeline sent again
// after its reply was lost (go-redis's MaxRetries), whose SET NX then fails
// on the call's own lock, still wins it, where no instance would count the
// kind until the lock expired.
func (c *Client) LockGauges(ctx context.Context, lists []Lists, owner string, ttl time.Duration) (won []bool, err error) {
	value := owner + " " + rand.Text()
	holders := make([]*redis.StringCmd, len(lists))
	if _, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, l := range lists {
			p.SetNX(ctx, l.GaugeLock(), value, ttl)
			holders[i] = p.Get(ctx, l.GaugeLock())
		}
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("lock the gauges: %w", err)
	}
	won = make([]bool, len(lists))
	for i, h := range holders {
		won[i] = h.Val() == value
	}
	return won, nil
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
