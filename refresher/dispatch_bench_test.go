package refresher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/internal/teststore"
	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
	"github.com/refresher/refresher/schedule"
)

// BenchmarkDispatchPass runs one dispatcher pass (due gate, pauses, claim,
// policy.Due, Save, commit, push) over a batch of due rows of a table
// shaped like the bench's (an integer key, one payload column), on each
// store, and reports the test process's CPU per row (user and system, from
// getrusage around the passes only): the service's own cost of starting an
// attempt, which the machine's load moves much less than the wall time.
// The database's own CPU is not in it.
//
//	go test ./refresher -run '^$' -bench DispatchPass -benchtime 20x
func BenchmarkDispatchPass(b *testing.B) {
	for _, store := range allStores {
		b.Run(store, func(b *testing.B) { benchDispatchPass(b, store, DefaultBatchSize) })
	}
}

func benchDispatchPass(b *testing.B, store string, rows int) {
	ctx := context.Background()
	d := teststore.Open(b, store)
	rdb, prefix := testenv.Redis(b)
	seedBenchTable(b, d, store, "dmodels", rows)
	sched, err := schedule.Parse(dailyAt14)
	if err != nil {
		b.Fatal(err)
	}
	kind := Kind{
		Name:     "dmodels",
		Table:    models.Table{Name: "dmodels", Key: "id", Payload: []string{"input_url"}},
		Lists:    redisio.DefaultLists(prefix + "dmodels"),
		Schedule: sched,
		Policy:   policy.Policy{Kind: "dmodels"},
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
	var cpu time.Duration
	for it := 0; b.Loop(); it++ {
		b.StopTimer()
		// Every row due again, no attempt running; the jobs of the last
		// pass gone.
		d.Exec(b, "UPDATE dmodels SET refresh_at = ?, refresh_attempt_uid = NULL, refresh_attempt_at = NULL, refresh_timeout_at = NULL, refresh_attempt_no = 0", t0)
		if err := rdb.Del(ctx, kind.Lists.Input).Err(); err != nil {
			b.Fatal(err)
		}
		clock.Advance(time.Second)
		before := processCPU()
		b.StartTimer()
		n, _, _, err := disp.runOnce(ctx)
		// A full batch is pushed behind the next pass: its push is part
		// of this pass's cost.
		m, perr := disp.settlePush()
		n, err = n+m, errors.Join(err, perr)
		b.StopTimer()
		cpu += processCPU() - before
		if err != nil || n != rows {
			b.Fatalf("pass %d started %d of %d rows: %v", it, n, rows, err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N*rows), "cpu-µs/row")
}

// newTestDispatcher builds the dispatcher of the service's first kind as
// Run does, without starting its loop.
func newTestDispatcher(s *Service) *dispatcher {
	k := s.cfg.Kinds[0]
	r := &kindRunner{
		cfg: s.cfg, kind: k, store: k.Store, rdb: s.rdb, clock: s.cfg.Clock,
		log: s.cfg.Logger, metrics: s.cfg.Metrics, activity: &activity{},
		fatal: func(error) {}, throttle: newThrottle(s.rdb, k),
	}
	r.incident = newIncident(s.rdb, k, r.log, s.cfg.Metrics)
	return &dispatcher{kindRunner: r, wake: make(chan struct{}, 1), schedules: newSchedules(k),
		gate: &dueGate{store: k.Store, table: k.Table, clock: s.cfg.Clock}}
}

// processCPU is the CPU time (user and system) the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// seedBenchTable creates table as the bench's (on SQLite the key is the
// rowid), migrates it and inserts rows rows with ids 1..rows, all due.
func seedBenchTable(b *testing.B, d *teststore.DB, store, table string, rows int) {
	b.Helper()
	idType := "BIGINT"
	if store == teststore.SQLite {
		idType = "INTEGER"
	}
	d.Exec(b, "CREATE TABLE "+table+" (id "+idType+" NOT NULL PRIMARY KEY, input_url VARCHAR(255) NOT NULL)")
	if _, err := d.Store.Migrate(context.Background(), []string{table}, io.Discard, false); err != nil {
		b.Fatal(err)
	}
	for lo := 1; lo <= rows; lo += 250 {
		var q strings.Builder
		var args []any
		q.WriteString("INSERT INTO " + table + " (id, input_url) VALUES ")
		for id := lo; id < lo+250 && id <= rows; id++ {
			if id > lo {
				q.WriteString(", ")
			}
			q.WriteString("(?, ?)")
			args = append(args, id, fmt.Sprintf("https://example.com/exports/%d.csv", id))
		}
		d.Exec(b, q.String(), args...)
	}
}
