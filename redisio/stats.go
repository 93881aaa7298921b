package redisio

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// A kind's activity over time, for the dashboard's charts: one hash per
// minute (Lists.StatsMinute, kept StatsMinuteTTL) and one per ten minutes
// (Lists.StatsTen, kept StatsTenTTL), both written by the same commands, so
// that the last hour reads 60 hashes and the last day 144. Their fields:
//
//	dispatched, applied, failed, dead  counts added by every instance (HINCRBY)
//	backlog, lateness                  the highest due count and oldest due age (s) sampled in the span
//	paused, incident                   1 when the kind was paused, or in an incident, in the span
//
// The counts ride on writes the service makes anyway: the dispatcher's
// push of a batch (PushCounting) and the poller's write of the incident
// window (Tally.Stats); the samples on the alert gauges' share (ShareGauges).
// Times are the caller's clock.

const (
	// StatsMinuteTTL is how long a per-minute hash is kept: the hour's
	// charts and a margin.
	StatsMinuteTTL = 2 * time.Hour
	// StatsTenTTL is how long a per-ten-minutes hash is kept: the day's
	// charts and a margin.
	StatsTenTTL = 25 * time.Hour
)

// The fields of a stats hash.
const (
	statDispatched = "dispatched"
	statApplied    = "applied"
	statFailed     = "failed"
	statDead       = "dead"
	statBacklog    = "backlog"
	statLateness   = "lateness"
	statPaused     = "paused"
	statIncident   = "incident"
)

var statFields = []string{statDispatched, statApplied, statFailed, statDead, statBacklog, statLateness, statPaused, statIncident}

// StatsCount is what a batch adds to a kind's stats: jobs dispatched,
// results applied (successes and failures that changed a row), failures
// (a worker's or a timeout), and results dead-lettered.
type StatsCount struct {
	Dispatched, Applied, Failed, Dead int64
}

// Zero reports whether c counts nothing.
func (c StatsCount) Zero() bool { return c == StatsCount{} }

// StatsAdd is a count of the kind with Lists at At, with the incident mark
// when the kind was in an incident then. The zero StatsAdd writes nothing.
type StatsAdd struct {
	Lists    Lists
	At       time.Time
	Count    StatsCount
	Incident bool
}

// Empty reports whether s writes nothing.
func (s StatsAdd) Empty() bool { return s.Count.Zero() && !s.Incident }

// Merge returns s with o's counts added, when both fall in the same minute
// of the same kind; ok is false otherwise.
func (s StatsAdd) Merge(o StatsAdd) (StatsAdd, bool) {
	if s.Lists.Input != o.Lists.Input || s.At.Unix()/60 != o.At.Unix()/60 {
		return s, false
	}
	s.Count.Dispatched += o.Count.Dispatched
	s.Count.Applied += o.Count.Applied
	s.Count.Failed += o.Count.Failed
	s.Count.Dead += o.Count.Dead
	s.Incident = s.Incident || o.Incident
	return s, true
}

// statsKeys returns the minute's and the ten minutes' hashes of l at at.
func statsKeys(l Lists, at time.Time) (minute, ten string) {
	return l.StatsMinute(at.Unix() / 60), l.StatsTen(at.Unix() / 600)
}

// queueStats queues s's writes on p: no round trip of its own.
func queueStats(ctx context.Context, p redis.Pipeliner, s StatsAdd) {
	if s.Empty() {
		return
	}
	minute, ten := statsKeys(s.Lists, s.At)
	for _, k := range []string{minute, ten} {
		for _, f := range []struct {
			name string
			n    int64
		}{{statDispatched, s.Count.Dispatched}, {statApplied, s.Count.Applied}, {statFailed, s.Count.Failed}, {statDead, s.Count.Dead}} {
			if f.n > 0 {
				p.HIncrBy(ctx, k, f.name, f.n)
			}
		}
		if s.Incident {
			p.HSet(ctx, k, statIncident, 1)
		}
	}
	p.PExpire(ctx, minute, StatsMinuteTTL)
	p.PExpire(ctx, ten, StatsTenTTL)
}

// AddStats writes adds in one round trip (the dispatcher's timeouts and an
// idle poller's counts, when no other write carries them), in MULTI/EXEC,
// which go-redis does not send again once it was written: a lost reply
// returns an error and the counts are written once, where a pipeline sent
// again counted them twice. The caller must not send them again (a lost
// count is better than one counted twice).
func (c *Client) AddStats(ctx context.Context, adds []StatsAdd) error {
	_, err := c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for _, s := range adds {
			queueStats(ctx, p, s)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("count activity for the charts: %w", err)
	}
	return nil
}

// PushCounting pushes jobs as Push does and, in the same round trip,
// counts them as dispatched at at in the kind's stats. lists[i] is the
// list of jobs[i] (l.Input or one of its lanes, l.PriorityInput); nil
// lists: every job goes to l.Input. Each run of jobs bound for the same
// list is one RPUSH, all of them and the count in one pipeline. queued is
// l.Input's length after its push, 0 when no job went to it. A failed
// count does not fail the push (the jobs are queued: the chart misses
// them); a failed RPUSH does, though the runs before it may be queued.
func (c *Client) PushCounting(ctx context.Context, l Lists, lists []string, jobs []Job, at time.Time) (queued int64, err error) {
	if len(jobs) == 0 {
		return 0, nil
	}
	if lists != nil && len(lists) != len(jobs) {
		return 0, fmt.Errorf("push %d jobs with %d lists: one list per job", len(jobs), len(lists))
	}
	listOf := func(i int) string {
		if lists == nil {
			return l.Input
		}
		return lists[i]
	}
	type run struct {
		list string
		n    int
		push *redis.IntCmd
	}
	var runs []run
	e := newEncoded()
	defer e.free() // after the results are read: the commands hold its views
	for i := 0; i < len(jobs); {
		j := i + 1
		for j < len(jobs) && listOf(j) == listOf(i) {
			j++
		}
		if err := e.add(listOf(i), jobs[i:j]); err != nil {
			return 0, err
		}
		runs = append(runs, run{list: listOf(i), n: j - i})
		i = j
	}
	_, _ = c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		first := 0
		for i := range runs {
			runs[i].push = p.RPush(ctx, runs[i].list, e.vals[first:first+runs[i].n]...)
			first += runs[i].n
		}
		queueStats(ctx, p, StatsAdd{Lists: l, At: at, Count: StatsCount{Dispatched: int64(len(jobs))}})
		return nil
	})
	for _, r := range runs {
		n, err := r.push.Result()
		if err != nil {
			return 0, fmt.Errorf("push %d messages to %q: %w", r.n, r.list, err)
		}
		if r.list == l.Input {
			queued = n
		}
	}
	return queued, nil
}

// StatsSample is what the alert gauges saw of a kind at At: its due rows,
// the age of the oldest, and whether the whole kind was paused.
type StatsSample struct {
	At              time.Time
	Backlog         int64
	LatenessSeconds int64
	Paused          bool
}

// sampleScript keeps the highest backlog and lateness of a span: for the
// hashes KEYS[1] (a minute, expiring after ARGV[1] ms) and KEYS[2] (ten
// minutes, ARGV[2] ms), it sets backlog = max(backlog, ARGV[3]), lateness =
// max(lateness, ARGV[4]), and paused = 1 when ARGV[5] is 1.
var sampleScript = `
for i = 1, 2 do
  local k = KEYS[i]
  for j, f in ipairs({'backlog', 'lateness'}) do
    local v = tonumber(ARGV[2 + j])
    if v > (tonumber(redis.call('HGET', k, f)) or -1) then redis.call('HSET', k, f, v) end
  end
  if ARGV[5] == '1' then redis.call('HSET', k, 'paused', 1) end
  redis.call('PEXPIRE', k, ARGV[i])
end
return 1`

// queueSample queues s's write for the kind with lists l on p.
func queueSample(ctx context.Context, p redis.Pipeliner, l Lists, s StatsSample) {
	minute, ten := statsKeys(l, s.At)
	paused := "0"
	if s.Paused {
		paused = "1"
	}
	// EVAL, not EVALSHA: a pipeline does not retry a missing script, and
	// this one is sent once per kind and gauge interval.
	p.Eval(ctx, sampleScript, []string{minute, ten}, StatsMinuteTTL.Milliseconds(), StatsTenTTL.Milliseconds(),
		s.Backlog, s.LatenessSeconds, paused)
}

// StatsPoint is one span (a minute or ten minutes) of a kind's stats; an
// absent hash reads as the zero StatsPoint.
type StatsPoint struct {
	StatsCount
	Backlog, LatenessSeconds int64
	Paused, Incident         bool
}

// ReadStats reads the stats of each kind of lists over n spans from first
// on (Unix minutes, or Unix ten minutes when ten is set), in one round
// trip: points[i][j] is lists[i]'s span first+j.
func (c *Client) ReadStats(ctx context.Context, lists []Lists, ten bool, first int64, n int) ([][]StatsPoint, error) {
	cmds := make([][]*redis.SliceCmd, len(lists))
	_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, l := range lists {
			cmds[i] = make([]*redis.SliceCmd, n)
			for j := range n {
				key := l.StatsMinute(first + int64(j))
				if ten {
					key = l.StatsTen(first + int64(j))
				}
				cmds[i][j] = p.HMGet(ctx, key, statFields...)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the activity for the charts: %w", err)
	}
	points := make([][]StatsPoint, len(lists))
	for i := range lists {
		points[i] = make([]StatsPoint, n)
		for j, cmd := range cmds[i] {
			v := cmd.Val()
			field := func(k int) int64 { x, _ := strconv.ParseInt(str(v[k]), 10, 64); return x } // absent: 0
			points[i][j] = StatsPoint{
				StatsCount:      StatsCount{Dispatched: field(0), Applied: field(1), Failed: field(2), Dead: field(3)},
				Backlog:         field(4),
				LatenessSeconds: field(5),
				Paused:          field(6) > 0,
				Incident:        field(7) > 0,
			}
		}
	}
	return points, nil
}

func str(v any) string {
	s, _ := v.(string)
	return s
}
