package tracing

import (
	"context"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"

	"github.com/refresher/refresher/internal/tracing/otlptest"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestEnabled(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  map[string]string
		want bool
		err  string
	}{
		{nil, false, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, true, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, true, ""},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true, ""},
		{map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, false, ""},
		{map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, false, ""},
		{map[string]string{"OTEL_SDK_DISABLED": "false", "OTEL_TRACES_EXPORTER": "otlp"}, true, ""},
		{map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, false, `OTEL_TRACES_EXPORTER="zipkin": refresher exports traces with "otlp" only (or "none")`},
	} {
		got, err := Enabled(env(tc.env))
		if tc.err != "" {
			require.EqualError(t, err, tc.err)
			continue
		}
		require.NoError(t, err, "%v", tc.env)
		require.Equal(t, tc.want, got, "%v", tc.env)
	}
}

func TestProtocol(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{nil, ProtocolHTTP},
		{map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, ProtocolGRPC},
		{map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, ProtocolHTTP},
	} {
		got, err := Protocol(env(tc.env))
		require.NoError(t, err)
		require.Equal(t, tc.want, got, "%v", tc.env)
	}
	_, err := Protocol(env(map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}))
	require.EqualError(t, err, `OTEL_EXPORTER_OTLP_PROTOCOL="http/json": want "http/protobuf" or "grpc"`)
	_, err = Protocol(env(map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"}))
	require.EqualError(t, err, `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL="http/json": want "http/protobuf" or "grpc"`, "names the variable set")
}

// Off, a nil Tracer's spans cost no allocation, and a worker passes the
// job's trace context on as it is. Not parallel: AllocsPerRun.
func TestNilTracer(t *testing.T) {
	var tr *Tracer
	job := Job{Kind: "k", Key: "1", AttemptUID: "a"}
	from := Context{Parent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", State: "v=1"}
	ctx := context.Background()
	now := time.Now()
	allocs := testing.AllocsPerRun(100, func() {
		s, c := tr.Dispatch(now, job, "k-input")
		s.End()
		_, s, back := tr.Work(ctx, job, from)
		s.Fail("x")
		s.End()
		s = tr.Apply(now, job, "success", "applied", from)
		s.End()
		if c != (Context{}) || back != from {
			t.Fatal("a nil Tracer makes trace context")
		}
	})
	require.Zero(t, allocs)
	require.NoError(t, tr.Shutdown(ctx))
	require.NoError(t, tr.Flush(ctx))
}

// quiet discards the setup's log.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// clearEnv unsets the OTEL_* variables Setup reads, for one test.
func clearEnv(t *testing.T) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_EXPORTER",
		"OTEL_SDK_DISABLED", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_SERVICE_NAME",
		"OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_EXPORTER_OTLP_HEADERS"} {
		t.Setenv(k, "")
	}
}

// chain makes the three spans of one refresh as the service and a worker
// do, and returns the worker's trace context.
func chain(t *testing.T, svc, wrk *Tracer) (Context, Context) {
	job := Job{Kind: "big_tables", Key: "42", AttemptUID: "a1", AttemptNo: 1}
	d, jobCtx := svc.Dispatch(time.Now(), job, "big_tables-input")
	d.End()
	_, w, back := wrk.Work(context.Background(), job, jobCtx)
	w.ResultType("success")
	w.End()
	a := svc.Apply(time.Now(), job, "success", "applied", Context{Parent: back.Parent})
	a.End()
	return jobCtx, back
}

// Setup exports over OTLP/HTTP protobuf to OTEL_EXPORTER_OTLP_ENDPOINT
// (+ /v1/traces), with the headers and the service name of the
// environment. Not parallel: it sets the environment.
func TestSetupHTTP(t *testing.T) {
	clearEnv(t)
	recv := otlptest.New(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20t0ken")
	ctx := context.Background()
	svc, err := Setup(ctx, "refresher", quiet)
	require.NoError(t, err)
	t.Setenv("OTEL_SERVICE_NAME", "my-worker")
	wrk, err := Setup(ctx, "refresher-worker", quiet)
	require.NoError(t, err)
	jobCtx, back := chain(t, svc, wrk)
	require.NoError(t, svc.Shutdown(ctx))
	require.NoError(t, wrk.Shutdown(ctx))

	byName := map[string]otlptest.Span{}
	for _, s := range recv.Spans() {
		byName[s.Name] = s
	}
	require.Len(t, byName, 3)
	d, w, a := byName["dispatch big_tables"], byName["refresh big_tables"], byName["apply big_tables"]
	require.Equal(t, "refresher", d.Service)
	require.Equal(t, "my-worker", w.Service, "OTEL_SERVICE_NAME wins")
	require.Equal(t, "00-"+d.TraceID+"-"+d.SpanID+"-01", jobCtx.Parent)
	require.Equal(t, "00-"+d.TraceID+"-"+w.SpanID+"-01", back.Parent)
	require.Equal(t, d.SpanID, w.ParentID)
	require.Equal(t, w.SpanID, a.ParentID)
	require.Equal(t, d.TraceID, a.TraceID)
	require.Equal(t, map[string]string{AttrKind: "big_tables", AttrKey: "42", AttrAttemptUID: "a1", AttrAttemptNo: "1", AttrList: "big_tables-input"}, d.Attrs)
	require.Equal(t, "applied", a.Attrs[AttrOutcome])
	require.Contains(t, recv.Header("Authorization"), "Bearer t0ken")
}

// A sampler that drops every trace: the job still carries trace context
// (not sampled), and nothing is exported.
func TestSetupSamplerFromEnv(t *testing.T) {
	clearEnv(t)
	recv := otlptest.New(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL)
	t.Setenv("OTEL_TRACES_SAMPLER", "always_off")
	ctx := context.Background()
	tr, err := Setup(ctx, "refresher", quiet)
	require.NoError(t, err)
	jobCtx, back := chain(t, tr, tr)
	require.Regexp(t, `^00-[0-9a-f]{32}-[0-9a-f]{16}-00$`, jobCtx.Parent)
	require.Regexp(t, `-00$`, back.Parent)
	require.NoError(t, tr.Shutdown(ctx))
	require.Empty(t, recv.Spans())
}

// traceService is an OTLP gRPC trace receiver.
type traceService struct {
	coltracepb.UnimplementedTraceServiceServer
	mu    sync.Mutex
	names []string
}

func (s *traceService) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				s.names = append(s.names, sp.GetName())
			}
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// OTEL_EXPORTER_OTLP_PROTOCOL=grpc exports over gRPC (plain text to an
// http:// endpoint).
func TestSetupGRPC(t *testing.T) {
	clearEnv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	recv := &traceService{}
	coltracepb.RegisterTraceServiceServer(srv, recv)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+ln.Addr().String())
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	ctx := context.Background()
	tr, err := Setup(ctx, "refresher", quiet)
	require.NoError(t, err)
	chain(t, tr, tr)
	require.NoError(t, tr.Shutdown(ctx))
	recv.mu.Lock()
	defer recv.mu.Unlock()
	require.ElementsMatch(t, []string{"dispatch big_tables", "refresh big_tables", "apply big_tables"}, recv.names)
}
