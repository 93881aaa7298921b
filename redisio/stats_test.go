package redisio

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
)

// The charts' stats: every writer's counts add up in the minute's and the
// ten minutes' hashes, samples keep the span's highest backlog and
// lateness, marks stay set, and a read returns the spans in order, absent
// ones as zero.
func TestStatsAddUpAndRead(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	a, b := New(rdb), New(rdb) // two instances
	ctx := context.Background()
	l := DefaultLists(prefix + "items")
	at := time.Date(2020, 1, 1, 10, 3, 10, 0, time.UTC) // minute 10:03 of the ten minutes 10:00
	minute := at.Unix() / 60
	job := func(uid string) Job {
		return Job{Kind: "items", UID: uid, AttemptUID: "a" + uid, AttemptNo: 1, TimeoutAt: at}
	}

	_, err := a.PushCounting(ctx, l, nil, []Job{job("1"), job("2")}, at)
	require.NoError(t, err)
	_, err = b.PushCounting(ctx, l, nil, []Job{job("3")}, at.Add(20*time.Second))
	require.NoError(t, err)
	require.EqualValues(t, 3, rdb.LLen(ctx, l.Input).Val(), "the jobs are pushed")
	_, _, _, err = a.CountThenRead(ctx, []Tally{{Stats: StatsAdd{Lists: l, At: at, Count: StatsCount{Applied: 5, Failed: 2, Dead: 1}}}}, nil, "")
	require.NoError(t, err)
	require.NoError(t, b.AddStats(ctx, []StatsAdd{
		{Lists: l, At: at, Count: StatsCount{Applied: 1}, Incident: true},
		{Lists: l, At: at.Add(time.Minute), Count: StatsCount{Failed: 4}}, // 10:04
	}))
	for _, s := range []StatsSample{{At: at, Backlog: 40, LatenessSeconds: 90}, {At: at, Backlog: 30, LatenessSeconds: 120, Paused: true}} {
		_, err := a.ShareGauges(ctx, []Lists{l}, [][]byte{[]byte("{}")}, []StatsSample{s}, time.Minute)
		require.NoError(t, err)
	}

	got, err := a.ReadStats(ctx, []Lists{l}, false, minute-1, 3)
	require.NoError(t, err)
	require.Equal(t, [][]StatsPoint{{
		{},
		{StatsCount: StatsCount{Dispatched: 3, Applied: 6, Failed: 2, Dead: 1}, Backlog: 40, LatenessSeconds: 120, Paused: true, Incident: true},
		{StatsCount: StatsCount{Failed: 4}},
	}}, got)
	ten, err := a.ReadStats(ctx, []Lists{l}, true, at.Unix()/600, 1)
	require.NoError(t, err)
	require.Equal(t, StatsPoint{StatsCount: StatsCount{Dispatched: 3, Applied: 6, Failed: 6, Dead: 1}, Backlog: 40, LatenessSeconds: 120, Paused: true, Incident: true}, ten[0][0])

	mttl, tttl := rdb.PTTL(ctx, l.StatsMinute(minute)).Val(), rdb.PTTL(ctx, l.StatsTen(at.Unix()/600)).Val()
	require.True(t, mttl > StatsMinuteTTL-time.Minute && mttl <= StatsMinuteTTL, "minute ttl %s", mttl)
	require.True(t, tttl > StatsTenTTL-time.Minute && tttl <= StatsTenTTL, "ten ttl %s", tttl)

	// The cost the docs give: a full hash's bytes in Redis, key included.
	bytes := rdb.MemoryUsage(ctx, l.StatsMinute(minute)).Val()
	t.Logf("a full per-minute stats hash takes %d bytes (key %q)", bytes, l.StatsMinute(minute))
	require.Less(t, bytes, int64(250))
}

// Counts of one minute merge; another minute's do not.
func TestStatsMerge(t *testing.T) {
	l := DefaultLists("items")
	at := time.Date(2020, 1, 1, 10, 3, 10, 0, time.UTC)
	s := StatsAdd{Lists: l, At: at, Count: StatsCount{Applied: 1, Dead: 1}}
	m, ok := s.Merge(StatsAdd{Lists: l, At: at.Add(40 * time.Second), Count: StatsCount{Applied: 2, Failed: 1}, Incident: true})
	require.True(t, ok)
	require.Equal(t, StatsAdd{Lists: l, At: at, Count: StatsCount{Applied: 3, Failed: 1, Dead: 1}, Incident: true}, m)
	_, ok = s.Merge(StatsAdd{Lists: l, At: at.Add(50 * time.Second)}) // 10:04
	require.False(t, ok)
}

// PushCounting with lanes: each job goes to its own list, queued is the
// input list's length (0 when no job went to it), and every job is counted
// as dispatched with the push.
func TestPushCountingLanes(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	c := New(rdb)
	ctx := context.Background()
	l := DefaultLists(prefix + "items")
	at := time.Date(2020, 1, 1, 10, 3, 10, 0, time.UTC)
	job := func(uid string) Job {
		return Job{Kind: "items", UID: uid, AttemptUID: "a" + uid, AttemptNo: 1, TimeoutAt: at}
	}
	p0 := l.PriorityInput(0)

	queued, err := c.PushCounting(ctx, l, []string{p0, p0, l.Input}, []Job{job("1"), job("2"), job("3")}, at)
	require.NoError(t, err)
	require.EqualValues(t, 1, queued, "the input list's length")
	require.Equal(t, []string{"1", "2"}, uids(t, rdb.LRange(ctx, p0, 0, -1).Val()))
	require.Equal(t, []string{"3"}, uids(t, rdb.LRange(ctx, l.Input, 0, -1).Val()))

	queued, err = c.PushCounting(ctx, l, []string{p0}, []Job{job("4")}, at)
	require.NoError(t, err)
	require.Zero(t, queued, "no job went to the input list")

	_, err = c.PushCounting(ctx, l, []string{p0}, []Job{job("5"), job("6")}, at)
	require.ErrorContains(t, err, "one list per job")

	got, err := c.ReadStats(ctx, []Lists{l}, false, at.Unix()/60, 1)
	require.NoError(t, err)
	require.EqualValues(t, 4, got[0][0].Dispatched, "every pushed job is counted, lanes included")
}

// uids returns the uid of each encoded job.
func uids(t *testing.T, msgs []string) []string {
	t.Helper()
	out := make([]string, len(msgs))
	for i, m := range msgs {
		var j struct {
			UID string `json:"uid"`
		}
		require.NoError(t, json.Unmarshal([]byte(m), &j))
		out[i] = j.UID
	}
	return out
}
