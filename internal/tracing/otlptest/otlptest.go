// Package otlptest is an OTLP/HTTP trace receiver for tests: it decodes
// what exporters post to /v1/traces, as protobuf (the Go SDK's
// otlptracehttp) or as JSON (examples/worker.py), and keeps the spans.
package otlptest

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Span is one received span, its ids in lowercase hex.
type Span struct {
	Service  string // the resource's service.name
	TraceID  string
	SpanID   string
	ParentID string // "" for a root span
	Name     string
	Kind     int               // OTLP's SpanKind: 4 producer, 5 consumer
	Attrs    map[string]string // values as text
	Failed   bool              // status code error
	Message  string            // the status message
	Encoding string            // "protobuf" or "json": how it came
}

// Receiver receives spans on URL (+ "/v1/traces").
type Receiver struct {
	URL   string
	mu    sync.Mutex
	spans []Span
	errs  []string
	heads []http.Header // of each request
}

// New starts a receiver, closed when the test ends. A request it cannot
// decode is answered 400 and fails the test at its end.
func New(t testing.TB) *Receiver {
	r := &Receiver{}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	r.URL = srv.URL
	t.Cleanup(func() {
		srv.Close()
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, e := range r.errs {
			t.Errorf("otlptest: %s", e)
		}
	})
	return r
}

// Header returns the values of the request header key, one per request
// received.
func (r *Receiver) Header(key string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, h := range r.heads {
		out = append(out, h.Get(key))
	}
	return out
}

// Spans returns the spans received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	fail := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		r.mu.Lock()
		r.errs = append(r.errs, msg)
		r.mu.Unlock()
		http.Error(w, msg, http.StatusBadRequest)
	}
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		fail("%s %s: want POST /v1/traces", req.Method, req.URL.Path)
		return
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		fail("read body: %v", err)
		return
	}
	var spans []Span
	switch ct := req.Header.Get("Content-Type"); {
	case strings.HasPrefix(ct, "application/x-protobuf"):
		var msg coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &msg); err != nil {
			fail("decode protobuf: %v", err)
			return
		}
		spans = fromProto(&msg)
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		defer w.Write(out) //nolint:errcheck // the exporter's problem
	case strings.HasPrefix(ct, "application/json"):
		if spans, err = fromJSON(body); err != nil {
			fail("decode JSON: %v: %s", err, body)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		defer io.WriteString(w, "{}") //nolint:errcheck
	default:
		fail("Content-Type %q: want application/x-protobuf or application/json", ct)
		return
	}
	r.mu.Lock()
	r.spans = append(r.spans, spans...)
	r.heads = append(r.heads, req.Header.Clone())
	r.mu.Unlock()
}

func fromProto(msg *coltracepb.ExportTraceServiceRequest) []Span {
	var out []Span
	for _, rs := range msg.GetResourceSpans() {
		service := attrs(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				out = append(out, Span{
					Service: service, TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					ParentID: hex.EncodeToString(s.GetParentSpanId()), Name: s.GetName(), Kind: int(s.GetKind()),
					Attrs:  attrs(s.GetAttributes()),
					Failed: s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR, Message: s.GetStatus().GetMessage(),
					Encoding: "protobuf",
				})
			}
		}
	}
	return out
}

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		switch v := kv.GetValue().GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.GetKey()] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.GetKey()] = strconv.FormatInt(v.IntValue, 10)
		case *commonpb.AnyValue_BoolValue:
			m[kv.GetKey()] = strconv.FormatBool(v.BoolValue)
		}
	}
	return m
}

// jsonKV is an attribute of OTLP/JSON.
type jsonKV struct {
	Key   string `json:"key"`
	Value struct {
		StringValue *string         `json:"stringValue"`
		IntValue    json.RawMessage `json:"intValue"` // a number or a string
		BoolValue   *bool           `json:"boolValue"`
	} `json:"value"`
}

func jsonAttrs(kvs []jsonKV) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		switch v := kv.Value; {
		case v.StringValue != nil:
			m[kv.Key] = *v.StringValue
		case v.IntValue != nil:
			m[kv.Key] = strings.Trim(string(v.IntValue), `"`)
		case v.BoolValue != nil:
			m[kv.Key] = strconv.FormatBool(*v.BoolValue)
		}
	}
	return m
}

// fromJSON decodes OTLP/JSON, whose ids are hex (not base64, as
// protojson would read them).
func fromJSON(body []byte) ([]Span, error) {
	var msg struct {
		ResourceSpans []struct {
			Resource struct {
				Attributes []jsonKV `json:"attributes"`
			} `json:"resource"`
			ScopeSpans []struct {
				Scope struct {
					Name    string `json:"name"`
					Version string `json:"version"`
				} `json:"scope"`
				Spans []struct {
					TraceID      string   `json:"traceId"`
					SpanID       string   `json:"spanId"`
					ParentSpanID string   `json:"parentSpanId"`
					Name         string   `json:"name"`
					Kind         int      `json:"kind"`
					Start        string   `json:"startTimeUnixNano"`
					End          string   `json:"endTimeUnixNano"`
					Attributes   []jsonKV `json:"attributes"`
					Status       struct {
						Code    int    `json:"code"`
						Message string `json:"message"`
					} `json:"status"`
				} `json:"spans"`
			} `json:"scopeSpans"`
		} `json:"resourceSpans"`
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields() // a misspelt field would be lost by a collector too
	if err := dec.Decode(&msg); err != nil {
		return nil, err
	}
	var out []Span
	for _, rs := range msg.ResourceSpans {
		service := jsonAttrs(rs.Resource.Attributes)["service.name"]
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				for _, id := range []struct {
					name, v string
					n       int
				}{{"traceId", s.TraceID, 16}, {"spanId", s.SpanID, 8}} {
					if b, err := hex.DecodeString(id.v); err != nil || len(b) != id.n {
						return nil, fmt.Errorf("%s %q is not %d bytes in hex", id.name, id.v, id.n)
					}
				}
				for _, t := range []string{s.Start, s.End} {
					if _, err := strconv.ParseUint(t, 10, 64); err != nil {
						return nil, fmt.Errorf("time %q: %w", t, err)
					}
				}
				out = append(out, Span{
					Service: service, TraceID: s.TraceID, SpanID: s.SpanID, ParentID: s.ParentSpanID, Name: s.Name, Kind: s.Kind,
					Attrs: jsonAttrs(s.Attributes), Failed: s.Status.Code == 2, Message: s.Status.Message, Encoding: "json",
				})
			}
		}
	}
	return out, nil
}
