package main

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/redisio"
)

// TestAccountingRedis checks that every round trip counts once and that
// exactly the incident guard's and the throttle holds' are theirs.
func TestAccountingRedis(t *testing.T) {
	shared, prefix := testenv.Redis(t)
	rdb := redis.NewClient(&redis.Options{Addr: shared.Options().Addr})
	defer rdb.Close()
	a := &accounting{}
	rdb.AddHook(a.hook())
	c := redisio.New(rdb)
	ctx := context.Background()
	now := time.Now()

	if err := c.Add(ctx, []redisio.Tally{{Key: prefix + "incident:1", Results: 10, Failures: 2, TTL: time.Minute}}, prefix+"worker"); err != nil { // guard: record
		t.Fatal(err)
	}
	if _, _, _, err := c.Counts(ctx, []string{prefix + "incident:1", prefix + "incident:0"}, prefix+"worker"); err != nil { // guard: decide
		t.Fatal(err)
	}
	if _, err := c.Held(ctx, prefix+"throttle", now); err != nil { // throttle holds
		t.Fatal(err)
	}
	if _, err := c.Len(ctx, prefix+"input"); err != nil { // the cycle's own
		t.Fatal(err)
	}
	if _, err := c.ReadDispatchState(ctx, redisio.DefaultLists(prefix+"k"), true, now); err != nil { // the pauses' with the holds: not an extra one
		t.Fatal(err)
	}
	if _, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error { // the dashboard's
		p.LLen(ctx, prefix+"input")
		p.HLen(ctx, prefix+"paused")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := a.redis.Load(); got != 6 {
		t.Errorf("round trips %d, want 6", got)
	}
	if got := a.guard.Load(); got != 3 {
		t.Errorf("guard and throttle round trips %d, want 3", got)
	}
	if a.guardNS.Load() <= 0 {
		t.Error("the guard's round trips took no time")
	}
	st := parseStats(a.line())
	if st.redis != 6 || st.guard != 3 || st.counts != 0 || st.guardTime < 0 {
		t.Errorf("parseStats(%q) = %+v", a.line(), st)
	}
	a.reset()
	if a.line() != "redis=0 guard=0 guard_us=0 counts=0 count_ms=0" {
		t.Errorf("after reset: %q", a.line())
	}
	if st := parseStats(""); st.redis != -1 || st.guard != -1 || st.countTime != -1 {
		t.Errorf("parseStats of nothing = %+v, want all unknown", st)
	}
}
