package main

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
)

// The commands trace as the OTEL_* environment says, and refuse an
// exporter they do not have. Not parallel: it sets the environment.
func TestCommandsTraceFromEnv(t *testing.T) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED",
		"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_TRACES_SAMPLER"} {
		t.Setenv(k, "")
	}
	ctx := context.Background()
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))

	t.Setenv("OTEL_TRACES_EXPORTER", "")
	tr, flush, err := startTracing(ctx, "refresher", log)
	require.NoError(t, err)
	require.Nil(t, tr, "off without OTEL_EXPORTER_OTLP_ENDPOINT")
	flush()
	require.Empty(t, buf.String())

	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://user:pw@127.0.0.1:1")
	tr, flush, err = startTracing(ctx, "refresher", log)
	require.NoError(t, err)
	require.NotNil(t, tr)
	flush()
	require.Contains(t, buf.String(), `msg="tracing on" protocol=http/protobuf endpoint=http://xxxxx@127.0.0.1:1 sampler=parentbased_always_on`)

	t.Setenv("OTEL_TRACES_EXPORTER", "console")
	err = runWorker(ctx, workerSettings{Kind: "k", RedisURL: testenv.RedisURL(), Input: "i", Output: "o", Concurrency: 1, HTTPTimeout: time.Second, MaxBodyBytes: 1}, log)
	require.EqualError(t, err, `worker: OTEL_TRACES_EXPORTER="console": refresher exports traces with "otlp" only (or "none")`)
}
