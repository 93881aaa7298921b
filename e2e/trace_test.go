package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/internal/teststore"
	"github.com/refresher/refresher/internal/tracing"
	"github.com/refresher/refresher/internal/tracing/otlptest"
	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
	"github.com/refresher/refresher/refresher"
	"github.com/refresher/refresher/schedule"
	"github.com/refresher/refresher/worker"
)

// otelEnv is the OTLP environment of the test, the same for the service,
// the Go worker and the Python worker: the receiver's address, a short
// export delay, and nothing of the machine's own OTEL_* settings.
func otelEnv(endpoint string) map[string]string {
	return map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_BSP_SCHEDULE_DELAY": "50",
		"OTEL_TRACES_EXPORTER": "", "OTEL_EXPORTER_OTLP_PROTOCOL": "", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "", "OTEL_SDK_DISABLED": "", "OTEL_SERVICE_NAME": "",
		"OTEL_TRACES_SAMPLER": "", "OTEL_RESOURCE_ATTRIBUTES": "", "OTEL_EXPORTER_OTLP_HEADERS": "",
	}
}

// A refresh is one trace from the service's dispatch to its apply of the
// result, through a worker in another process and language: the real
// service on MariaDB and Redis exports its spans with the OpenTelemetry
// SDK over OTLP/HTTP (protobuf) to a receiver started here; the Python
// example worker (OTLP/HTTP JSON, by hand) and the reference worker (the
// SDK) each export a span that is the child of the job's dispatch span and
// the parent of the service's apply span. Not parallel: it sets the
// process's OTEL_* environment, which the SDK reads.
func TestTraceCrossesTheWorker(t *testing.T) {
	python := testenv.PythonWithRedis(t)
	recv := otlptest.New(t)
	env := otelEnv(recv.URL)
	for k, v := range env {
		t.Setenv(k, v)
	}
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	svcTracer, err := tracing.Setup(ctx, "refresher", quiet)
	require.NoError(t, err)
	require.NotNil(t, svcTracer, "OTEL_EXPORTER_OTLP_ENDPOINT turns tracing on")
	workTracer, err := tracing.Setup(ctx, "refresher-worker", quiet)
	require.NoError(t, err)
	t.Cleanup(func() { _ = svcTracer.Shutdown(ctx); _ = workTracer.Shutdown(ctx) })

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "a,b\n1,2\n") }))
	t.Cleanup(srv.Close)
	db := teststore.Open(t, teststore.MySQL)
	rdb, prefix := testenv.Redis(t)
	sched, err := schedule.Parse("DTSTART:20260101T140000Z\nRRULE:FREQ=DAILY")
	require.NoError(t, err)
	now := time.Now().UTC()
	var kinds []refresher.Kind
	for _, name := range []string{"py_tables", "go_tables"} {
		db.Exec(t, strings.Replace(bigTables[teststore.MySQL], "big_tables", name, 1))
		_, err := db.Store.Migrate(ctx, []string{name}, io.Discard, false)
		require.NoError(t, err)
		db.Exec(t, "INSERT INTO "+name+" (uid, input_url, refresh_at) VALUES (?, ?, ?)", "row1", srv.URL+"/a.csv", now.Add(-time.Second))
		kinds = append(kinds, refresher.Kind{
			Name: name, Table: models.Table{Name: name, Key: "uid", Payload: []string{"input_url"}},
			Lists: redisio.DefaultLists(prefix + name), Schedule: sched,
			Policy: policy.Policy{Kind: name, Timeout: time.Minute, Retry: policy.DefaultRetry},
		})
	}
	svc, err := refresher.New(refresher.Config{Kinds: kinds, InstanceID: "e2e-trace", MaxSleep: 20 * time.Millisecond,
		Logger: quiet, Tracer: svcTracer}, db.Store, redisio.New(rdb))
	require.NoError(t, err)
	goLists := kinds[1].Lists
	w, err := worker.New(worker.Config{Kind: "go_tables", Redis: rdb, Input: goLists.Input, Output: goLists.Output,
		AllowPrivateNetworks: true, Logger: quiet, Tracer: workTracer}) // the test server is on loopback
	require.NoError(t, err)

	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = svc.Run(runCtx) })
	wg.Go(func() { _ = w.Run(runCtx) })
	t.Cleanup(func() { cancel(); wg.Wait() })

	script, err := filepath.Abs("../examples/worker.py")
	require.NoError(t, err)
	pyLists := kinds[0].Lists
	cmdCtx, cmdCancel := context.WithTimeout(ctx, 60*time.Second)
	defer cmdCancel()
	cmd := exec.CommandContext(cmdCtx, python, script, "--kind", "py_tables", "--input", pyLists.Input, "--output", pyLists.Output,
		"--redis", testenv.RedisURL(), "--max-jobs", "1")
	cmd.Env = testenv.PythonEnv("OTEL_EXPORTER_OTLP_ENDPOINT=" + recv.URL)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "examples/worker.py:\n%s", out)
	require.NotContains(t, string(out), "cannot export", "examples/worker.py:\n%s", out)

	// Each kind's trace: dispatch (service) -> refresh (worker) -> apply (service).
	for _, tc := range []struct{ kind, workerService, encoding string }{
		{"py_tables", "refresher-example-worker", "json"},
		{"go_tables", "refresher-worker", "protobuf"},
	} {
		var dispatch, work, apply otlptest.Span
		testenv.EventuallyNil(t, 20*time.Second, tc.kind+": the trace of the refresh", func() error {
			_ = svcTracer.Flush(ctx)
			_ = workTracer.Flush(ctx)
			var ok bool
			if dispatch, ok = find(recv.Spans(), "dispatch "+tc.kind, ""); !ok {
				return fmt.Errorf("no dispatch span among %v", recv.Spans())
			}
			if work, ok = find(recv.Spans(), "refresh "+tc.kind, dispatch.TraceID); !ok {
				return fmt.Errorf("no worker span in trace %s among %v", dispatch.TraceID, recv.Spans())
			}
			if apply, ok = find(recv.Spans(), "apply "+tc.kind, dispatch.TraceID); !ok {
				return fmt.Errorf("no apply span in trace %s among %v", dispatch.TraceID, recv.Spans())
			}
			return nil
		})
		require.Equal(t, "refresher", dispatch.Service)
		require.Empty(t, dispatch.ParentID, "the dispatch span starts the trace")
		require.Equal(t, "row1", dispatch.Attrs[tracing.AttrKey])
		require.Equal(t, tc.kind, dispatch.Attrs[tracing.AttrKind])
		attempt := dispatch.Attrs[tracing.AttrAttemptUID]
		require.NotEmpty(t, attempt)

		require.Equal(t, tc.workerService, work.Service)
		require.Equal(t, tc.encoding, work.Encoding)
		require.Equal(t, dispatch.SpanID, work.ParentID, "the worker's span is the child of the dispatch span")
		require.Equal(t, attempt, work.Attrs[tracing.AttrAttemptUID])
		require.Equal(t, "success", work.Attrs[tracing.AttrResultType])
		require.Equal(t, 5, work.Kind, "consumer")

		require.Equal(t, "refresher", apply.Service)
		require.Equal(t, work.SpanID, apply.ParentID, "the apply span is the child of the worker's span")
		require.Equal(t, attempt, apply.Attrs[tracing.AttrAttemptUID])
		require.Equal(t, "applied", apply.Attrs[tracing.AttrOutcome])
		require.False(t, apply.Failed)
	}
}

// find returns the span named name (in trace, unless it is "").
func find(spans []otlptest.Span, name, trace string) (otlptest.Span, bool) {
	for _, s := range spans {
		if s.Name == name && (trace == "" || s.TraceID == trace) {
			return s, true
		}
	}
	return otlptest.Span{}, false
}
