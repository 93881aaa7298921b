package refresher

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/internal/teststore"
	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
	"github.com/refresher/refresher/schedule"
)

// clusterBenchEnv gates TestClusterThroughput: set it to the number of rows
// per kind (e.g. 2000).
const clusterBenchEnv = "REFRESHER_CLUSTER_BENCH"

// TestClusterThroughput compares the service's throughput with 6 kinds on
// a Redis Cluster of 3 masters with that on one Redis server, all started
// by the test on this machine, on one MariaDB database, in one run: one
// service instance refreshes every row of 6 tables once (all due), with a
// worker per kind answering at once. It compares, too, a cluster of 3
// masters and 3 replicas with one master and one replica (through
// Sentinel), since a replica's copy of every write costs CPU on the same
// machine. The runs alternate, three times over, and the best of each
// counts. It logs the rows per second of each and the ratios, and fails
// when the 3-master cluster's is below 0.9 of one server's (a tenth for the
// noise of a shared machine); the replicated pair is logged only, as its
// figures vary most on a machine that runs 8 Redis processes at once.
func TestClusterThroughput(t *testing.T) {
	perKind, _ := strconv.Atoi(os.Getenv(clusterBenchEnv))
	if perKind <= 0 {
		t.Skipf("set %s to the rows per kind (e.g. 2000) to compare a Redis Cluster's throughput with one server's", clusterBenchEnv)
	}
	b := setup(t, setupOpts{store: teststore.MySQL})
	setups := []struct{ name, url string }{
		{"one server", testenv.RedisServer(t)},
		{"cluster 3 masters", testenv.RedisClusterOf(t, 0).URL},
		{"master+replica (Sentinel)", testenv.RedisSentinel(t).URL},
		{"cluster 3 masters+3 replicas", testenv.RedisClusterOf(t, 1).URL},
	}
	best := make([]float64, len(setups))
	for round := range 3 {
		for i, s := range setups {
			rate := throughputRun(t, b, fmt.Sprintf("r%d%d_", round, i), s.url, perKind)
			t.Logf("round %d, %s: %.0f rows/s", round, s.name, rate)
			best[i] = max(best[i], rate)
		}
	}
	for i := 0; i < len(setups); i += 2 {
		ratio := best[i+1] / best[i]
		t.Logf("6 kinds x %d rows: %s %.0f rows/s, %s %.0f rows/s, ratio %.2f",
			perKind, setups[i].name, best[i], setups[i+1].name, best[i+1], ratio)
		if i == 0 {
			require.GreaterOrEqual(t, ratio, 0.9, "%s's throughput against %s's", setups[i+1].name, setups[i].name)
		}
	}
}

// throughputRun creates 6 tables of perKind rows due now, named with
// prefix, runs one service on url until every row was refreshed once, and
// returns the rows per second.
func throughputRun(t *testing.T, b *testBundle, prefix, url string, perKind int) float64 {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	topo := redisio.TopologyOf(url)
	sched, err := schedule.Parse(dailyAt14)
	require.NoError(t, err)
	var kinds []Kind
	var tables []string
	now := time.Now().UTC()
	for i := range 6 {
		name := fmt.Sprintf("%sitems%d", prefix, i)
		b.exec(strings.Replace(itemsTable[teststore.MySQL], "TABLE items", "TABLE "+name, 1))
		tables = append(tables, name)
		kinds = append(kinds, Kind{
			Name:     name,
			Table:    models.Table{Name: name, Key: "uid", Payload: []string{"input_url"}},
			Lists:    redisio.DefaultListsOn(topo, name),
			Schedule: sched,
			Policy:   policy.Policy{Kind: name, Timeout: time.Minute, Retry: policy.DefaultRetry},
		})
	}
	_, err = b.store.Migrate(ctx, tables, io.Discard, false)
	require.NoError(t, err)
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
			b.exec(sb.String(), args...)
		}
	}
	open := func() redis.UniversalClient {
		rdb, err := redisio.Open(ctx, url, redisio.Options{PoolSize: RedisPoolSize(len(kinds))})
		require.NoError(t, err)
		t.Cleanup(func() { _ = rdb.Close() })
		return rdb
	}
	for _, k := range kinds {
		w := &failoverWorker{rdb: open(), lists: k.Lists, answered: map[string]redisio.Result{}}
		done := make(chan struct{})
		go func() { defer close(done); w.run(ctx) }()
		defer func() { cancel(); <-done }()
	}
	began := time.Now()
	r := b.runOn(ctx, b.store, redisio.New(open()), func(c *Config) {
		c.Kinds = kinds
		c.InstanceID = prefix + "bench"
		c.Clock = SystemClock{}
		c.BatchSize = 500
	})
	total := 6 * perKind
	testenv.Eventually(t, 5*time.Minute, "every row refreshed", func() bool {
		n := 0
		for _, tbl := range tables {
			var c int
			require.NoError(t, b.db.QueryRow("SELECT COUNT(*) FROM "+tbl+" WHERE refresh_last_success_at IS NOT NULL").Scan(&c))
			n += c
		}
		return n == total
	})
	elapsed := time.Since(began)
	r.stop()
	return float64(total) / elapsed.Seconds()
}
