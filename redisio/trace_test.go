package redisio

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const testTraceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// A job carries the trace context of its dispatch after its payload, and
// only when it has one: without tracing the job is as before.
func TestEncodeJobTraceContext(t *testing.T) {
	t.Parallel()
	job := Job{Kind: "big_tables", UID: "42", AttemptUID: "a1", AttemptNo: 1,
		TimeoutAt: time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC), Payload: map[string]any{"input_url": "https://example.com/a.csv"}}
	plain := `{"kind":"big_tables","uid":"42","attempt_uid":"a1","attempt_no":1,"timeout_at":"2026-11-21T14:00:00.000000Z",` +
		`"payload":{"input_url":"https://example.com/a.csv"}}`
	got, err := AppendJob(nil, job)
	require.NoError(t, err)
	require.Equal(t, plain, string(got))

	job.TraceParent = testTraceParent
	got, err = AppendJob(nil, job)
	require.NoError(t, err)
	require.Equal(t, strings.TrimSuffix(plain, "}")+`,"traceparent":"`+testTraceParent+`"}`, string(got))

	job.TraceState = "vendor=a,other=b"
	got, err = AppendJob(nil, job)
	require.NoError(t, err)
	require.Equal(t, strings.TrimSuffix(plain, "}")+`,"traceparent":"`+testTraceParent+`","tracestate":"vendor=a,other=b"}`, string(got))
	var back Job
	require.NoError(t, json.Unmarshal(got, &back))
	require.Equal(t, job.TraceParent, back.TraceParent)
	require.Equal(t, job.TraceState, back.TraceState)
}

// A result's traceparent is read when it is a string; anything else in
// its place is ignored, never a reason to dead-letter the result.
func TestDecodeResultTraceParent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ field, want string }{
		{`"traceparent":"` + testTraceParent + `"`, testTraceParent},
		{`"traceparent":"not a traceparent"`, "not a traceparent"}, // the tracer ignores it
		{`"traceparent":null`, ""},
		{`"traceparent":42`, ""},
		{`"traceparent":{"a":1}`, ""},
		{`"traceparent":"` + strings.Repeat("0", maxTraceParent+1) + `"`, ""},
	} {
		raw := `{"uid":"42","attempt_uid":"a1","type":"success",` + tc.field + `}`
		got, err := DecodeResult([]byte(raw))
		require.NoError(t, err, raw)
		require.Equal(t, Result{UID: "42", AttemptUID: "a1", Type: ResultSuccess, TraceParent: tc.want}, got, raw)
	}
	// The worker's encoding/json writes it under the same name.
	raw, err := json.Marshal(Result{UID: "42", AttemptUID: "a1", Type: ResultSuccess, TraceParent: testTraceParent})
	require.NoError(t, err)
	require.Contains(t, string(raw), `"traceparent":"`+testTraceParent+`"`)
	raw, err = json.Marshal(Result{UID: "42", AttemptUID: "a1", Type: ResultSuccess})
	require.NoError(t, err)
	require.NotContains(t, string(raw), "traceparent")
}
