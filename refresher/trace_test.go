package refresher

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/internal/tracing"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
)

// rawJobs pops n jobs as they are on the input list.
func (b *testBundle) rawJobs(n int) map[string]string {
	b.t.Helper()
	out := map[string]string{}
	for range n {
		res, err := b.rdb.BLPop(context.Background(), 10*time.Second, b.kind.Lists.Input).Result()
		require.NoError(b.t, err, "no job on %s within 10s", b.kind.Lists.Input)
		var job redisio.Job
		require.NoError(b.t, json.Unmarshal([]byte(res[1]), &job))
		out[job.UID] = res[1]
	}
	return out
}

// Without a Tracer a job carries no trace context, and a result's
// traceparent changes nothing.
func TestNoTracerNoTraceContext(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{timeout: 5 * time.Minute})
	b.start(nil)
	b.insert("a")
	raw := b.rawJobs(1)["a"]
	require.NotContains(t, raw, "trace")
	var job redisio.Job
	require.NoError(t, json.Unmarshal([]byte(raw), &job))
	b.send(redisio.Result{UID: "a", AttemptUID: job.AttemptUID, Type: redisio.ResultSuccess,
		TraceParent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"})
	b.waitFor("a", "success", func(s policy.State) bool { return !s.LastSuccessAt.IsZero() })
}

// With a Tracer each job's dispatch is the root span of a trace whose
// context the job carries; the apply span of each result is the child of
// the span the result's traceparent names (a root without one), with what
// became of the result; a dead letter's apply span fails.
func TestTracerSpansDispatchAndApply(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	provider := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = provider.Shutdown(context.Background()) })
	b := setup(t, setupOpts{timeout: 5 * time.Minute})
	b.start(func(c *Config) { c.Tracer = tracing.New(provider) })
	b.insert("a", "b")
	raw := b.rawJobs(2)
	jobs := map[string]redisio.Job{}
	parents := map[string]trace.SpanContext{}
	for uid, r := range raw {
		var job redisio.Job
		require.NoError(t, json.Unmarshal([]byte(r), &job))
		require.Regexp(t, `^00-[0-9a-f]{32}-[0-9a-f]{16}-01$`, job.TraceParent, r)
		jobs[uid] = job
		tid, err := trace.TraceIDFromHex(job.TraceParent[3:35])
		require.NoError(t, err)
		sid, err := trace.SpanIDFromHex(job.TraceParent[36:52])
		require.NoError(t, err)
		parents[uid] = trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid})
	}
	require.NotEqual(t, parents["a"].TraceID(), parents["b"].TraceID(), "a trace per refresh")

	// The worker of "a" continues its trace with a span of its own.
	workerSpan := trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8}
	b.send(redisio.Result{UID: "a", AttemptUID: jobs["a"].AttemptUID, Type: redisio.ResultSuccess,
		TraceParent: fmt.Sprintf("00-%s-%s-01", parents["a"].TraceID(), workerSpan)})
	b.send(redisio.Result{UID: "b", AttemptUID: jobs["b"].AttemptUID, Type: redisio.ResultSuccess})
	b.send(redisio.Result{UID: "nobody", AttemptUID: "x", Type: redisio.ResultSuccess,
		TraceParent: fmt.Sprintf("00-%s-%s-01", parents["a"].TraceID(), workerSpan)})
	b.waitFor("a", "success", func(s policy.State) bool { return !s.LastSuccessAt.IsZero() })
	b.waitFor("b", "success", func(s policy.State) bool { return !s.LastSuccessAt.IsZero() })

	byName := func() map[string]tracetest.SpanStub {
		m := map[string]tracetest.SpanStub{}
		for _, s := range exp.GetSpans() {
			m[s.Name+" "+attr(s, tracing.AttrKey)] = s
		}
		return m
	}
	var spans map[string]tracetest.SpanStub
	testenv.EventuallyNil(t, 10*time.Second, "two dispatch and three apply spans", func() error {
		if spans = byName(); len(spans) < 5 {
			return fmt.Errorf("spans %v", spans)
		}
		return nil
	})
	for _, uid := range []string{"a", "b"} {
		d := spans["dispatch items "+uid]
		require.Equal(t, parents[uid].SpanID(), d.SpanContext.SpanID(), "the job's traceparent names its dispatch span")
		require.Equal(t, parents[uid].TraceID(), d.SpanContext.TraceID())
		require.False(t, d.Parent.IsValid(), "a root")
		require.Equal(t, trace.SpanKindProducer, d.SpanKind)
		require.Equal(t, "items", attr(d, tracing.AttrKind))
		require.Equal(t, jobs[uid].AttemptUID, attr(d, tracing.AttrAttemptUID))
		require.Equal(t, b.kind.Lists.Input, attr(d, tracing.AttrList))
		require.Equal(t, codes.Unset, d.Status.Code)
	}
	a := spans["apply items a"]
	require.Equal(t, parents["a"].TraceID(), a.SpanContext.TraceID(), "the apply span is in the job's trace")
	require.Equal(t, workerSpan, a.Parent.SpanID(), "the child of the worker's span")
	require.True(t, a.Parent.IsRemote())
	require.Equal(t, trace.SpanKindConsumer, a.SpanKind)
	require.Equal(t, jobs["a"].AttemptUID, attr(a, tracing.AttrAttemptUID))
	require.Equal(t, "success", attr(a, tracing.AttrResultType))
	require.Equal(t, "applied", attr(a, tracing.AttrOutcome))
	require.False(t, a.StartTime.After(a.EndTime))

	bb := spans["apply items b"]
	require.False(t, bb.Parent.IsValid(), "without a traceparent: a trace of its own")
	require.Equal(t, "applied", attr(bb, tracing.AttrOutcome))

	dead := spans["apply items nobody"]
	require.Equal(t, codes.Error, dead.Status.Code)
	require.Contains(t, dead.Status.Description, "unknown model")
	require.Equal(t, "dead_letter", attr(dead, tracing.AttrOutcome))
}

func attr(s tracetest.SpanStub, key string) string {
	for _, kv := range s.Attributes {
		if kv.Key == attribute.Key(key) {
			return kv.Value.Emit()
		}
	}
	return ""
}
