package redisio

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/valyala/fastjson"

	"github.com/refresher/refresher/internal/jsontext"
	"github.com/refresher/refresher/internal/payload"
)

// DefaultMaxResultBytes is the default size limit of one result message
// (64 KiB). A result is a small JSON object; anything larger is garbage or a
// worker bug and goes to the dead-letter list.
const DefaultMaxResultBytes = 64 << 10

// TimeoutAtLayout is the format of a job's timeout_at: RFC 3339 in UTC with
// exactly six fractional digits (microseconds; finer digits are cut).
const TimeoutAtLayout = "2006-01-02T15:04:05.000000Z"

// MaxRetryAfterSeconds is the largest retry_after_seconds a result may carry:
// the largest whole number of seconds a time.Duration holds (about 292 years).
const MaxRetryAfterSeconds = math.MaxInt64 / int64(time.Second)

// MaxExtendSeconds is the largest "seconds" an extend (or status) result
// may carry: 365 days. A larger value is a worker bug (a Unix time, or
// milliseconds, sent for seconds); the kind's max_timeout caps the rest.
const MaxExtendSeconds = 365 * 24 * 60 * 60

// ErrInvalidResult is wrapped by every error of DecodeResult.
var ErrInvalidResult = errors.New("invalid result")

// validResult is appended to every decode error, so that whoever reads the
// dead-letter list sees what a valid message looks like.
const validResult = `a valid result is a JSON object such as ` +
	`{"uid":"<uid of the job>","attempt_uid":"<attempt_uid of the job>","type":"failure",` +
	`"reason":"HTTP 503","user_friendly_reason":"","permanent":false,"retry_after_seconds":120,"status":""}; ` +
	`uid, attempt_uid and type ("success", "failure", "status" or "extend") are required, ` +
	`status is required when type is "status", seconds when type is "extend", the other fields are optional`

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s (%s)", ErrInvalidResult, fmt.Sprintf(format, args...), validResult)
}

// AppendJob appends the JSON of job to dst, as docs/protocol.md ("Jobs")
// defines it:
//
//	{"kind":"big_tables","uid":"42","attempt_uid":"d4n0q4a5n1p0bb6b6h20","attempt_no":1,
//	 "timeout_at":"2026-11-21T14:00:00.000000Z","payload":{"input_url":"https://example.com/a.csv"}}
//
// Fields always appear in this order; traceparent and tracestate follow
// the payload when the job has them. timeout_at is RFC 3339 in UTC with
// exactly six fractional digits (TimeoutAtLayout), whatever its value, so
// that parsers that want a fixed width (Python 3.10's fromisoformat, once
// the "Z" is replaced by "+00:00") read every job. Payload keys are
// sorted (from Payload or Fields, whichever is set); no payload is {}. Payload values of type string, []byte (as the
// text it holds: database/sql drivers return text columns as []byte), bool,
// integers, finite floats, time.Time (RFC 3339 UTC), json.Number and nil are
// written directly; other values go through encoding/json. Strings are
// escaped as encoding/json does, except that <, > and & are not escaped.
//
// It fails when kind, uid or attempt_uid is empty, timeout_at is zero or
// outside years 0-9999, or a payload value cannot be encoded (and returns
// dst as given).
func AppendJob(dst []byte, job Job) ([]byte, error) {
	return appendJob(dst, job, nil)
}

// timeText is the last timeout_at a push formatted (at, valid once text
// is set): the jobs of one batch mostly share it, and formatting a time
// is a good part of a job's encoding.
type timeText struct {
	at   time.Time
	text []byte
}

// appendJob is AppendJob; tt, when not nil, keeps the last timeout_at
// checked and formatted.
func appendJob(dst []byte, job Job, tt *timeText) ([]byte, error) {
	switch {
	case job.Kind == "":
		return dst, errors.New("encode job: kind is empty")
	case job.UID == "":
		return dst, fmt.Errorf("encode %s job: uid is empty", job.Kind)
	case job.AttemptUID == "":
		return dst, fmt.Errorf("encode %s job %s: attempt_uid is empty", job.Kind, job.UID)
	}
	var local timeText
	if tt == nil {
		tt = &local
	}
	if tt.text == nil || !tt.at.Equal(job.TimeoutAt) {
		switch {
		case job.TimeoutAt.IsZero():
			return dst, fmt.Errorf("encode %s job %s: timeout_at is zero", job.Kind, job.UID)
		case job.TimeoutAt.UTC().Year() > 9999 || job.TimeoutAt.UTC().Year() < 0:
			return dst, fmt.Errorf("encode %s job %s: timeout_at %s is outside years 0-9999", job.Kind, job.UID, job.TimeoutAt)
		}
		tt.at, tt.text = job.TimeoutAt, job.TimeoutAt.UTC().AppendFormat(tt.text[:0], TimeoutAtLayout)
	}
	b := append(dst, `{"kind":`...)
	b = jsontext.AppendString(b, job.Kind)
	b = append(b, `,"uid":`...)
	b = jsontext.AppendString(b, job.UID)
	b = append(b, `,"attempt_uid":`...)
	b = jsontext.AppendString(b, job.AttemptUID)
	b = append(b, `,"attempt_no":`...)
	b = strconv.AppendInt(b, int64(job.AttemptNo), 10)
	b = append(b, `,"timeout_at":"`...)
	b = append(b, tt.text...)
	b = append(b, `","payload":{`...)
	if job.Fields != nil {
		if job.Payload != nil {
			return dst, fmt.Errorf("encode %s job %s: both Payload and Fields are set", job.Kind, job.UID)
		}
		var err error
		if b, err = appendFields(b, job.Fields); err != nil {
			return dst, fmt.Errorf("encode %s job %s: %w", job.Kind, job.UID, err)
		}
	} else {
		var keysBuf [8]string
		keys := keysBuf[:0]
		for k := range job.Payload {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsontext.AppendString(b, k)
			b = append(b, ':')
			var err error
			if b, err = appendValue(b, job.Payload[k]); err != nil {
				return dst, fmt.Errorf("encode %s job %s: payload %q: %w", job.Kind, job.UID, k, err)
			}
		}
	}
	return append(appendTrace(append(b, '}'), job), '}'), nil
}

// appendFields appends the members of a payload object from f, in the
// order of their names, as a map's would be; a name listed twice (a
// column configured twice) is written once.
func appendFields(b []byte, f payload.Fields) ([]byte, error) {
	var orderBuf [8]int
	order := orderBuf[:0]
	for i := range f {
		// Insertion sort: a payload has a few columns.
		j := len(order)
		order = append(order, i)
		for ; j > 0 && f[order[j-1]].Name > f[i].Name; j-- {
			order[j] = order[j-1]
		}
		order[j] = i
	}
	for n, i := range order {
		if n > 0 {
			if f[order[n-1]].Name == f[i].Name {
				continue
			}
			b = append(b, ',')
		}
		b = jsontext.AppendString(b, f[i].Name)
		b = append(b, ':')
		var err error
		if b, err = appendValue(b, f[i].Value); err != nil {
			return b, fmt.Errorf("payload %q: %w", f[i].Name, err)
		}
	}
	return b, nil
}

// appendTrace appends the job's trace context fields, when it has them.
func appendTrace(b []byte, job Job) []byte {
	if job.TraceParent != "" {
		b = append(b, `,"traceparent":`...)
		b = jsontext.AppendString(b, job.TraceParent)
	}
	if job.TraceState != "" {
		b = append(b, `,"tracestate":`...)
		b = jsontext.AppendString(b, job.TraceState)
	}
	return b
}

func appendValue(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return jsontext.AppendString(b, v), nil
	case []byte:
		return jsontext.AppendString(b, string(v)), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case int:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int8:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int16:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int32:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int64:
		return strconv.AppendInt(b, v, 10), nil
	case uint:
		return strconv.AppendUint(b, uint64(v), 10), nil
	case uint8:
		return strconv.AppendUint(b, uint64(v), 10), nil
	case uint16:
		return strconv.AppendUint(b, uint64(v), 10), nil
	case uint32:
		return strconv.AppendUint(b, uint64(v), 10), nil
	case uint64:
		return strconv.AppendUint(b, v, 10), nil
	case float32:
		return appendFloat(b, float64(v), 32)
	case float64:
		return appendFloat(b, v, 64)
	case json.Number:
		if !json.Valid([]byte(v)) {
			return b, fmt.Errorf("invalid number %q", string(v))
		}
		return append(b, v...), nil
	case time.Time:
		if y := v.UTC().Year(); y < 0 || y > 9999 {
			return b, fmt.Errorf("time %s is outside years 0-9999", v)
		}
		b = append(b, '"')
		b = v.UTC().AppendFormat(b, time.RFC3339Nano)
		return append(b, '"'), nil
	default:
		raw, err := json.Marshal(v)
		if err != nil {
			return b, err
		}
		return append(b, raw...), nil
	}
}

// appendFloat formats f as encoding/json does.
func appendFloat(b []byte, f float64, bits int) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, fmt.Errorf("unsupported value %v", f)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

// DecodeResult decodes one message of an output list with the default size
// limit (DecodeResultLimit with DefaultMaxResultBytes).
func DecodeResult(raw []byte) (Result, error) {
	return DecodeResultLimit(raw, DefaultMaxResultBytes)
}

// DecodeResultLimit decodes one message of an output list strictly. It
// returns an error wrapping ErrInvalidResult that names what is wrong and
// shows a valid result when:
//
//   - the message is longer than maxBytes (0 or less: DefaultMaxResultBytes),
//   - it is not JSON, or not a JSON object, or nests deeper than 300 levels,
//   - uid, attempt_uid or type is missing, null or empty: every result must
//     carry the uid and the attempt_uid of the job it answers (attempt_uid is
//     never empty in a job, so an empty one is a worker bug, not a stale
//     result),
//   - type is not "success", "failure", "status" or "extend",
//   - type is "status" and there is no "status" string,
//   - type is "extend" and there is no "seconds",
//   - a known field has the wrong JSON type (strings for uid, attempt_uid,
//     type, reason, user_friendly_reason, status, scope and throttle_key; a boolean for
//     permanent; a whole number for retry_after_seconds and seconds),
//   - retry_after_seconds is negative, fractional or above
//     MaxRetryAfterSeconds,
//   - seconds (with any type) is not a whole number from 1 to
//     MaxExtendSeconds,
//   - scope is not "", "group" or "worker".
//
// Field names are matched exactly (case-sensitive). Optional fields may be
// null, which means absent. Unknown fields are accepted and ignored, so that
// workers may send more than this version knows (forward compatibility).
// Fields that do not belong to the type (e.g. reason on a success) are kept
// in the Result and left to the caller to ignore. traceparent is kept when
// it is a string of at most 256 bytes and ignored otherwise: trace context
// never sends a result to the dead letters.
func DecodeResultLimit(raw []byte, maxBytes int) (Result, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxResultBytes
	}
	if len(raw) > maxBytes {
		return Result{}, invalid("message is %d bytes, the limit is %d", len(raw), maxBytes)
	}
	if r, ok := decodePlainSuccess(raw); ok {
		return r, nil // what decodeResultJSON returns for it, in one pass
	}
	return decodeResultJSON(raw)
}

// decodeResultJSON is DecodeResultLimit's general path, for a message
// within the size limit.
func decodeResultJSON(raw []byte) (Result, error) {
	trimmed := bytes.TrimLeft(raw, " \t\r\n")
	if len(trimmed) == 0 {
		return Result{}, invalid("message is empty")
	}
	notJSON := func() error {
		var v any
		return invalid("message is not JSON: %v", json.Unmarshal(raw, &v))
	}
	if trimmed[0] != '{' {
		if !json.Valid(raw) {
			return Result{}, notJSON()
		}
		return Result{}, invalid("message is a JSON %s, not an object", jsonType(trimmed))
	}
	// What is JSON is what encoding/json says (validJSON), so that garbage
	// is refused exactly as before, with its error text; fastjson then
	// splits the object without reflection or a map (the hot path: every
	// result).
	if !validJSON(raw) {
		return Result{}, notJSON()
	}
	p := parsers.Get()
	defer parsers.Put(p)
	v, err := p.ParseBytes(raw)
	if err != nil {
		return Result{}, invalid("message is not a JSON object: %v", err)
	}
	var f resultFields
	v.GetObject().Visit(func(key []byte, v *fastjson.Value) {
		if i := slices.Index(resultFieldNames[:], string(key)); i >= 0 {
			f.vals[i] = v // the last of duplicate names wins, as in encoding/json
		}
	})
	if !utf8.Valid(raw) || bytes.Contains(raw, []byte(`\ud`)) || bytes.Contains(raw, []byte(`\uD`)) {
		// Invalid UTF-8 or a surrogate escape (perhaps a lone one): rare, and
		// where fastjson's strings differ from encoding/json's (which turns
		// each invalid byte and lone surrogate into U+FFFD); strings are
		// taken from encoding/json then. (Into a variable of its own: &f
		// handed to json.Unmarshal would put f on the heap on every call.)
		var exact map[string]json.RawMessage
		if err := json.Unmarshal(raw, &exact); err != nil {
			return Result{}, invalid("message is not a JSON object: %v", err)
		}
		f.exact = exact
	}
	var r Result
	if r.UID, r.AttemptUID, err = f.uids(); err != nil {
		return Result{}, err
	}
	if r.Type, err = f.resultType(); err != nil {
		return Result{}, err
	}
	if r.Reason, _, err = f.optionalString(fieldReason); err != nil {
		return Result{}, err
	}
	if r.UserFriendlyReason, _, err = f.optionalString(fieldUserFriendlyReason); err != nil {
		return Result{}, err
	}
	var hasStatus bool
	if r.Status, hasStatus, err = f.optionalString(fieldStatus); err != nil {
		return Result{}, err
	}
	if r.Scope, _, err = f.optionalString(fieldScope); err != nil {
		return Result{}, err
	}
	switch r.Scope {
	case "", ScopeGroup, ScopeWorker:
	default:
		return Result{}, invalid(`"scope" is %q, want "group" (the row's throttle group is throttled) or "worker" (the worker or its upstream is broken)`, r.Scope)
	}
	if r.ThrottleKey, _, err = f.optionalString(fieldThrottleKey); err != nil {
		return Result{}, err
	}
	if r.Type == ResultStatus && !hasStatus {
		return Result{}, invalid(`"status" is missing; a result of type "status" carries the text to show in "status"`)
	}
	if v := f.vals[fieldPermanent]; v != nil {
		switch v.Type() {
		case fastjson.TypeNull:
		case fastjson.TypeTrue:
			r.Permanent = true
		case fastjson.TypeFalse:
		default:
			return Result{}, invalid(`"permanent" is a %s, want true or false`, typeName(v))
		}
	}
	if v := f.vals[fieldRetryAfter]; v != nil && v.Type() != fastjson.TypeNull {
		if v.Type() != fastjson.TypeNumber {
			return Result{}, invalid(`"retry_after_seconds" is a %s, want a whole number of seconds >= 0`, typeName(v))
		}
		text := v.MarshalTo(nil)
		n, perr := strconv.ParseInt(string(text), 10, 64)
		if perr != nil || n < 0 || n > MaxRetryAfterSeconds {
			return Result{}, invalid(`"retry_after_seconds" is %s, want a whole number of seconds from 0 to %d`, text, MaxRetryAfterSeconds)
		}
		r.RetryAfterSeconds = int(n)
	}
	if r.Seconds, err = f.seconds(); err != nil {
		return Result{}, err
	}
	r.TraceParent = f.traceParent()
	if r.Type == ResultExtend && r.Seconds == 0 {
		return Result{}, invalid(`"seconds" is missing; a result of type "extend" asks for its attempt's timeout_at to be that many seconds from now, e.g. "seconds":600`)
	}
	return r, nil
}

// seconds returns the field "seconds" (0 when absent or null): how long
// from now an extend or status result asks its attempt to run.
func (f *resultFields) seconds() (int, error) {
	v := f.vals[fieldSeconds]
	if v == nil || v.Type() == fastjson.TypeNull {
		return 0, nil
	}
	const want = "want a whole number of seconds from 1 to %d (365 days): how long from now the attempt needs, not a time"
	if v.Type() != fastjson.TypeNumber {
		return 0, invalid(`"seconds" is a %s, `+want, typeName(v), MaxExtendSeconds)
	}
	text := v.MarshalTo(nil)
	n, err := strconv.ParseInt(string(text), 10, 64)
	if err != nil || n < 1 || n > MaxExtendSeconds {
		return 0, invalid(`"seconds" is %s, `+want, text, MaxExtendSeconds)
	}
	return int(n), nil
}

// maxTraceParent bounds the traceparent a result may carry: 55 bytes in
// version 00, with room for a later version's longer form.
const maxTraceParent = 256

// traceParent returns the field "traceparent" when it is a string of at
// most maxTraceParent bytes, "" otherwise: trace context is never a
// reason to refuse a result (an invalid one only starts a trace of its own).
func (f *resultFields) traceParent() string {
	v := f.vals[fieldTraceParent]
	if v == nil || v.Type() != fastjson.TypeString {
		return ""
	}
	b, err := v.StringBytes()
	if err != nil || len(b) > maxTraceParent {
		return ""
	}
	return string(b)
}

// parsers are reused by DecodeResultLimit, which may run concurrently.
var parsers fastjson.ParserPool

// The fields of a result that DecodeResultLimit reads, by index.
const (
	fieldUID = iota
	fieldAttemptUID
	fieldType
	fieldReason
	fieldUserFriendlyReason
	fieldStatus
	fieldPermanent
	fieldRetryAfter
	fieldScope
	fieldThrottleKey
	fieldSeconds
	fieldTraceParent
	numResultFields
)

// resultFieldNames are the JSON names of the fields, matched exactly.
var resultFieldNames = [numResultFields]string{"uid", "attempt_uid", "type", "reason", "user_friendly_reason", "status", "permanent", "retry_after_seconds", "scope", "throttle_key", "seconds", "traceparent"}

// resultFields holds the value of each field present in a message.
type resultFields struct {
	vals [numResultFields]*fastjson.Value
	// exact is the message decoded by encoding/json, set when its strings
	// must be taken from there (see DecodeResultLimit).
	exact map[string]json.RawMessage
}

// uids returns the required fields uid and attempt_uid, both in one
// allocation on the hot path (two strings per result otherwise).
func (f *resultFields) uids() (uid, attemptUID string, err error) {
	if f.exact != nil {
		if uid, err = f.requiredString(fieldUID); err != nil {
			return "", "", err
		}
		attemptUID, err = f.requiredString(fieldAttemptUID)
		return uid, attemptUID, err
	}
	u, err := f.requiredBytes(fieldUID)
	if err != nil {
		return "", "", err
	}
	a, err := f.requiredBytes(fieldAttemptUID)
	if err != nil {
		return "", "", err
	}
	var b strings.Builder
	b.Grow(len(u) + len(a))
	b.Write(u)
	b.Write(a)
	both := b.String()
	return both[:len(u)], both[len(u):], nil
}

// resultType returns the required field type, one of the Result*
// constants: the constant itself, with nothing allocated.
func (f *resultFields) resultType() (string, error) {
	var t []byte
	if f.exact != nil {
		s, err := f.requiredString(fieldType)
		if err != nil {
			return "", err
		}
		t = []byte(s)
	} else {
		var err error
		if t, err = f.requiredBytes(fieldType); err != nil {
			return "", err
		}
	}
	switch string(t) {
	case ResultSuccess:
		return ResultSuccess, nil
	case ResultFailure:
		return ResultFailure, nil
	case ResultStatus:
		return ResultStatus, nil
	case ResultExtend:
		return ResultExtend, nil
	}
	return "", invalid(`"type" is %q, want "success", "failure", "status" or "extend"`, t)
}

// requiredBytes is requiredString's text as fastjson holds it (valid until
// the parser is reused); not for f.exact's rare path.
func (f *resultFields) requiredBytes(i int) ([]byte, error) {
	v := f.vals[i]
	if v == nil || v.Type() == fastjson.TypeNull {
		return nil, invalid("%q is missing", resultFieldNames[i])
	}
	if v.Type() != fastjson.TypeString {
		return nil, invalid("%q is a %s, want a string", resultFieldNames[i], typeName(v))
	}
	b, err := v.StringBytes()
	if err != nil {
		return nil, invalid("%q: %v", resultFieldNames[i], err)
	}
	if len(b) == 0 {
		return nil, invalid("%q is empty", resultFieldNames[i])
	}
	return b, nil
}

func (f *resultFields) requiredString(i int) (string, error) {
	s, ok, err := f.optionalString(i)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", invalid("%q is missing", resultFieldNames[i])
	}
	if s == "" {
		return "", invalid("%q is empty", resultFieldNames[i])
	}
	return s, nil
}

// optionalString returns the string field i; ok is false when the field is
// absent or null. Invalid UTF-8 and lone surrogates become U+FFFD, as with
// encoding/json.
func (f *resultFields) optionalString(i int) (s string, ok bool, err error) {
	v := f.vals[i]
	if v == nil || v.Type() == fastjson.TypeNull {
		return "", false, nil
	}
	if v.Type() != fastjson.TypeString {
		return "", false, invalid("%q is a %s, want a string", resultFieldNames[i], typeName(v))
	}
	if f.exact != nil {
		return f.exactString(i)
	}
	b, err := v.StringBytes()
	if err != nil {
		return "", false, invalid("%q: %v", resultFieldNames[i], err)
	}
	return string(b), true, nil
}

// exactString is optionalString's rare path, through encoding/json (its own
// function so that its variable's escape costs nothing on the hot path).
func (f *resultFields) exactString(i int) (string, bool, error) {
	var s string
	if err := json.Unmarshal(f.exact[resultFieldNames[i]], &s); err != nil {
		return "", false, invalid("%q: %v", resultFieldNames[i], err)
	}
	return s, true, nil
}

// typeName names the JSON type of v for an error message.
func typeName(v *fastjson.Value) string {
	switch v.Type() {
	case fastjson.TypeString:
		return "string"
	case fastjson.TypeObject:
		return "object"
	case fastjson.TypeArray:
		return "array"
	case fastjson.TypeTrue, fastjson.TypeFalse:
		return "boolean"
	case fastjson.TypeNull:
		return "null"
	default:
		return "number"
	}
}

// jsonType names the type of a valid JSON value by its first byte.
func jsonType(v []byte) string {
	switch v[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	default:
		return "number"
	}
}

// validJSON reports whether raw is JSON as json.Valid decides it, at a
// fraction of its cost for the messages workers send: fastjson.Validate
// checks the same grammar (objects, arrays, numbers, literals, string
// escapes, whitespace; neither checks UTF-8) with two differences, and
// the messages where they could matter go to json.Valid itself: it misses
// a control character inside a string before its last escape (so: a
// message holding any byte below 0x20, a raw tab or newline inside a
// string or as whitespace), and it has no depth limit where json.Valid
// stops at 10000 levels. Nor is its cost linear in the depth: each level
// of an invalid message wraps the error of the level inside it, text and
// all, so garbage nested n deep costs it O(n²) (10,000 levels, 60 kB,
// within DefaultMaxResultBytes: 15 s and gigabytes allocated, where
// json.Valid takes a millisecond). So a message with more than
// maxFastOpens '[' and '{' (the results workers send have one or two) goes
// to json.Valid too. TestValidJSONMatchesEncodingJSON compares the two.
func validJSON(raw []byte) bool {
	opens := 0
	for _, c := range raw {
		switch {
		case c < 0x20:
			return json.Valid(raw)
		case c == '[' || c == '{':
			if opens++; opens > maxFastOpens {
				return json.Valid(raw)
			}
		}
	}
	return fastjson.ValidateBytes(raw) == nil
}

// maxFastOpens is the most '[' and '{' (in strings too) of a message that
// fastjson validates: its cost on garbage nested that deep is a few
// about 100 kB of error text, well under encoding/json's depth limit (10000).
const maxFastOpens = 64
