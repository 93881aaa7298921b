package refresher

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/internal/teststore"
	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
	"github.com/refresher/refresher/schedule"
)

// clusterBenchRowsEnv sizes BenchmarkClusterThroughput: the rows of each of
// its 6 kinds (default 2000).
const clusterBenchRowsEnv = "REFRESHER_CLUSTER_BENCH_ROWS"

// BenchmarkClusterThroughput compares the service's throughput with 6
// kinds on a Redis Cluster of 3 masters with that on one Redis server, all
// started by the benchmark on this machine, on one MariaDB database:
//
//	go test ./refresher -run '^$' -bench ClusterThroughput -benchtime 3x
//
// Each iteration is a round: one service instance refreshes every row of 6
// new tables once (all due), with a worker per kind answering at once, on
// each of one server, a 3-master cluster, one master and one replica
// (through Sentinel) and a cluster of 3 masters and 3 replicas, one after
// the other, in the same run, the two of each pair in turn first. The
// replicated pair is there because a replica's copy of every write costs
// CPU on the same machine.
//
// It reports each setup's median rows/s over the rounds, and the ratios
// cluster/one-server and cluster-replicas/sentinel: the median of the
// rounds' ratios, each taken between two runs next to each other, which
// the load of a shared machine sways less than the rates. The issue's
// target is cluster/one-server at 1.00 or more. Wall-clock rates swing
// with the machine's load; the CPU per row of the benchmark's process (the
// service and the workers) and of the Redis processes of each setup
// (proc-us/row, redis-us/row) do not, and say where a cluster costs more.
func BenchmarkClusterThroughput(b *testing.B) {
	perKind := 2000
	if v := os.Getenv(clusterBenchRowsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			b.Fatalf("%s=%q: want a number of rows per kind", clusterBenchRowsEnv, v)
		}
		perKind = n
	}
	d := teststore.Open(b, teststore.MySQL)
	setups := []struct {
		name string // the metrics' prefix
		tp   *testenv.RedisTopology
	}{
		{"one-server", testenv.RedisAlone(b)},
		{"cluster", testenv.RedisClusterOf(b, 0)},
		{"sentinel", testenv.RedisSentinel(b)},
		{"cluster-replicas", testenv.RedisClusterOf(b, 1)},
	}
	runs := make([][]throughput, len(setups))
	round := 0
	for b.Loop() {
		for pair := 0; pair < len(setups); pair += 2 {
			for j := range 2 {
				i := pair + (j+round)%2
				runs[i] = append(runs[i], throughputRun(b, d, fmt.Sprintf("r%d%d_", round, i), setups[i].tp, perKind))
			}
		}
		var line strings.Builder
		for i, s := range setups {
			r := runs[i][round]
			fmt.Fprintf(&line, "; %s %.0f rows/s, CPU µs/row %.1f + %.1f in Redis", s.name, r.rate, r.procPerRow, r.redisPerRow)
		}
		b.Logf("round %d%s", round, line.String())
		round++
	}
	med := func(i int, f func(throughput) float64) float64 {
		v := make([]float64, len(runs[i]))
		for k, r := range runs[i] {
			v[k] = f(r)
		}
		return medianOf(v)
	}
	for i, s := range setups {
		b.ReportMetric(med(i, func(r throughput) float64 { return r.rate }), s.name+"-rows/s")
		b.ReportMetric(med(i, func(r throughput) float64 { return r.procPerRow }), s.name+"-proc-us/row")
		b.ReportMetric(med(i, func(r throughput) float64 { return r.redisPerRow }), s.name+"-redis-us/row")
	}
	for pair := 0; pair < len(setups); pair += 2 {
		ratios := make([]float64, len(runs[pair]))
		for k := range ratios {
			ratios[k] = runs[pair+1][k].rate / runs[pair][k].rate
		}
		b.Logf("6 kinds x %d rows: %s/%s by round %.2f", perKind, setups[pair+1].name, setups[pair].name, ratios)
		b.ReportMetric(medianOf(ratios), setups[pair+1].name+"/"+setups[pair].name)
	}
	b.ReportMetric(0, "ns/op") // a round's time says nothing: the rates do
}

// throughput is one run of throughputRun: rows per second, and CPU per row
// of this process and of the topology's Redis processes.
type throughput struct{ rate, procPerRow, redisPerRow float64 }

// medianOf returns the median of v (0 for none).
func medianOf(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// throughputRun creates 6 tables of perKind rows due now in d, named with
// prefix, runs one service on tp until every row was refreshed once, and
// returns what it took from the service's start.
func throughputRun(tb testing.TB, d *teststore.DB, prefix string, tp *testenv.RedisTopology, perKind int) throughput {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	topo := redisio.TopologyOf(tp.URL)
	sched, err := schedule.Parse(dailyAt14)
	if err != nil {
		tb.Fatal(err)
	}
	var kinds []Kind
	var tables []string
	now := time.Now().UTC()
	for i := range 6 {
		name := fmt.Sprintf("%sitems%d", prefix, i)
		d.Exec(tb, strings.Replace(itemsTable[teststore.MySQL], "TABLE items", "TABLE "+name, 1))
		tables = append(tables, name)
		kinds = append(kinds, Kind{
			Name:     name,
			Table:    models.Table{Name: name, Key: "uid", Payload: []string{"input_url"}},
			Lists:    redisio.DefaultListsOn(topo, name),
			Schedule: sched,
			Policy:   policy.Policy{Kind: name, Timeout: time.Minute, Retry: policy.DefaultRetry},
		})
	}
	if _, err := d.Store.Migrate(ctx, tables, io.Discard, false); err != nil {
		tb.Fatal(err)
	}
	for _, tbl := range tables {
		for start := 0; start < perKind; start += 1000 {
			var sb strings.Builder
			var args []any
			sb.WriteString("INSERT INTO " + tbl + " (uid, input_url, refresh_at) VALUES ")
			for i := start; i < min(start+1000, perKind); i++ {
				if i > start {
					sb.WriteString(",")
				}
				sb.WriteString("(?,?,?)")
				args = append(args, fmt.Sprintf("m%06d", i), "https://example.com/", now)
			}
			d.Exec(tb, sb.String(), args...)
		}
	}
	var clients []redis.UniversalClient
	defer func() {
		for _, c := range clients {
			_ = c.Close()
		}
	}()
	open := func() redis.UniversalClient {
		rdb, err := redisio.Open(ctx, tp.URL, redisio.Options{PoolSize: RedisPoolSize(len(kinds))})
		if err != nil {
			tb.Fatal(err)
		}
		clients = append(clients, rdb)
		return rdb
	}
	var workers []chan struct{}
	defer func() {
		cancel()
		for _, done := range workers {
			<-done
		}
	}()
	for _, k := range kinds {
		w := &failoverWorker{rdb: open(), lists: k.Lists, answered: map[string]redisio.Result{}}
		done := make(chan struct{})
		go func() { defer close(done); w.run(ctx) }()
		workers = append(workers, done)
	}
	cfg := Config{
		Kinds:      kinds,
		InstanceID: prefix + "bench",
		BatchSize:  500,
		MaxSleep:   20 * time.Millisecond,
		FetchBlock: 100 * time.Millisecond,
		Heartbeat:  2 * time.Second,
		Clock:      SystemClock{},
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
		Observer:   Observer{AfterApply: func(string, int) { testenv.Wake() }},
	}
	svc, err := New(cfg, d.Store, redisio.New(open()))
	if err != nil {
		tb.Fatal(err)
	}
	proc0, redis0 := testenv.ProcessCPU(os.Getpid()), tp.CPU()
	began := time.Now()
	svcCtx, stop := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = svc.Run(svcCtx) }()
	total := 6 * perKind
	var union strings.Builder
	for i, tbl := range tables {
		if i > 0 {
			union.WriteString(" + ")
		}
		union.WriteString("(SELECT COUNT(*) FROM " + tbl + " WHERE refresh_last_success_at IS NOT NULL)")
	}
	testenv.EventuallyNil(tb, 5*time.Minute, "every row refreshed", func() error {
		var n int
		if err := d.SQL.QueryRow("SELECT " + union.String()).Scan(&n); err != nil {
			return err
		}
		if n < total {
			return fmt.Errorf("%d of %d rows refreshed", n, total)
		}
		return nil
	})
	elapsed := time.Since(began)
	proc, red := testenv.ProcessCPU(os.Getpid())-proc0, tp.CPU()-redis0
	stop()
	<-stopped
	perRow := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(total) }
	return throughput{
		rate:        float64(total) / elapsed.Seconds(),
		procPerRow:  perRow(proc),
		redisPerRow: perRow(red),
	}
}
