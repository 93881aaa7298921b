package worker

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/redisio"
)

// examples/worker.py speaks the protocol: its results decode with the
// service's own decoder and say what the reference worker would.
func TestPythonWorkerExample(t *testing.T) {
	t.Parallel()
	python := testenv.PythonWithRedis(t)
	rdb, prefix := testenv.Redis(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/data.csv":
			io.WriteString(w, "id,name\n1,a\n")
		case "/busy":
			w.Header().Set("Retry-After", "120")
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	input, output := prefix+"big_tables-input", prefix+"big_tables-output"
	ctx := context.Background()
	soon := time.Now().Add(time.Minute)
	for _, job := range []redisio.Job{
		{Kind: "big_tables", UID: "expired", AttemptUID: "a0", AttemptNo: 1, TimeoutAt: time.Now().Add(-time.Second),
			Payload: map[string]any{"input_url": srv.URL + "/data.csv"}},
		{Kind: "big_tables", UID: "good", AttemptUID: "a1", AttemptNo: 1, TimeoutAt: soon, Payload: map[string]any{"input_url": srv.URL + "/data.csv"}},
		{Kind: "big_tables", UID: "gone", AttemptUID: "a2", AttemptNo: 1, TimeoutAt: soon, Payload: map[string]any{"input_url": srv.URL + "/missing"}},
		{Kind: "big_tables", UID: "busy", AttemptUID: "a3", AttemptNo: 2, TimeoutAt: soon, Payload: map[string]any{"input_url": srv.URL + "/busy"}},
		{Kind: "big_tables", UID: "broken", AttemptUID: "a4", AttemptNo: 1, TimeoutAt: soon, Payload: map[string]any{"input_url": "not a url"}},
		{Kind: "big_tables", UID: "secret", AttemptUID: "a5", AttemptNo: 1, TimeoutAt: soon,
			Payload: map[string]any{"input_url": strings.Replace(srv.URL, "://", "://user:S3cretUrlPw1@", 1) + "/missing?Token=S3cretUrlPw2"}},
		{Kind: "big_tables", UID: "token", AttemptUID: "a6", AttemptNo: 1, TimeoutAt: soon,
			Payload: map[string]any{"input_url": srv.URL + "/missing?x=1&api_key=S3cretUrlPw3"}},
	} {
		data, err := redisio.AppendJob(nil, job)
		require.NoError(t, err)
		require.NoError(t, rdb.RPush(ctx, input, data).Err())
	}
	// A job on the priority lane 0, pushed last, is done first.
	lane := redisio.Lists{Input: input}.PriorityInput(0)
	data, err := redisio.AppendJob(nil, redisio.Job{Kind: "big_tables", UID: "urgent", AttemptUID: "a7", AttemptNo: 1, TimeoutAt: soon,
		Payload: map[string]any{"input_url": srv.URL + "/data.csv"}})
	require.NoError(t, err)
	require.NoError(t, rdb.RPush(ctx, lane, data).Err())

	script, err := filepath.Abs("../examples/worker.py")
	require.NoError(t, err)
	cmdCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cmdCtx, python, script, "--kind", "big_tables", "--input", input, "--output", output,
		"--lanes", "0", "--redis", testenv.RedisURL(), "--max-jobs", "7")
	cmd.Env = testenv.PythonEnv()
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "examples/worker.py:\n%s", out)
	require.Contains(t, string(out), "drop expired job expired")

	raw, err := rdb.LRange(ctx, output, 0, -1).Result()
	require.NoError(t, err)
	require.Contains(t, raw[0], `"uid": "urgent"`, "the lane's job first")
	raw = raw[1:]
	got := map[string]redisio.Result{}
	for _, r := range raw {
		require.NotContains(t, r, "S3cretUrlPw", "a result shows a secret of its URL")
		res, err := redisio.DecodeResult([]byte(r))
		require.NoError(t, err, "result %s", r)
		got[res.UID] = res
	}
	require.Equal(t, map[string]redisio.Result{
		"good": {UID: "good", AttemptUID: "a1", Type: redisio.ResultSuccess, Status: "fetched 12 bytes"},
		"gone": {UID: "gone", AttemptUID: "a2", Type: redisio.ResultFailure, Permanent: true,
			Reason: "GET " + srv.URL + "/missing: HTTP 404 Not Found", UserFriendlyReason: "Provided URL is invalid: " + srv.URL + "/missing"},
		"busy": {UID: "busy", AttemptUID: "a3", Type: redisio.ResultFailure, RetryAfterSeconds: 120,
			Reason: "GET " + srv.URL + "/busy: HTTP 503 Service Unavailable"},
		"broken": {UID: "broken", AttemptUID: "a4", Type: redisio.ResultFailure, Permanent: true,
			Reason: "malformed URL 'not a url'", UserFriendlyReason: "Provided URL is invalid: not a url"},
		"secret": got["secret"], // Python's error text for user information in a URL varies
		"token": {UID: "token", AttemptUID: "a6", Type: redisio.ResultFailure, Permanent: true,
			Reason: "GET " + srv.URL + "/missing?x=1&api_key=xxxxx: HTTP 404 Not Found", UserFriendlyReason: "Provided URL is invalid: " + srv.URL + "/missing?x=1&api_key=xxxxx"},
	}, got)
	require.Equal(t, redisio.ResultFailure, got["secret"].Type)
	require.NotContains(t, string(out), "S3cretUrlPw", "the worker's output shows a secret")
}

// examples/worker.py asks for its lease again every third of it while a
// download makes progress, and drops the job when the service answers that
// its attempt is over.
func TestPythonWorkerExampleExtends(t *testing.T) {
	t.Parallel()
	python := testenv.PythonWithRedis(t)
	rdb, prefix := testenv.Redis(t)
	release := make(chan struct{})
	srv, endless := slowBody(t, release), slowBody(t, make(chan struct{}))
	input, output := prefix+"big_tables-input", prefix+"big_tables-output"
	ctx := context.Background()
	for _, job := range []redisio.Job{
		{Kind: "big_tables", UID: "big", AttemptUID: "a1", AttemptNo: 1, TimeoutAt: time.Now().Add(time.Minute), Payload: map[string]any{"input_url": srv.URL + "/big.csv"}},
		{Kind: "big_tables", UID: "over", AttemptUID: "a2", AttemptNo: 1, TimeoutAt: time.Now().Add(time.Minute), Payload: map[string]any{"input_url": endless.URL + "/over.csv"}},
	} {
		data, err := redisio.AppendJob(nil, job)
		require.NoError(t, err)
		require.NoError(t, rdb.RPush(ctx, input, data).Err())
	}
	script, err := filepath.Abs("../examples/worker.py")
	require.NoError(t, err)
	cmdCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cmdCtx, python, script, "--kind", "big_tables", "--input", input, "--output", output,
		"--redis", testenv.RedisURL(), "--max-jobs", "2", "--lease", "1.5")
	cmd.Env = testenv.PythonEnv()
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())

	next := func() redisio.Result {
		kv, err := rdb.BLPop(ctx, 10*time.Second, output).Result()
		require.NoError(t, err, "no message on %s within 10s", output) // its output is read after Wait only
		res, err := redisio.DecodeResult([]byte(kv[1]))
		require.NoError(t, err, kv[1])
		return res
	}
	for range 2 {
		require.Equal(t, redisio.Result{UID: "big", AttemptUID: "a1", Type: redisio.ResultExtend, Seconds: 2}, next())
	}
	close(release)
	require.Equal(t, redisio.ResultSuccess, next().Type)

	// The next download's attempt is answered as over after its first request.
	require.Equal(t, redisio.Result{UID: "over", AttemptUID: "a2", Type: redisio.ResultExtend, Seconds: 2}, next())
	require.NoError(t, redisio.New(rdb).WriteLeases(ctx, redisio.Lists{Output: output}, []redisio.LeaseAnswer{{AttemptUID: "a2"}}, time.Now()))
	require.NoError(t, cmd.Wait(), "worker.py:\n%s", out.String())
	require.Contains(t, out.String(), "drop job whose attempt is over over")
	n, err := rdb.LLen(ctx, output).Result()
	require.NoError(t, err)
	require.Zero(t, n, "no result for the attempt that is over")
}
