// Package tracing follows one refresh across processes with OpenTelemetry
// traces: the service's dispatch of a job, the worker's work on it and the
// service's apply of its result share one trace, carried through Redis as
// W3C trace context (the job's "traceparent" and "tracestate", the result's
// "traceparent"; docs/protocol.md).
//
// It is the only package of the module that imports OpenTelemetry. Tracing
// is off unless the standard OTEL_* environment asks for it (see Enabled);
// off, a *Tracer is nil and every method of a nil *Tracer and of a zero
// Span does nothing and allocates nothing, so that the service's callers
// only test for nil once per batch.
package tracing

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/refresher/refresher/internal/redact"
)

// Attribute names of the spans.
const (
	AttrKind       = "refresher.kind"
	AttrKey        = "refresher.key" // the row's key, the job's uid
	AttrAttemptUID = "refresher.attempt_uid"
	AttrAttemptNo  = "refresher.attempt_no"
	AttrList       = "messaging.destination.name" // the Redis list a job was pushed to
	AttrResultType = "refresher.result.type"
	AttrOutcome    = "refresher.result.outcome" // applied, stale, late, dead_letter
)

// Protocols of OTEL_EXPORTER_OTLP_PROTOCOL that Setup exports with.
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// Enabled reports whether the environment (getenv) asks for traces:
//
//   - OTEL_SDK_DISABLED=true, or OTEL_TRACES_EXPORTER=none: off;
//   - OTEL_TRACES_EXPORTER=otlp: on (to the exporter's default endpoint,
//     localhost, when no endpoint is set);
//   - OTEL_TRACES_EXPORTER unset: on when OTEL_EXPORTER_OTLP_ENDPOINT or
//     OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set, off otherwise.
//
// Unlike OpenTelemetry's default (otlp), an unset environment is off: most
// installations collect no traces, and off costs nothing. Any other
// exporter (console, zipkin) is an error.
func Enabled(getenv func(string) string) (bool, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false, nil
	}
	switch v := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); v {
	case "none":
		return false, nil
	case "otlp":
		return true, nil
	case "":
		return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "", nil
	default:
		return false, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: refresher exports traces with \"otlp\" only (or \"none\")", v)
	}
}

// Protocol returns the OTLP protocol the environment asks for:
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL,
// else ProtocolHTTP. http/json is an error: the Go exporters do not speak
// it.
func Protocol(getenv func(string) string) (string, error) {
	name := "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL" // the error names the variable set
	p := strings.TrimSpace(getenv(name))
	if p == "" {
		name = "OTEL_EXPORTER_OTLP_PROTOCOL"
		p = strings.TrimSpace(cmp.Or(getenv(name), ProtocolHTTP))
	}
	switch p {
	case ProtocolHTTP, ProtocolGRPC:
		return p, nil
	default:
		return "", fmt.Errorf("%s=%q: want %q or %q", name, p, ProtocolHTTP, ProtocolGRPC)
	}
}

// Tracer makes the spans of one process. Its zero value is not usable: a
// nil *Tracer is tracing turned off.
type Tracer struct {
	tracer   trace.Tracer
	provider *sdktrace.TracerProvider
}

// Setup returns the process's Tracer when the environment turns tracing on
// (Enabled), or nil. The exporters, the sampler, the batch span processor
// and the resource read the rest of the standard environment themselves
// (OTEL_EXPORTER_OTLP_ENDPOINT, _HEADERS, _TIMEOUT, _CERTIFICATE,
// OTEL_TRACES_SAMPLER and _ARG, OTEL_BSP_*, OTEL_RESOURCE_ATTRIBUTES,
// OTEL_SERVICE_NAME); service is service.name when OTEL_SERVICE_NAME is
// unset. Errors of the exporter (a collector that does not answer) are
// logged to log as warnings; they never stop the caller. Shutdown sends
// the spans still buffered.
func Setup(ctx context.Context, service string, log *slog.Logger) (*Tracer, error) {
	on, err := Enabled(os.Getenv)
	if err != nil || !on {
		return nil, err
	}
	proto, err := Protocol(os.Getenv)
	if err != nil {
		return nil, err
	}
	var exp sdktrace.SpanExporter
	if proto == ProtocolGRPC {
		exp, err = otlptracegrpc.New(ctx)
	} else {
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP %s exporter: %w", proto, err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", service)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win
	)
	if err != nil {
		return nil, fmt.Errorf("tracing: resource from OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("tracing: cannot export spans", "err", err) }))
	provider := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	endpoint := cmp.Or(os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"), "the exporter's default (localhost)")
	log.Info("tracing on", "protocol", proto, "endpoint", redact.URL(endpoint), "sampler", cmp.Or(os.Getenv("OTEL_TRACES_SAMPLER"), "parentbased_always_on"))
	return New(provider), nil
}

// New returns a Tracer of provider (tests give theirs an in-memory
// exporter). Shutdown shuts the provider down.
func New(provider *sdktrace.TracerProvider) *Tracer {
	return &Tracer{tracer: provider.Tracer("github.com/refresher/refresher"), provider: provider}
}

// Shutdown sends the buffered spans and stops the exporter; nil does
// nothing.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.provider.Shutdown(ctx)
}

// Flush sends the buffered spans now; nil does nothing.
func (t *Tracer) Flush(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.provider.ForceFlush(ctx)
}

// Job names the job a span is about.
type Job struct {
	Kind, Key, AttemptUID string
	AttemptNo             int
}

// attrs returns the span's attributes: the job's, then more.
func (j Job) attrs(more ...attribute.KeyValue) trace.SpanStartEventOption {
	kvs := make([]attribute.KeyValue, 3, 3+len(more))
	kvs[0] = attribute.String(AttrKind, j.Kind)
	kvs[1] = attribute.String(AttrKey, j.Key)
	kvs[2] = attribute.String(AttrAttemptUID, j.AttemptUID)
	return trace.WithAttributes(append(kvs, more...)...)
}

// The span kinds as start options, made once.
var (
	producer = trace.WithSpanKind(trace.SpanKindProducer)
	consumer = trace.WithSpanKind(trace.SpanKindConsumer)
)

// Context is W3C trace context as it travels in a job or a result.
type Context struct {
	Parent string // traceparent, "00-<trace id>-<span id>-<flags>"
	State  string // tracestate, often empty
}

// Get, Set and Keys make Context a propagation.TextMapCarrier without a
// map.
func (c *Context) Get(key string) string {
	switch key {
	case "traceparent":
		return c.Parent
	case "tracestate":
		return c.State
	}
	return ""
}

func (c *Context) Set(key, value string) {
	switch key {
	case "traceparent":
		c.Parent = value
	case "tracestate":
		c.State = value
	}
}

func (c *Context) Keys() []string { return []string{"traceparent", "tracestate"} }

var w3c propagation.TraceContext

// remote returns ctx with the span that c names as its remote parent; ctx
// as it is when c names none or is invalid.
func remote(ctx context.Context, c Context) context.Context {
	if c.Parent == "" {
		return ctx
	}
	return w3c.Extract(ctx, &c)
}

// of returns the trace context of span, to send on.
func of(span trace.Span) Context {
	var c Context
	w3c.Inject(trace.ContextWithSpan(context.Background(), span), &c)
	return c
}

// Span is one span in progress; the zero Span (tracing off) does nothing.
type Span struct {
	span trace.Span
}

// Fail marks the span as failed with why (a reason without secrets).
func (s Span) Fail(why string) {
	if s.span != nil {
		s.span.SetStatus(codes.Error, why)
	}
}

// Outcome notes what became of a result (AttrOutcome).
func (s Span) Outcome(word string) {
	if s.span != nil {
		s.span.SetAttributes(attribute.String(AttrOutcome, word))
	}
}

// ResultType notes the type of the result a span made or applied.
func (s Span) ResultType(typ string) {
	if s.span != nil {
		s.span.SetAttributes(attribute.String(AttrResultType, typ))
	}
}

// End ends the span now.
func (s Span) End() {
	if s.span != nil {
		s.span.End()
	}
}

// Dispatch starts the span of one job's dispatch at start (the pass's
// claim began then), the root of the refresh's trace: "dispatch <kind>",
// a producer span with the job and the list it goes to. It returns the
// trace context to put into the job. It ends once the job is pushed.
func (t *Tracer) Dispatch(start time.Time, j Job, list string) (Span, Context) {
	if t == nil {
		return Span{}, Context{}
	}
	_, span := t.tracer.Start(context.Background(), "dispatch "+j.Kind, trace.WithNewRoot(), trace.WithTimestamp(start),
		producer, j.attrs(attribute.Int(AttrAttemptNo, j.AttemptNo), attribute.String(AttrList, list)))
	return Span{span}, of(span)
}

// Work starts a worker's span of one job, "refresh <kind>", a consumer
// span that is the child of the job's trace context (a trace of its own
// when the job has none, or an invalid one). It returns ctx with the span,
// and the trace context to send back with the result. A nil Tracer (the
// worker exports no spans) passes the job's trace context on as it is, so
// that the service's apply span still joins the trace.
func (t *Tracer) Work(ctx context.Context, j Job, from Context) (context.Context, Span, Context) {
	if t == nil {
		return ctx, Span{}, from
	}
	ctx, span := t.tracer.Start(remote(ctx, from), "refresh "+j.Kind, consumer, j.attrs(attribute.Int(AttrAttemptNo, j.AttemptNo)))
	return ctx, Span{span}, of(span)
}

// Apply starts the span of applying one result at start (when its batch
// began to be applied): "apply <kind>", a consumer span, the child of the
// span that the result's trace context names (the worker's span; a trace
// of its own when the result has none, or an invalid one), with the
// result's type and outcome (AttrOutcome; "" for none). It ends once the
// batch is acknowledged.
func (t *Tracer) Apply(start time.Time, j Job, resultType, outcome string, from Context) Span {
	if t == nil {
		return Span{}
	}
	typ := attribute.String(AttrResultType, resultType)
	attrs := j.attrs(typ)
	if outcome != "" {
		attrs = j.attrs(typ, attribute.String(AttrOutcome, outcome))
	}
	_, span := t.tracer.Start(remote(context.Background(), from), "apply "+j.Kind, trace.WithTimestamp(start), consumer, attrs)
	return Span{span}
}
