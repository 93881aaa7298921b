package main

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/refresher/refresher/models"
)

// The wall time of a cycle on a shared machine moves by more than the
// features compared by --operator and --guard cost, so a service child also
// counts what those features add, which does not depend on the load: its
// Redis round trips, those of the incident guard and of the throttle holds
// with the time they took, and the model counts it ran (the gauges' and the
// dashboard's) with the time they took. It reports them after the cycle in
// one line, "stats redis=<n> guard_us=<n> counts=<n> count_ms=<n>".

// accounting is what a service child counted during the cycle.
type accounting struct {
	redis   atomic.Int64 // round trips: a command, a pipeline or a script call each count one (a new connection's handshake does not)
	guard   atomic.Int64 // of which the incident guard's and the throttle holds'
	guardNS atomic.Int64 // their total duration
	counts  atomic.Int64 // Inspector.Counts calls
	countNS atomic.Int64 // their total duration
}

// hook counts one per round trip to Redis.
func (a *accounting) hook() redis.Hook { return redisCounter{a} }

type redisCounter struct{ a *accounting }

func (redisCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h redisCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if connInit[cmd.Name()] {
			return next(ctx, cmd)
		}
		h.a.redis.Add(1)
		if !guardCommands[cmd.Name()] {
			return next(ctx, cmd)
		}
		return h.a.timeGuard(func() error { return next(ctx, cmd) })
	}
}

func (h redisCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if !slices.ContainsFunc(cmds, func(c redis.Cmder) bool { return !connInit[c.Name()] }) {
			return next(ctx, cmds)
		}
		h.a.redis.Add(1)
		if !slices.ContainsFunc(cmds, func(c redis.Cmder) bool { return windowCommands[c.Name()] }) {
			return next(ctx, cmds)
		}
		return h.a.timeGuard(func() error { return next(ctx, cmds) })
	}
}

// timeGuard runs one round trip of the guard's and counts it and its time.
func (a *accounting) timeGuard(run func() error) error {
	start := time.Now()
	err := run()
	a.guard.Add(1)
	a.guardNS.Add(int64(time.Since(start)))
	return err
}

// connInit are the commands a new connection sends before its first one
// (go-redis's handshake): not the cycle's.
var connInit = map[string]bool{"hello": true, "client": true, "auth": true, "select": true}

// guardCommands are the commands only the incident guard (its window's
// reads and counts, redisio.Client.Counts, CountThenRead and Add) and the throttle holds
// (redisio.Client.Held) send; a round trip with one of them is theirs. A
// pipeline is theirs when it holds one of windowCommands: the dispatcher
// reads the holds in the round trip that reads the pauses, which it makes
// anyway, so that one is not.
var (
	guardCommands  = map[string]bool{"hmget": true, "hincrby": true, "zrangebyscore": true}
	windowCommands = map[string]bool{"hmget": true, "hincrby": true}
)

// reset zeroes the counts.
func (a *accounting) reset() {
	for _, n := range []*atomic.Int64{&a.redis, &a.guard, &a.guardNS, &a.counts, &a.countNS} {
		n.Store(0)
	}
}

// line is the report of the counts.
func (a *accounting) line() string {
	return "redis=" + strconv.FormatInt(a.redis.Load(), 10) +
		" guard=" + strconv.FormatInt(a.guard.Load(), 10) + " guard_us=" + strconv.FormatInt(a.guardNS.Load()/int64(time.Microsecond), 10) +
		" counts=" + strconv.FormatInt(a.counts.Load(), 10) +
		" count_ms=" + strconv.FormatInt(a.countNS.Load()/int64(time.Millisecond), 10)
}

// countingStore is a store whose Counts are counted and timed.
type countingStore struct {
	models.Store
	a *accounting
}

func (s countingStore) Counts(ctx context.Context, t models.Table, now time.Time, lateAfter time.Duration) (models.Counts, error) {
	start := time.Now()
	c, err := s.Store.Counts(ctx, t, now, lateAfter)
	s.a.counts.Add(1)
	s.a.countNS.Add(int64(time.Since(start)))
	return c, err
}

// childStats is a child's accounting as the parent read it; -1: not
// reported.
type childStats struct {
	redis, guard, counts int64
	guardTime, countTime time.Duration
}

// parseStats reads the text of a "stats" line.
func parseStats(text string) childStats {
	st := childStats{redis: -1, guard: -1, counts: -1, guardTime: -1, countTime: -1}
	for _, f := range strings.Fields(text) {
		k, v, _ := strings.Cut(f, "=")
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "redis":
			st.redis = n
		case "guard":
			st.guard = n
		case "guard_us":
			st.guardTime = time.Duration(n) * time.Microsecond
		case "counts":
			st.counts = n
		case "count_ms":
			st.countTime = time.Duration(n) * time.Millisecond
		}
	}
	return st
}
