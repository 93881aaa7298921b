package worker

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/internal/tracing"
	"github.com/refresher/refresher/internal/tracing/otlptest"
	"github.com/refresher/refresher/redisio"
)

const (
	jobTraceID     = "4bf92f3577b34da6a3ce929d0e0e4736"
	jobSpanID      = "00f067aa0ba902b7"
	jobTraceParent = "00-" + jobTraceID + "-" + jobSpanID + "-01"
)

// pushTracedJob pushes a job with trace context, as a tracing service does.
func (b *runBundle) pushTracedJob(t *testing.T, uid, url string) {
	t.Helper()
	data, err := redisio.AppendJob(nil, redisio.Job{Kind: "big_tables", UID: uid, AttemptUID: "att-" + uid, AttemptNo: 1,
		TimeoutAt: time.Now().Add(time.Minute), Payload: map[string]any{"input_url": url}, TraceParent: jobTraceParent, TraceState: "v=1"})
	require.NoError(t, err)
	require.NoError(t, b.rdb.RPush(context.Background(), b.cfg.Input, data).Err())
}

func okServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	t.Cleanup(srv.Close)
	return srv
}

// Without a Tracer the worker sends the job's traceparent back as it is:
// the service's apply span joins the job's trace.
func TestWorkerPassesTraceOn(t *testing.T) {
	t.Parallel()
	b := setupRun(t, nil)
	b.pushTracedJob(t, "a", okServer(t).URL)
	res := b.nextResult(t)
	require.Equal(t, redisio.ResultSuccess, res.Type)
	require.Equal(t, jobTraceParent, res.TraceParent)
}

// With a Tracer the worker's span of a job is the child of the job's
// traceparent, and the result carries the worker's span.
func TestWorkerContinuesTrace(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	provider := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	b := setupRun(t, func(c *Config) { c.Tracer = tracing.New(provider) })
	b.pushTracedJob(t, "a", okServer(t).URL)
	b.pushTracedJob(t, "gone", okServer(t).URL+"/x\x7f") // a malformed URL: a failure
	results := map[string]redisio.Result{}
	for range 2 {
		r := b.nextResult(t)
		results[r.UID] = r
	}
	b.stop(t) // the spans end when the jobs are done
	spans := map[string]tracetest.SpanStub{}
	for _, s := range exp.GetSpans() {
		spans[s.SpanContext.SpanID().String()] = s
	}
	require.Len(t, spans, 2)
	for uid, r := range results {
		require.Regexp(t, `^00-`+jobTraceID+`-[0-9a-f]{16}-01$`, r.TraceParent, "the job's trace")
		s, ok := spans[r.TraceParent[36:52]]
		require.True(t, ok, "the result names the worker's span: %s", r.TraceParent)
		require.Equal(t, jobSpanID, s.Parent.SpanID().String(), "the child of the job's span")
		require.Equal(t, "refresh big_tables", s.Name)
		require.Equal(t, "v=1", s.SpanContext.TraceState().String(), "tracestate goes on")
		if uid == "gone" {
			require.Equal(t, "Error", s.Status.Code.String())
			require.Equal(t, r.Reason, s.Status.Description)
		}
	}
}

// examples/worker.py passes the job's traceparent on when it exports no
// span, and with an OTLP endpoint posts its own span (OTLP/HTTP JSON), the
// child of the job's, and sends that span back.
func TestPythonWorkerExampleTraces(t *testing.T) {
	t.Parallel()
	p := setupPython(t)
	srv := okServer(t)
	recv := otlptest.New(t)
	for _, endpoint := range []string{"", recv.URL} {
		p.b.pushTracedJob(t, "a", srv.URL)
		var env []string
		if endpoint != "" {
			env = []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + endpoint, "OTEL_EXPORTER_OTLP_HEADERS=x-token=a%20b"}
		}
		out, res := p.runJob(t, env...)
		if endpoint == "" {
			require.Equal(t, jobTraceParent, res.TraceParent, "passed on")
			require.Empty(t, recv.Spans())
			continue
		}
		require.Regexp(t, `^00-`+jobTraceID+`-[0-9a-f]{16}-01$`, res.TraceParent)
		spans := recv.Spans()
		require.Len(t, spans, 1, "examples/worker.py:\n%s", out)
		require.Equal(t, []string{"a b"}, recv.Header("x-token"), "OTEL_EXPORTER_OTLP_HEADERS, URL-decoded")
		s := spans[0]
		require.Equal(t, otlptest.Span{Service: "refresher-example-worker", TraceID: jobTraceID, SpanID: res.TraceParent[36:52],
			ParentID: jobSpanID, Name: "refresh big_tables", Kind: 5, Encoding: "json",
			Attrs: map[string]string{tracing.AttrKind: "big_tables", tracing.AttrKey: "a", tracing.AttrAttemptUID: "att-a", tracing.AttrAttemptNo: "1",
				tracing.AttrResultType: "success"},
		}, s)
	}
}

// pythonRun runs examples/worker.py on the lists of b, for the tests of
// its traces.
type pythonRun struct {
	python, script string
	b              *runBundle
}

// setupPython finds a python3 with redis-py (or skips) and the script, and
// names lists on a fresh Redis prefix.
func setupPython(t *testing.T) pythonRun {
	python := testenv.PythonWithRedis(t)
	rdb, prefix := testenv.Redis(t)
	script, err := filepath.Abs("../examples/worker.py")
	require.NoError(t, err)
	return pythonRun{python: python, script: script,
		b: &runBundle{rdb: rdb, cfg: Config{Input: prefix + "big_tables-input", Output: prefix + "big_tables-output"}}}
}

// run runs the script for jobs jobs with env and none of the test's own
// OTEL_* variables, and returns its output.
func (p pythonRun) run(t *testing.T, jobs int, env ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.python, p.script, "--kind", "big_tables", "--input", p.b.cfg.Input, "--output", p.b.cfg.Output,
		"--redis", testenv.RedisURL(), "--max-jobs", strconv.Itoa(jobs))
	cmd.Env = testenv.PythonEnv(env...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "examples/worker.py:\n%s", out)
	return string(out)
}

// runJob runs the script for one job and returns its output and the
// result it pushed.
func (p pythonRun) runJob(t *testing.T, env ...string) (string, redisio.Result) {
	t.Helper()
	out := p.run(t, 1, env...)
	raw, err := p.b.rdb.LPop(context.Background(), p.b.cfg.Output).Result()
	require.NoError(t, err)
	var res redisio.Result
	require.NoError(t, json.Unmarshal([]byte(raw), &res))
	return out, res
}

// examples/worker.py reads the variables that turn tracing off as
// `refresher worker` does, exports no span of a trace that is not sampled,
// and with the gRPC protocol (it posts OTLP/HTTP JSON) exports none and
// says what to set. Each time it passes the job's traceparent on as it is.
func TestPythonWorkerExampleTraceSwitches(t *testing.T) {
	t.Parallel()
	p := setupPython(t)
	srv := okServer(t)
	recv := otlptest.New(t)
	on := "OTEL_EXPORTER_OTLP_ENDPOINT=" + recv.URL
	unsampled := "00-" + jobTraceID + "-" + jobSpanID + "-00"
	for _, c := range []struct {
		name, parent, says string
		env                []string
	}{
		{name: "OTEL_TRACES_EXPORTER=none", parent: jobTraceParent, env: []string{on, "OTEL_TRACES_EXPORTER=none"}},
		{name: "OTEL_SDK_DISABLED=true", parent: jobTraceParent, env: []string{on, "OTEL_SDK_DISABLED=true"}},
		{name: "gRPC", parent: jobTraceParent, env: []string{on, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"}, says: "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/json"},
		{name: "not sampled", parent: unsampled, env: []string{on}},
	} {
		data, err := redisio.AppendJob(nil, redisio.Job{Kind: "big_tables", UID: "a", AttemptUID: "att-a", AttemptNo: 1,
			TimeoutAt: time.Now().Add(time.Minute), Payload: map[string]any{"input_url": srv.URL}, TraceParent: c.parent})
		require.NoError(t, err)
		require.NoError(t, p.b.rdb.RPush(context.Background(), p.b.cfg.Input, data).Err())
		out, res := p.runJob(t, c.env...)
		require.Equal(t, c.parent, res.TraceParent, "%s: passed on as it is", c.name)
		require.Empty(t, recv.Spans(), "%s: no span exported\n%s", c.name, out)
		require.Contains(t, out, c.says, c.name)
	}
}

// examples/worker.py does not ask a collector that failed again for a
// minute: the second job's span is not sent, and both results are.
func TestPythonWorkerExampleCollectorDown(t *testing.T) {
	t.Parallel()
	p := setupPython(t)
	srv := okServer(t)
	var posts atomic.Int32
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		posts.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(collector.Close)
	p.b.pushTracedJob(t, "a", srv.URL)
	p.b.pushTracedJob(t, "b", srv.URL)
	out := p.run(t, 2, "OTEL_EXPORTER_OTLP_ENDPOINT="+collector.URL)
	require.Equal(t, int32(1), posts.Load(), "examples/worker.py:\n%s", out)
	require.Contains(t, out, "cannot export the span (none sent for a minute)")
	n, err := p.b.rdb.LLen(context.Background(), p.b.cfg.Output).Result()
	require.NoError(t, err)
	require.Equal(t, int64(2), n, "both results")
}

// The requests for more time carry the trace context the result carries,
// so that their apply spans join the job's trace too.
func TestWorkerLeaseRequestsCarryTrace(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := slowBody(t, release)
	b := setupRun(t, func(c *Config) { c.Lease = 3 * time.Second })
	b.pushTracedJob(t, "big", srv.URL+"/export.csv")
	require.Equal(t, redisio.Result{UID: "big", AttemptUID: "att-big", Type: redisio.ResultExtend, Seconds: 3, TraceParent: jobTraceParent}, b.nextResult(t))
	close(release)
	res := b.nextResult(t)
	require.Equal(t, redisio.ResultSuccess, res.Type, "%+v", res)
	require.Equal(t, jobTraceParent, res.TraceParent)
}
