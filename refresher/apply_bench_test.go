package refresher

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/internal/teststore"
	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
	"github.com/refresher/refresher/schedule"
)

// BenchmarkApplyPass runs one poller pass (fetch, decode, the plain
// successes' write, commit, ack) over a batch of success results, one per
// row of a table shaped like the bench's, on each store, and reports the
// test process's CPU per result (user and system, from getrusage around
// the passes only): the service's own cost of the success path's second
// half, as BenchmarkDispatchPass is of its first. The results are written
// as the workers write them. Neither the database's nor Redis's CPU is in
// it.
//
// The SQLite table is ANALYZEd after seeding, as the bench's is;
// "sqlite-unanalyzed" runs on the table without statistics, as a user's
// table may be (the service never runs ANALYZE).
//
//	go test ./refresher -run '^$' -bench ApplyPass -benchtime 20x
func BenchmarkApplyPass(b *testing.B) {
	for _, store := range allStores {
		b.Run(store, func(b *testing.B) { benchApplyPass(b, store, DefaultBatchSize, true) })
	}
	b.Run(teststore.SQLite+"-unanalyzed", func(b *testing.B) { benchApplyPass(b, teststore.SQLite, DefaultBatchSize, false) })
}

func benchApplyPass(b *testing.B, store string, rows int, analyze bool) {
	ctx := context.Background()
	d := teststore.Open(b, store)
	rdb, prefix := testenv.Redis(b)
	seedBenchTable(b, d, store, "amodels", rows)
	if store == teststore.SQLite && analyze {
		d.Exec(b, "ANALYZE") // as the bench seeds its table (bench/sqlite.go)
	}
	sched, err := schedule.Parse(dailyAt14)
	if err != nil {
		b.Fatal(err)
	}
	kind := Kind{
		Name:     "amodels",
		Table:    models.Table{Name: "amodels", Key: "id", Payload: []string{"input_url"}},
		Lists:    redisio.DefaultLists(prefix + "amodels"),
		Schedule: sched,
		Policy:   policy.Policy{Kind: "amodels"},
	}
	clock := &testClock{now: t0}
	svc, err := New(Config{
		Kinds: []Kind{kind}, InstanceID: "bench", BatchSize: rows, Clock: clock,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}, d.Store, redisio.New(rdb))
	if err != nil {
		b.Fatal(err)
	}
	disp := newTestDispatcher(svc)
	poll := &poller{kindRunner: disp.kindRunner, wake: make(chan struct{}, 1), schedules: disp.schedules,
		drain: svc.rdb.Drain(kind.Lists, "bench", svc.cfg.Heartbeat)}
	var cpu time.Duration
	for it := 0; b.Loop(); it++ {
		b.StopTimer()
		// Every row started again, its job answered with a success.
		d.Exec(b, "UPDATE amodels SET refresh_at = ?, refresh_attempt_uid = NULL, refresh_attempt_at = NULL, refresh_timeout_at = NULL, refresh_attempt_no = 0", t0)
		clock.Advance(time.Second)
		n, _, _, err := disp.runOnce(ctx)
		m, perr := disp.settlePush()
		if n+m != rows || err != nil || perr != nil {
			b.Fatalf("pass %d started %d of %d rows: %v %v", it, n+m, rows, err, perr)
		}
		jobs, err := rdb.LRange(ctx, kind.Lists.Input, 0, -1).Result()
		if err != nil || len(jobs) != rows {
			b.Fatalf("%d jobs: %v", len(jobs), err)
		}
		results := make([]any, len(jobs))
		for i, raw := range jobs {
			var j struct{ UID, AttemptUID string }
			if err := json.Unmarshal([]byte(raw), &struct {
				UID        *string `json:"uid"`
				AttemptUID *string `json:"attempt_uid"`
			}{&j.UID, &j.AttemptUID}); err != nil {
				b.Fatal(err)
			}
			results[i] = `{"uid":"` + j.UID + `","attempt_uid":"` + j.AttemptUID + `","type":"success"}`
		}
		if err := rdb.Del(ctx, kind.Lists.Input).Err(); err != nil {
			b.Fatal(err)
		}
		if err := rdb.RPush(ctx, kind.Lists.Output, results...).Err(); err != nil {
			b.Fatal(err)
		}
		clock.Advance(time.Second)
		before := processCPU()
		b.StartTimer()
		applied, err := poll.runOnce(ctx)
		b.StopTimer()
		cpu += processCPU() - before
		if err != nil || applied != rows {
			b.Fatalf("pass %d applied %d of %d results: %v", it, applied, rows, err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N*rows), "cpu-µs/result")
}
