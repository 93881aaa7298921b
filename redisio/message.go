package redisio

import (
	"time"

	"github.com/refresher/refresher/internal/payload"
)

// Job is one message on a kind's input list: a request to refresh one model.
//
//	{"kind":"big_tables","uid":"42","attempt_uid":"d4n0q4a5n1p0bb6b6h20","attempt_no":1,
//	 "timeout_at":"2026-11-21T14:00:00.000000Z","payload":{"input_url":"https://example.com/a.csv"}}
type Job struct {
	Kind       string         `json:"kind"`
	UID        string         `json:"uid"`
	AttemptUID string         `json:"attempt_uid"`
	AttemptNo  int            `json:"attempt_no"`
	TimeoutAt  time.Time      `json:"timeout_at"` // sent as TimeoutAtLayout
	Payload    map[string]any `json:"payload"`
	// Fields is the payload as the service reads it with each row, in
	// place of Payload (which a decoded job fills): the encoder writes
	// either, keys sorted, the same JSON. A job sets at most one of them.
	Fields payload.Fields `json:"-"`
	// TraceParent and TraceState are the W3C trace context of the job's
	// dispatch span, when the service traces (docs/protocol.md, "Traces"):
	// a worker continues the trace and sends its own traceparent back.
	TraceParent string `json:"traceparent,omitempty"`
	TraceState  string `json:"tracestate,omitempty"`
}

// Result types a worker may send.
const (
	ResultSuccess = "success"
	ResultFailure = "failure"
	ResultStatus  = "status"
	// ResultExtend asks for more time: the attempt's timeout_at becomes
	// now + Seconds, within the kind's bounds (docs/protocol.md, "Leases").
	ResultExtend = "extend"
)

// Scopes a failure may carry (Result.Scope).
const (
	ScopeGroup  = "group"
	ScopeWorker = "worker"
)

// Result is one message on a kind's output list: what a worker reports about
// one attempt.
//
//	{"uid":"42","attempt_uid":"d4n0q4a5n1p0bb6b6h20","type":"failure","reason":"HTTP 503",
//	 "user_friendly_reason":"","permanent":false,"retry_after_seconds":120,"status":""}
type Result struct {
	UID                string `json:"uid"`
	AttemptUID         string `json:"attempt_uid"`
	Type               string `json:"type"`
	Reason             string `json:"reason,omitempty"`
	UserFriendlyReason string `json:"user_friendly_reason,omitempty"`
	Permanent          bool   `json:"permanent,omitempty"`
	RetryAfterSeconds  int    `json:"retry_after_seconds,omitempty"`
	Status             string `json:"status,omitempty"`
	// Scope says whose fault a failure is: "" (the model's), "group" (the
	// row's throttle group is throttled: the attempt does not count) or
	// "worker" (the worker or its upstream is broken: the kind enters an
	// incident). See docs/protocol.md, "Results".
	Scope string `json:"scope,omitempty"`
	// ThrottleKey names the throttle group a failure with
	// retry_after_seconds holds (e.g. the host or credential id); "" for
	// none.
	ThrottleKey string `json:"throttle_key,omitempty"`
	// Seconds asks, with type "extend" or "status", that the attempt's
	// timeout_at be Seconds from now (a lease); 0 for none.
	Seconds int `json:"seconds,omitempty"`
	// TraceParent is the W3C traceparent of the worker's span of the job
	// (or the job's own, passed on); "" for none. The service's span of
	// applying the result is its child. An invalid one is ignored.
	TraceParent string `json:"traceparent,omitempty"`
}
