package refresher

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/models/mysqlstore"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
)

// The service counts what it did for the dashboard's charts, per minute of
// its clock: jobs dispatched, results applied, failures, dead letters, and
// the minutes of an incident; with the guard on or off.
func TestChartsCountWhatTheServiceDid(t *testing.T) {
	t.Parallel()
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprintf("guard off %v", off), func(t *testing.T) {
			t.Parallel()
			b := setup(t, setupOpts{timeout: time.Hour, retry: "delays:1h"}) // no retry within the test
			b.kind.Policy.Guard = policy.Guard{Off: off, MinResults: 10}
			b.cfg.Kinds = []Kind{b.kind}
			uids := make([]string, 20)
			for i := range uids {
				uids[i] = fmt.Sprintf("m%02d", i)
			}
			b.insert(uids...)
			trips := &statsTrips{}
			b.rdb.AddHook(trips)
			b.start(nil)
			jobs := b.jobsByUID(len(uids))
			var rs []redisio.Result
			for i, uid := range uids {
				r := redisio.Result{UID: uid, AttemptUID: jobs[uid].AttemptUID, Type: "success"}
				if i < 18 { // 18 of 20 fail: an incident, with the guard on
					r.Type, r.Reason = "failure", "HTTP 503"
				}
				rs = append(rs, r)
			}
			b.sendAll(rs...)
			b.sendRaw("not a result") // a dead letter

			minute := b.clock.Now().Unix() / 60
			want := redisio.StatsPoint{StatsCount: redisio.StatsCount{Dispatched: 20, Applied: 20, Failed: 18, Dead: 1}, Incident: !off}
			var got redisio.StatsPoint
			testenv.EventuallyNil(t, 20*time.Second, "the minute's stats", func() error {
				p, err := b.rio.ReadStats(context.Background(), []redisio.Lists{b.kind.Lists}, false, minute, 1)
				if err != nil {
					return err
				}
				if got = p[0][0]; got != want {
					return fmt.Errorf("got %+v, want %+v", got, want)
				}
				return nil
			})
			if !off {
				require.Zero(t, trips.alone.Load(), "round trips that only wrote the charts' counts")
			}
			require.NotZero(t, trips.riding.Load())
		})
	}
}

// statsTrips counts the round trips that write the charts' stats: riding
// on a write the service makes anyway (the push of jobs, the incident
// window's read), or alone.
type statsTrips struct{ riding, alone atomic.Int64 }

func (*statsTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (s *statsTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		s.count([]redis.Cmder{cmd})
		return next(ctx, cmd)
	}
}

func (s *statsTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		s.count(cmds)
		return next(ctx, cmds)
	}
}

func (s *statsTrips) count(cmds []redis.Cmder) {
	stats, other := false, false
	for _, c := range cmds {
		switch c.Name() {
		case "rpush", "hmget":
			other = true
		case "hincrby", "hset":
			if k, _ := c.Args()[1].(string); strings.Contains(k, ":stats") {
				stats = true
			}
		}
	}
	switch {
	case stats && other:
		s.riding.Add(1)
	case stats:
		s.alone.Add(1)
	}
}

// The instance that counts the gauges samples the due backlog, the oldest
// due row's age and the kind's pause into the minute's stats; the minute
// keeps the highest of its samples.
func TestChartsSampleTheGauges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := gaugeTable(t, "s")
	now := time.Date(2026, 3, 4, 14, 0, 0, 0, time.UTC)
	store := mysqlstore.New(db)
	tbl := models.Table{Name: "s", Key: "id"}
	rows := []models.Row{
		{Key: "1", State: policy.State{RefreshAt: now.Add(-90 * time.Second)}},
		{Key: "2", State: policy.State{RefreshAt: now.Add(-time.Second)}},
		{Key: "3", State: policy.State{RefreshAt: now.Add(time.Hour)}},
	}
	for _, r := range rows {
		_, err := db.Exec("INSERT INTO s (id) VALUES (?)", r.Key)
		require.NoError(t, err)
	}
	require.NoError(t, store.Tx(ctx, func(tx models.Tx) error { return tx.Save(ctx, tbl, rows) }))
	rdb, prefix := testenv.Redis(t)
	lists := redisio.DefaultLists(prefix + "s")
	rio := redisio.New(rdb)
	require.NoError(t, NewAdmin(store, rio).PauseKind(ctx, lists, PauseInfo{Note: "maintenance"}))
	tick := func(at time.Time) {
		t.Helper()
		g := NewGauges(prometheus.NewRegistry(), GaugeConfig{Kinds: []GaugeKind{{Name: "s", Table: tbl, Lists: lists}},
			Inspector: store, Redis: rio, Interval: time.Minute, Clock: fixedClock(at)})
		rdb.Del(ctx, lists.GaugeLock())
		computed, err := g.Tick(ctx)
		require.NoError(t, err)
		require.True(t, computed)
	}
	tick(now)
	tick(now.Add(30 * time.Second)) // later in the minute: older, and row 3 still waits
	_, err := db.Exec("UPDATE s SET refresh_at = NULL WHERE id IN ('1', '2')")
	require.NoError(t, err)
	tick(now.Add(50 * time.Second)) // drained: the minute keeps its highs

	p, err := rio.ReadStats(ctx, []redisio.Lists{lists}, false, now.Unix()/60, 1)
	require.NoError(t, err)
	require.Equal(t, redisio.StatsPoint{Backlog: 2, LatenessSeconds: 120, Paused: true}, p[0][0])
}

// The charts' counts of several instances add up: two instances, each
// running alone in turn within one minute of the clock, dispatch and apply
// 20 models each (a failure among them, and a dead letter each), and the
// minute counts 40 dispatched, 40 applied, 2 failed, 2 dead-lettered.
func TestChartsCountsOfInstancesAddUp(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{timeout: time.Hour, retry: "delays:1h"})
	minute := b.clock.Now().Unix() / 60
	for i, id := range []string{"test-a", "test-b"} {
		uids := make([]string, 20)
		for j := range uids {
			uids[j] = fmt.Sprintf("%s-%02d", id, j)
		}
		b.insert(uids...)
		svc, err := New(b.config(func(c *Config) { c.InstanceID = id }), b.store, b.rio)
		require.NoError(t, err)
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- svc.Run(ctx) }()
		jobs := b.jobsByUID(len(uids))
		var rs []redisio.Result
		for j, uid := range uids {
			r := redisio.Result{UID: uid, AttemptUID: jobs[uid].AttemptUID, Type: "success"}
			if j == 0 {
				r.Type, r.Reason = "failure", "HTTP 503"
			}
			rs = append(rs, r)
		}
		b.sendAll(rs...)
		b.sendRaw("not a result")
		testenv.EventuallyNil(t, 20*time.Second, id+"'s results applied", func() error {
			n, err := b.rdb.LLen(context.Background(), b.kind.Lists.Dead).Result()
			if err != nil || n != int64(i+1) {
				return fmt.Errorf("%d dead letters, %v", n, err)
			}
			for _, uid := range uids[1:] {
				if st := b.state(uid); st.LastSuccessAt.IsZero() {
					return fmt.Errorf("%s not applied yet", uid)
				}
			}
			return nil
		})
		stop() // its poller writes the counts it holds as it stops
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
	}
	want := redisio.StatsCount{Dispatched: 40, Applied: 40, Failed: 2, Dead: 2}
	p, err := b.rio.ReadStats(context.Background(), []redisio.Lists{b.kind.Lists}, false, minute, 1)
	require.NoError(t, err)
	require.Equal(t, want, p[0][0].StatsCount, "the minute's counts of both instances")
}
