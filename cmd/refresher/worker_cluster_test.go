package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/redisio"
)

// The reference worker takes a redis+cluster:// URL and, without --input and
// --output, the service's default lists on a cluster ("{<kind>}-input" and
// "{<kind>}-output").
func TestWorkerOnRedisCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Redis Cluster")
	}
	tp := testenv.RedisCluster(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "id\n1\n")
	}))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rdb, err := redisio.Open(ctx, tp.URL, redisio.Options{})
	require.NoError(t, err)
	defer rdb.Close()

	var stderr testenv.SyncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"worker", "--kind", "big_tables", "--redis", tp.URL,
			"--allow-networks", "127.0.0.0/8,::1/128"}, io.Discard, &stderr)
	}()
	job, err := json.Marshal(redisio.Job{Kind: "big_tables", UID: "1", AttemptUID: "a1", AttemptNo: 1,
		TimeoutAt: time.Now().Add(time.Hour), Payload: map[string]any{"input_url": srv.URL + "/data.csv"}})
	require.NoError(t, err)
	require.NoError(t, rdb.RPush(ctx, "{big_tables}-input", job).Err())
	kv, err := rdb.BLPop(ctx, 10*time.Second, "{big_tables}-output").Result()
	require.NoError(t, err, "no result within 10s; worker log:\n%s", stderr.String())
	var res redisio.Result
	require.NoError(t, json.Unmarshal([]byte(kv[1]), &res))
	require.Equal(t, redisio.Result{UID: "1", AttemptUID: "a1", Type: redisio.ResultSuccess, Status: "fetched"}, res)
	cancel()
	require.NoError(t, <-done)
}
