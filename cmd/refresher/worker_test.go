package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/redisio"
)

func TestWorkerSettings(t *testing.T) {
	t.Parallel()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	tests := []struct {
		name  string
		env   map[string]string
		flags workerSettings
		want  workerSettings
	}{
		{"defaults", nil, workerSettings{Kind: "big_tables"},
			workerSettings{Kind: "big_tables", RedisURL: "redis://127.0.0.1:6379/0", Concurrency: 4, HTTPTimeout: 30 * time.Second, MaxBodyBytes: 100 << 20}},
		{"environment", map[string]string{"REFRESHER_REDIS": "redis://redis:6379/1", "REFRESHER_REDIS_PREFIX": "blog:", "REFRESHER_WORKER_ALLOW_PRIVATE_NETWORKS": "true",
			"REFRESHER_WORKER_ALLOW_NETWORKS": "10.1.0.0/16, fd00::/8", "REFRESHER_WORKER_MAX_BODY_BYTES": "2048"}, workerSettings{Kind: "k"},
			workerSettings{Kind: "k", RedisURL: "redis://redis:6379/1", Prefix: "blog:", Concurrency: 4, HTTPTimeout: 30 * time.Second, MaxBodyBytes: 2048,
				AllowPrivateNetworks: true, AllowNetworks: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("fd00::/8")}}},
		{"flags win", map[string]string{"REFRESHER_REDIS": "redis://redis:6379/1", "REFRESHER_WORKER_ALLOW_NETWORKS": "10.1.0.0/16"},
			workerSettings{Kind: "k", RedisURL: "redis://other:6379/2", Input: "in", Output: "out", Concurrency: 9, HTTPTimeout: time.Second,
				MaxBodyBytes: 10, AllowNetworks: []netip.Prefix{netip.MustParsePrefix("10.2.0.0/16")}},
			workerSettings{Kind: "k", RedisURL: "redis://other:6379/2", Input: "in", Output: "out", Concurrency: 9, HTTPTimeout: time.Second,
				MaxBodyBytes: 10, AllowNetworks: []netip.Prefix{netip.MustParsePrefix("10.2.0.0/16")}}},
	}
	for _, tt := range tests {
		e, err := workerEnv(env(tt.env))
		require.NoError(t, err)
		got := workerDefaults().overlay(e).overlay(tt.flags)
		require.Equal(t, tt.want, got, tt.name)
	}
	for name, val := range map[string]string{
		"REFRESHER_WORKER_ALLOW_PRIVATE_NETWORKS": "yes please",
		"REFRESHER_WORKER_ALLOW_NETWORKS":         "10.0.0.0/8,intranet",
		"REFRESHER_WORKER_MAX_BODY_BYTES":         "100MB",
	} {
		_, err := workerEnv(env(map[string]string{name: val}))
		require.ErrorContains(t, err, "worker: "+name+": ", name)
	}
}

func TestWorkerCommandErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		err  string
	}{
		{[]string{"worker"}, "worker: --kind is required (the kind whose jobs to do, e.g. --kind big_tables)"},
		{[]string{"worker", "--kind", "k", "--concurrency", "-2"}, "worker: --concurrency must be at least 1, not -2"},
		{[]string{"worker", "--kind", "k", "--http-timeout", "-1s"}, "worker: --http-timeout must be positive, not -1s"},
		{[]string{"worker", "--kind", "k", "--redis", "http://127.0.0.1:6379"}, `worker: redis URL "http://127.0.0.1:6379": redis: invalid URL scheme: http (use redis://[user:password@]host:6379/0, redis+cluster://[user:password@]h1:7000,h2:7001,h3:7002 or redis+sentinel://[user:password@]s1:26379,s2:26379/mymaster)`},
		{[]string{"worker", "--kind", "k", "extra"}, `unknown command "extra" for "refresher worker"`},
		{[]string{"worker", "--kind", "k", "--max-body-bytes", "-1"}, "worker: --max-body-bytes must be positive, not -1"},
		{[]string{"worker", "--kind", "k", "--allow-networks", "10.0.0.0/8,10.1.0.0/99"},
			`worker: --allow-networks: "10.1.0.0/99" is not a network in CIDR notation (use e.g. 10.1.0.0/16 or fd00:1::/48)`},
	} {
		err := run(context.Background(), tt.args, io.Discard, io.Discard)
		require.EqualError(t, err, tt.err, "refresher %v", tt.args)
	}
}

// testenv.SyncBuffer is a bytes.Buffer that the worker's logger and the test may use
// at once.
func TestWorkerCommand(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, "id,name\n1,a\n")
	}))
	t.Cleanup(srv.Close)
	input, output := prefix+"big_tables-input", prefix+"big_tables-output"

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr testenv.SyncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"worker", "--kind", "big_tables", "--redis", testenv.RedisURL(),
			"--input", input, "--output", output, "--concurrency", "2", "--http-timeout", "5s",
			"--allow-networks", "127.0.0.0/8,::1/128", "--max-body-bytes", "12"}, io.Discard, &stderr)
	}()

	for _, job := range []redisio.Job{
		{Kind: "big_tables", UID: "1", AttemptUID: "a1", AttemptNo: 1, TimeoutAt: time.Now().Add(time.Hour),
			Payload: map[string]any{"input_url": srv.URL + "/data.csv"}},
		{Kind: "big_tables", UID: "2", AttemptUID: "a2", AttemptNo: 3, TimeoutAt: time.Now().Add(time.Hour),
			Payload: map[string]any{"input_url": srv.URL + "/missing"}},
	} {
		data, err := json.Marshal(job)
		require.NoError(t, err)
		require.NoError(t, rdb.RPush(ctx, input, data).Err())
	}
	got := map[string]redisio.Result{}
	for range 2 {
		kv, err := rdb.BLPop(ctx, 10*time.Second, output).Result()
		require.NoError(t, err, "no result within 10s; worker log:\n%s", stderr.String())
		var res redisio.Result
		require.NoError(t, json.Unmarshal([]byte(kv[1]), &res))
		got[res.UID] = res
	}
	require.Equal(t, map[string]redisio.Result{
		"1": {UID: "1", AttemptUID: "a1", Type: redisio.ResultSuccess, Status: "fetched"},
		"2": {UID: "2", AttemptUID: "a2", Type: redisio.ResultFailure, Permanent: true,
			Reason:             "GET " + srv.URL + "/missing: HTTP 404 Not Found",
			UserFriendlyReason: "Provided URL is invalid: " + srv.URL + "/missing"},
	}, got)

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("refresher worker did not stop within 10s of SIGTERM")
	}
	log := stderr.String()
	require.Contains(t, log, `msg="worker started" kind=big_tables input=`+input)
	require.Contains(t, log, `msg="job done" kind=big_tables uid=1 attempt_uid=a1 type=success`)
	require.Contains(t, log, `msg="worker stopped" kind=big_tables done=2`)
}

// With --config, the Redis URL and list names of the kind come from the
// service's file; the environment and flags still win.
func TestWorkerSettingsFromConfigFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "refresher.yml")
	require.NoError(t, os.WriteFile(path, []byte(`
redis: "redis://files-redis:6379/3"
kinds:
  - name: big_tables
    schedule: "RRULE:FREQ=DAILY"
    input: bt-in
    output: bt-out
    timeout: 20m
worker:
  allow_private_networks: true
  allow_networks: [10.1.0.0/16]
  max_body_bytes: 5000
`), 0o600))
	file, err := workerFile(path, "big_tables")
	require.NoError(t, err)
	require.Equal(t, workerSettings{RedisURL: "redis://files-redis:6379/3", Input: "bt-in", Output: "bt-out", MaxBodyBytes: 5000,
		AllowPrivateNetworks: true, AllowNetworks: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")}, Lanes: []int{0},
		Lease: 20 * time.Minute}, file)

	got := workerDefaults().overlay(file).overlay(workerSettings{Kind: "big_tables", Output: "flag-out"})
	require.Equal(t, []int{0}, got.Lanes, "the lanes of the kind's priority (normal: interactive's)")
	require.Equal(t, []int{-2, 3}, got.overlay(workerSettings{Lanes: []int{-2, 3}}).Lanes, "--lanes")
	require.Equal(t, "redis://files-redis:6379/3", got.RedisURL)
	require.Equal(t, "bt-in", got.Input)
	require.Equal(t, "flag-out", got.Output)
	require.Equal(t, 20*time.Minute, got.Lease, "the kind's timeout is what a running job asks for")

	_, err = workerFile(path, "nope")
	require.ErrorContains(t, err, `unknown kind "nope" (configured: [big_tables])`)
	none, err := workerFile("", "big_tables")
	require.NoError(t, err)
	require.Equal(t, workerSettings{}, none)
}

// `worker --config F` without --kind says that --kind is required (not
// `unknown kind ""`).
func TestWorkerConfigWithoutKind(t *testing.T) {
	t.Parallel()
	b := setupCommands(t)
	err := run(context.Background(), []string{"worker", "--config", b.path}, io.Discard, io.Discard)
	require.EqualError(t, err, "worker: --kind is required (the kind whose jobs to do, e.g. --kind big_tables)")
}

// The worker logs which Redis and lists it uses and where they came from,
// and warns when it falls back on the defaults for both.
func TestWorkerLogsItsSources(t *testing.T) {
	t.Parallel()
	logged := func(configPath string, file, env, flags workerSettings) string {
		var out bytes.Buffer
		s := workerDefaults().overlay(file).overlay(env).overlay(flags).withLists()
		logSources(slog.New(slog.NewTextHandler(&out, nil)), s, configPath, file, env, flags)
		return out.String()
	}
	out := logged("", workerSettings{}, workerSettings{}, workerSettings{Kind: "k"})
	require.Contains(t, out, `level=WARN msg="worker uses the default Redis and lists: pass --config`)
	require.Contains(t, out, "redis=redis://127.0.0.1:6379/0 redis_from=default input=k-input output=k-output lists_from=default")

	out = logged("", workerSettings{}, workerSettings{RedisURL: "redis://:s3cret@r:6379/2"}, workerSettings{Kind: "k", Input: "in"})
	require.Contains(t, out, `level=INFO msg="worker settings" redis=redis://:xxxxx@r:6379/2 redis_from=REFRESHER_REDIS input=in output=k-output lists_from=--input/--output`)

	out = logged("/etc/refresher.yml", workerSettings{RedisURL: "redis://r:6379/1", Input: "a-in", Output: "a-out"}, workerSettings{}, workerSettings{Kind: "k"})
	require.Contains(t, out, "redis=redis://r:6379/1 redis_from=/etc/refresher.yml input=a-in output=a-out lists_from=/etc/refresher.yml")

	// A prefix in the environment names the default lists only: the file's
	// lists are used as written.
	out = logged("/etc/refresher.yml", workerSettings{Input: "a-in", Output: "a-out"}, workerSettings{Prefix: "blog:"}, workerSettings{Kind: "k"})
	require.Contains(t, out, "input=a-in output=a-out lists_from=/etc/refresher.yml")
	out = logged("", workerSettings{}, workerSettings{Prefix: "blog:"}, workerSettings{Kind: "k"})
	require.Contains(t, out, "input=blog:k-input output=blog:k-output lists_from=REFRESHER_REDIS_PREFIX")
}

// The worker logs the lists it pops and pushes: REFRESHER_REDIS_PREFIX
// starts them, as the service's redis_prefix does, and on a Redis Cluster
// they carry the kind's hash tag. (Nothing listens on port 1: the worker
// logs its settings, then fails to connect.)
func TestWorkerLogsTheListsItUses(t *testing.T) {
	t.Setenv("REFRESHER_REDIS_PREFIX", "blog:")
	for url, want := range map[string]string{
		"redis://127.0.0.1:1/0":       "input=blog:t-input output=blog:t-output lists_from=REFRESHER_REDIS_PREFIX",
		"redis+cluster://127.0.0.1:1": "input={blog:t}-input output={blog:t}-output lists_from=REFRESHER_REDIS_PREFIX",
	} {
		var stderr bytes.Buffer
		err := run(context.Background(), []string{"worker", "--kind", "t", "--redis", url}, io.Discard, &stderr)
		require.Error(t, err, url)
		require.Contains(t, stderr.String(), want, url)
	}
}
