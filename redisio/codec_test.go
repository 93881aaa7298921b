package redisio

import (
	"encoding/json"
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/payload"
)

// encodeJob is AppendJob to a new slice.
func encodeJob(job Job) ([]byte, error) { return AppendJob(nil, job) }

func TestEncodeJobShape(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	job := Job{
		Kind: "big_tables", UID: "42", AttemptUID: "d4n0q4a5n1p0bb6b6h20", AttemptNo: 1,
		TimeoutAt: time.Date(2026, 11, 21, 15, 0, 0, 0, berlin), // 14:00 UTC
		Payload:   map[string]any{"input_url": "https://example.com/a.csv?x=1&y=<2>"},
	}
	got, err := encodeJob(job)
	require.NoError(t, err)
	require.Equal(t, `{"kind":"big_tables","uid":"42","attempt_uid":"d4n0q4a5n1p0bb6b6h20","attempt_no":1,`+
		`"timeout_at":"2026-11-21T14:00:00.000000Z","payload":{"input_url":"https://example.com/a.csv?x=1&y=<2>"}}`, string(got))

	job.Payload = nil
	job.TimeoutAt = time.Date(2026, 11, 21, 14, 0, 0, 123456000, time.UTC)
	got, err = encodeJob(job)
	require.NoError(t, err)
	require.Equal(t, `{"kind":"big_tables","uid":"42","attempt_uid":"d4n0q4a5n1p0bb6b6h20","attempt_no":1,`+
		`"timeout_at":"2026-11-21T14:00:00.123456Z","payload":{}}`, string(got))

	// Always six decimals (issue 10: 18:17:30.000742Z and 18:18:02.10743Z
	// were both sent; Python's fromisoformat wants a fixed width).
	for _, tc := range []struct {
		ns   int
		want string
	}{{742000, "14:00:00.000742Z"}, {107430000, "14:00:00.107430Z"}, {999999999, "14:00:00.999999Z"}, {1, "14:00:00.000000Z"}} {
		job.TimeoutAt = time.Date(2026, 11, 21, 14, 0, 0, tc.ns, time.UTC)
		got, err := encodeJob(job)
		require.NoError(t, err)
		require.Contains(t, string(got), `"timeout_at":"2026-11-21T`+tc.want+`"`)
	}
	job.TimeoutAt = time.Date(2026, 11, 21, 14, 0, 0, 123456000, time.UTC)
	got, err = encodeJob(job)
	require.NoError(t, err)

	// The decoded job is the job (in UTC).
	var back Job
	require.NoError(t, json.Unmarshal(got, &back))
	require.True(t, back.TimeoutAt.Equal(job.TimeoutAt))
	require.Equal(t, time.UTC, back.TimeoutAt.Location())
}

// Every payload value the fast path writes must read back as encoding/json
// reads its own output.
func TestEncodeJobPayloadMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	payload := map[string]any{
		"s":       "quote\" backslash\\ nl\n tab\t ctl\x01 del\x7f é 日本 \u2028 <&>",
		"bytes":   []byte("text column"),
		"invalid": "a\xffb",
		"null":    nil, "t": true, "f": false,
		"i": -7, "i8": int8(-8), "i16": int16(16), "i32": int32(-32), "i64": int64(math.MinInt64),
		"u": uint(7), "u8": uint8(8), "u16": uint16(16), "u32": uint32(32), "u64": uint64(math.MaxUint64),
		"f64": 1.5, "tiny": 1e-7, "huge": 1e21, "f32": float32(0.1), "zero": 0.0, "neg": -2.25e-9,
		"num":   json.Number("12.50"),
		"time":  time.Date(2026, 1, 2, 3, 4, 5, 6000, time.FixedZone("X", 3600)),
		"slice": []int{1, 2}, "map": map[string]int{"b": 2, "a": 1},
	}
	got, err := encodeJob(Job{Kind: "k", UID: "u", AttemptUID: "a", TimeoutAt: time.Unix(0, 0), Payload: payload})
	require.NoError(t, err)
	require.True(t, json.Valid(got), "%s", got)

	var gotJob struct{ Payload map[string]any }
	require.NoError(t, json.Unmarshal(got, &gotJob))
	want := map[string]any{}
	for k, v := range payload {
		if b, ok := v.([]byte); ok {
			v = string(b) // documented: []byte is its text
		}
		if tm, ok := v.(time.Time); ok {
			v = tm.UTC() // documented: times in UTC
		}
		raw, err := json.Marshal(v)
		require.NoError(t, err)
		var w any
		require.NoError(t, json.Unmarshal(raw, &w))
		want[k] = w
	}
	require.Equal(t, want, gotJob.Payload)
	require.Contains(t, string(got), `"f32":0.1,`)
	require.Contains(t, string(got), `"tiny":1e-7,`)
	require.Contains(t, string(got), `"neg":-2.25e-9,`)
	require.Contains(t, string(got), `"huge":1e+21,`)
	require.Contains(t, string(got), `"invalid":"a\ufffdb"`)
	require.Contains(t, string(got), `\u2028 <&>"`)
	require.Contains(t, string(got), `ctl\u0001 del`)
}

// TestEncodeJobFieldsAsPayload: a job whose payload comes as Fields (the
// service's, in the table's column order) is encoded byte for byte as the
// same payload in a map: keys sorted, a column listed twice written once,
// none as {}.
func TestEncodeJobFieldsAsPayload(t *testing.T) {
	t.Parallel()
	m := map[string]any{"url": "https://x/1?a=<b>", "size": int64(7), "ratio": 0.25, "null": nil, "raw": []byte("r"), "a": true}
	fields := payload.Fields{{Name: "url", Value: m["url"]}, {Name: "size", Value: m["size"]}, {Name: "ratio", Value: m["ratio"]},
		{Name: "size", Value: m["size"]}, {Name: "null"}, {Name: "raw", Value: m["raw"]}, {Name: "a", Value: m["a"]}}
	job := Job{Kind: "k", UID: "u", AttemptUID: "a", AttemptNo: 2, TimeoutAt: time.Unix(0, 0), TraceParent: "00-x"}
	for _, tc := range []struct {
		name string
		m    map[string]any
		f    payload.Fields
	}{
		{"many", m, fields},
		{"one", map[string]any{"url": "u"}, payload.Fields{{Name: "url", Value: "u"}}},
		{"none", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			byMap, byFields := job, job
			byMap.Payload, byFields.Fields = tc.m, tc.f
			want, err := encodeJob(byMap)
			require.NoError(t, err)
			got, err := encodeJob(byFields)
			require.NoError(t, err)
			require.Equal(t, string(want), string(got))
		})
	}
}

func TestEncodeJobErrors(t *testing.T) {
	t.Parallel()
	ok := Job{Kind: "k", UID: "7", AttemptUID: "a", TimeoutAt: time.Unix(1, 0)}
	for _, tc := range []struct {
		name string
		mod  func(*Job)
		want string
	}{
		{"no kind", func(j *Job) { j.Kind = "" }, "encode job: kind is empty"},
		{"no uid", func(j *Job) { j.UID = "" }, "encode k job: uid is empty"},
		{"no attempt", func(j *Job) { j.AttemptUID = "" }, "encode k job 7: attempt_uid is empty"},
		{"no timeout", func(j *Job) { j.TimeoutAt = time.Time{} }, "encode k job 7: timeout_at is zero"},
		{"NaN", func(j *Job) { j.Payload = map[string]any{"x": math.NaN()} }, `encode k job 7: payload "x": unsupported value NaN`},
		{"chan", func(j *Job) { j.Payload = map[string]any{"c": make(chan int)} }, `encode k job 7: payload "c": json: unsupported type: chan int`},
		{"NaN field", func(j *Job) { j.Fields = payload.Fields{{Name: "x", Value: math.NaN()}} }, `encode k job 7: payload "x": unsupported value NaN`},
		{"both", func(j *Job) { j.Payload, j.Fields = map[string]any{}, payload.Fields{{Name: "x"}} }, `encode k job 7: both Payload and Fields are set`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := ok
			tc.mod(&j)
			_, err := encodeJob(j)
			require.EqualError(t, err, tc.want)
		})
	}
}

// secondsWant ends every error about "seconds".
const secondsWant = `want a whole number of seconds from 1 to 31536000 (365 days): how long from now the attempt needs, not a time`

func TestDecodeResult(t *testing.T) {
	t.Parallel()
	good := []struct {
		raw  string
		want Result
	}{
		{`{"uid":"42","attempt_uid":"a1","type":"success"}`, Result{UID: "42", AttemptUID: "a1", Type: ResultSuccess}},
		{`{"uid":"42","attempt_uid":"a1","type":"failure","reason":"HTTP 503","user_friendly_reason":"","permanent":false,"retry_after_seconds":120,"status":""}`,
			Result{UID: "42", AttemptUID: "a1", Type: ResultFailure, Reason: "HTTP 503", RetryAfterSeconds: 120}},
		{`{"uid":"42","attempt_uid":"a1","type":"failure","reason":"404","user_friendly_reason":"Provided URL is invalid","permanent":true}`,
			Result{UID: "42", AttemptUID: "a1", Type: ResultFailure, Reason: "404", UserFriendlyReason: "Provided URL is invalid", Permanent: true}},
		{` {"uid":"42","attempt_uid":"a1","type":"status","status":"importing 3/10"} `,
			Result{UID: "42", AttemptUID: "a1", Type: ResultStatus, Status: "importing 3/10"}},
		{`{"uid":"42","attempt_uid":"a1","type":"status","status":""}`, Result{UID: "42", AttemptUID: "a1", Type: ResultStatus}},
		// null means absent; unknown fields are ignored (forward compatible).
		{`{"uid":"42","attempt_uid":"a1","type":"success","reason":null,"permanent":null,"retry_after_seconds":null,"worker":"py-3","extra":{"a":[1]}}`,
			Result{UID: "42", AttemptUID: "a1", Type: ResultSuccess}},
		{`{"uid":"42","attempt_uid":"a1","type":"failure","retry_after_seconds":0}`, Result{UID: "42", AttemptUID: "a1", Type: ResultFailure}},
		{`{"uid":"\u00e9","attempt_uid":"a1","type":"success"}`, Result{UID: "é", AttemptUID: "a1", Type: ResultSuccess}},
		{`{"uid":"42","attempt_uid":"a1","type":"failure","reason":"HTTP 429","retry_after_seconds":60,"scope":"group","throttle_key":"api.example.com"}`,
			Result{UID: "42", AttemptUID: "a1", Type: ResultFailure, Reason: "HTTP 429", RetryAfterSeconds: 60, Scope: ScopeGroup, ThrottleKey: "api.example.com"}},
		{`{"uid":"42","attempt_uid":"a1","type":"failure","scope":"worker","throttle_key":null}`,
			Result{UID: "42", AttemptUID: "a1", Type: ResultFailure, Scope: ScopeWorker}},
		{`{"uid":"42","attempt_uid":"a1","type":"failure","scope":""}`, Result{UID: "42", AttemptUID: "a1", Type: ResultFailure}},
		{`{"uid":"42","attempt_uid":"a1","type":"extend","seconds":600}`, Result{UID: "42", AttemptUID: "a1", Type: ResultExtend, Seconds: 600}},
		{`{"uid":"42","attempt_uid":"a1","type":"extend","seconds":1,"status":"downloading"}`,
			Result{UID: "42", AttemptUID: "a1", Type: ResultExtend, Seconds: 1, Status: "downloading"}},
		{`{"uid":"42","attempt_uid":"a1","type":"extend","seconds":31536000}`, Result{UID: "42", AttemptUID: "a1", Type: ResultExtend, Seconds: 31536000}},
		{`{"uid":"42","attempt_uid":"a1","type":"status","status":"40%","seconds":900}`,
			Result{UID: "42", AttemptUID: "a1", Type: ResultStatus, Status: "40%", Seconds: 900}},
		{`{"uid":"42","attempt_uid":"a1","type":"status","status":"40%","seconds":null}`, Result{UID: "42", AttemptUID: "a1", Type: ResultStatus, Status: "40%"}},
	}
	for _, tc := range good {
		got, err := DecodeResult([]byte(tc.raw))
		require.NoError(t, err, tc.raw)
		require.Equal(t, tc.want, got, tc.raw)
	}

	bad := []struct{ raw, want string }{
		{``, `message is empty`},
		{`  `, `message is empty`},
		{`hello`, `message is not JSON: invalid character 'h' looking for beginning of value`},
		{`{"uid":"42",`, `message is not JSON: unexpected end of JSON input`},
		{`[1,2]`, `message is a JSON array, not an object`},
		{`"success"`, `message is a JSON string, not an object`},
		{`null`, `message is a JSON null, not an object`},
		{`{"attempt_uid":"a1","type":"success"}`, `"uid" is missing`},
		{`{"uid":null,"attempt_uid":"a1","type":"success"}`, `"uid" is missing`},
		{`{"UID":"42","attempt_uid":"a1","type":"success"}`, `"uid" is missing`},
		{`{"uid":"","attempt_uid":"a1","type":"success"}`, `"uid" is empty`},
		{`{"uid":42,"attempt_uid":"a1","type":"success"}`, `"uid" is a number, want a string`},
		{`{"uid":"42","type":"success"}`, `"attempt_uid" is missing`},
		{`{"uid":"42","attempt_uid":"","type":"success"}`, `"attempt_uid" is empty`},
		{`{"uid":"42","attempt_uid":["a"],"type":"success"}`, `"attempt_uid" is a array, want a string`},
		{`{"uid":"42","attempt_uid":"a1"}`, `"type" is missing`},
		{`{"uid":"42","attempt_uid":"a1","type":"done"}`, `"type" is "done", want "success", "failure", "status" or "extend"`},
		{`{"uid":"42","attempt_uid":"a1","type":true}`, `"type" is a boolean, want a string`},
		{`{"uid":"42","attempt_uid":"a1","type":"status"}`, `"status" is missing; a result of type "status" carries the text to show in "status"`},
		{`{"uid":"42","attempt_uid":"a1","type":"status","status":5}`, `"status" is a number, want a string`},
		{`{"uid":"42","attempt_uid":"a1","type":"failure","reason":{"code":1}}`, `"reason" is a object, want a string`},
		{`{"uid":"42","attempt_uid":"a1","type":"failure","user_friendly_reason":false}`, `"user_friendly_reason" is a boolean, want a string`},
		{`{"uid":"42","attempt_uid":"a1","type":"failure","permanent":"yes"}`, `"permanent" is a string, want true or false`},
		{`{"uid":"42","attempt_uid":"a1","type":"failure","permanent":1}`, `"permanent" is a number, want true or false`},
		{`{"uid":"42","attempt_uid":"a1","type":"failure","retry_after_seconds":-5}`, `"retry_after_seconds" is -5, want a whole number of seconds from 0 to 9223372036`},
		{`{"uid":"42","attempt_uid":"a1","type":"failure","retry_after_seconds":1.5}`, `"retry_after_seconds" is 1.5, want a whole number of seconds from 0 to 9223372036`},
		{`{"uid":"42","attempt_uid":"a1","type":"failure","retry_after_seconds":9223372037}`, `"retry_after_seconds" is 9223372037, want a whole number of seconds from 0 to 9223372036`},
		{`{"uid":"42","attempt_uid":"a1","type":"failure","retry_after_seconds":"60"}`, `"retry_after_seconds" is a string, want a whole number of seconds >= 0`},
		{`{"uid":"42","attempt_uid":"a1","type":"failure","scope":"model"}`, `"scope" is "model", want "group" (the row's throttle group is throttled) or "worker" (the worker or its upstream is broken)`},
		{`{"uid":"42","attempt_uid":"a1","type":"failure","scope":true}`, `"scope" is a boolean, want a string`},
		{`{"uid":"42","attempt_uid":"a1","type":"failure","throttle_key":7}`, `"throttle_key" is a number, want a string`},
		{`{"uid":"42","attempt_uid":"a1","type":"extend"}`, `"seconds" is missing; a result of type "extend" asks for its attempt's timeout_at to be that many seconds from now, e.g. "seconds":600`},
		{`{"uid":"42","attempt_uid":"a1","type":"extend","seconds":null}`, `"seconds" is missing; a result of type "extend" asks for its attempt's timeout_at to be that many seconds from now, e.g. "seconds":600`},
		{`{"uid":"42","attempt_uid":"a1","type":"extend","seconds":0}`, `"seconds" is 0, ` + secondsWant},
		{`{"uid":"42","attempt_uid":"a1","type":"extend","seconds":-600}`, `"seconds" is -600, ` + secondsWant},
		{`{"uid":"42","attempt_uid":"a1","type":"extend","seconds":600.5}`, `"seconds" is 600.5, ` + secondsWant},
		{`{"uid":"42","attempt_uid":"a1","type":"extend","seconds":6e2}`, `"seconds" is 6e2, ` + secondsWant},
		{`{"uid":"42","attempt_uid":"a1","type":"extend","seconds":1764120000}`, `"seconds" is 1764120000, ` + secondsWant},
		{`{"uid":"42","attempt_uid":"a1","type":"extend","seconds":99999999999999999999}`, `"seconds" is 99999999999999999999, ` + secondsWant},
		{`{"uid":"42","attempt_uid":"a1","type":"extend","seconds":"600"}`, `"seconds" is a string, ` + secondsWant},
		{`{"uid":"42","attempt_uid":"a1","type":"status","status":"x","seconds":-1}`, `"seconds" is -1, ` + secondsWant},
		{`{"uid":"42","attempt_uid":"a1","type":"success","padding":"` + strings.Repeat("x", 1<<20) + `"}`, `message is 1048637 bytes, the limit is 65536`},
	}
	for _, tc := range bad {
		_, err := DecodeResult([]byte(tc.raw))
		require.Error(t, err, tc.raw)
		require.True(t, errors.Is(err, ErrInvalidResult))
		require.Equal(t, "invalid result: "+tc.want+" ("+validResult+")", err.Error(), "%.80s", tc.raw)
	}

	// One full text, as an operator reads it in the dead-letter list.
	_, err := DecodeResult([]byte(`{"uid":"42","attempt_uid":"a1","type":"done"}`))
	require.EqualError(t, err, `invalid result: "type" is "done", want "success", "failure", "status" or "extend" `+
		`(a valid result is a JSON object such as {"uid":"<uid of the job>","attempt_uid":"<attempt_uid of the job>",`+
		`"type":"failure","reason":"HTTP 503","user_friendly_reason":"","permanent":false,"retry_after_seconds":120,"status":""}; `+
		`uid, attempt_uid and type ("success", "failure", "status" or "extend") are required, status is required when type is "status", seconds when type is "extend", `+
		`the other fields are optional)`)
}

func TestDecodeResultLimit(t *testing.T) {
	t.Parallel()
	raw := []byte(`{"uid":"42","attempt_uid":"a1","type":"success"}`) // 48 bytes
	_, err := DecodeResultLimit(raw, len(raw))
	require.NoError(t, err)
	_, err = DecodeResultLimit(raw, len(raw)-1)
	require.ErrorContains(t, err, "invalid result: message is 48 bytes, the limit is 47 (")
	_, err = DecodeResultLimit(raw, 0) // default
	require.NoError(t, err)
}

func benchJob() Job {
	return Job{
		Kind: "big_tables", UID: "1234567", AttemptUID: "d4n0q4a5n1p0bb6b6h20", AttemptNo: 3,
		TimeoutAt: time.Date(2026, 11, 21, 14, 0, 0, 123456000, time.UTC),
		Payload:   map[string]any{"input_url": "https://example.com/data/1234567.csv", "format": "csv"},
	}
}

func BenchmarkEncodeJob(b *testing.B) {
	job := benchJob()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := encodeJob(job); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeJobFields is BenchmarkEncodeJob with the payload as the
// service's jobs carry it (Fields, in the table's order).
func BenchmarkEncodeJobFields(b *testing.B) {
	job := benchJob()
	job.Fields = payload.Fields{{Name: "input_url", Value: job.Payload["input_url"]}, {Name: "format", Value: job.Payload["format"]}}
	job.Payload = nil
	b.ReportAllocs()
	for b.Loop() {
		if _, err := encodeJob(job); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeJobEncodingJSON is the reference AppendJob is measured
// against.
func BenchmarkEncodeJobEncodingJSON(b *testing.B) {
	job := benchJob()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(job); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeResult(b *testing.B) {
	raw := []byte(`{"uid":"d4n0q4a5n1p0bb6b6h20","attempt_uid":"d4n0q4a5n1p0bb6b6h21","type":"failure","reason":"GET https://example.com/a.csv: HTTP 503","retry_after_seconds":120}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeResult(raw); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDecodeStringsMatchEncodingJSON checks the string fields of results
// against encoding/json on strings with and without escapes, non-ASCII and
// invalid UTF-8.
func TestDecodeStringsMatchEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		`""`, `"abc"`, `"d4n0q4a5n1p0bb6b6h20"`, `"a\"b"`, `"a\\b"`, `"\u00e9t\u00e9"`, `"été"`,
		`"tab\there"`, `"\ud83d\ude00"`, `"😀"`, "\"\xff\"", "\"\xff\xfe\"", "\"a\xc3\"", `"a/b"`, `"\/"`,
		`"\ud800"`, `"\udc00x"`, `"\ud800\u0041"`, `"\uD800"`,
	} {
		var want string
		require.NoError(t, json.Unmarshal([]byte(in), &want), in)
		r, err := DecodeResult([]byte(`{"uid":` + in + `,"attempt_uid":"x","type":"success"}`))
		if want == "" {
			require.Error(t, err, in)
			continue
		}
		require.NoError(t, err, in)
		require.Equal(t, want, r.UID, in)
	}
}

// FuzzDecodeResult checks DecodeResult against encoding/json: whatever it
// accepts is a JSON object whose uid, attempt_uid and type fields, decoded
// by encoding/json, are the ones returned, and it never panics.
//
//	go test ./redisio -run XXX -fuzz FuzzDecodeResult -fuzztime 30s
func FuzzDecodeResult(f *testing.F) {
	for _, s := range []string{
		`{"uid":"42","attempt_uid":"a1","type":"success"}`,
		`{"uid":"4\u0032","attempt_uid":"a1","type":"failure","retry_after_seconds":5,"permanent":true}`,
		`{"uid":"42","uid":"43","attempt_uid":"a1","type":"status","status":"x"}`,
		`{"u\u0069d":"42","attempt_uid":"a1","type":"success"}`,
		"{\"uid\":\"\xff\xfe\",\"attempt_uid\":\"a1\",\"type\":\"success\"}",
		`{"uid":"\ud800","attempt_uid":"\ud800\u0041","type":"success"}`,
		`{"uid":"\uD83D\uDE00","attempt_uid":"a\\ud800","type":"success"}`,
		`[1]`, `nul`, `{"uid":"42"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, err := DecodeResult(raw)
		if err != nil {
			require.ErrorIs(t, err, ErrInvalidResult)
			return
		}
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(raw, &m))
		for name, got := range map[string]string{"uid": r.UID, "attempt_uid": r.AttemptUID, "type": r.Type} {
			var want string
			require.NoError(t, json.Unmarshal(m[name], &want))
			require.Equal(t, want, got, name)
		}
	})
}

// A push's messages are AppendJob's, byte for byte, whether a job's
// timeout_at is the one before it (kept formatted) or not, in another
// location, or invalid (the push fails, as AppendJob does).
func TestPushEncodesAsAppendJob(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	at := time.Date(2026, 11, 21, 14, 0, 0, 123456789, time.UTC)
	job := func(uid string, timeout time.Time) Job {
		return Job{Kind: "k", UID: uid, AttemptUID: "d4n0q4a5n1p0bb6b6h20", AttemptNo: 1, TimeoutAt: timeout,
			Payload: map[string]any{"u": uid}}
	}
	jobs := []Job{job("1", at), job("2", at), job("3", at.In(berlin)), job("4", at.Add(time.Microsecond)), job("5", at)}
	e := newEncoded()
	defer e.free()
	require.NoError(t, e.add("l", jobs[:2]))
	require.NoError(t, e.add("l", jobs[2:]))
	require.Len(t, e.vals, len(jobs))
	for i, j := range jobs {
		want, err := AppendJob(nil, j)
		require.NoError(t, err)
		got, err := e.vals[i].(*rawMessage).MarshalBinary()
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "job %d", i)
	}
	for _, bad := range []time.Time{{}, time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)} {
		_, want := AppendJob(nil, job("6", bad))
		require.Error(t, want)
		require.EqualError(t, e.add("l", []Job{job("6", bad)}), `push 1 jobs to "l": `+want.Error())
	}
}

// TestEncodedReused: a push's buffer, handed back, serves the next push,
// from any goroutine and across garbage collections (a sync.Pool dropped
// it at the second, and hid it from other processors), cleared.
func TestEncodedReused(t *testing.T) {
	e := newEncoded()
	require.NoError(t, e.add("l", []Job{{Kind: "k", UID: "1", AttemptUID: "d4n0q4a5n1p0bb6b6h20", AttemptNo: 1,
		TimeoutAt: time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)}}))
	e.free()
	runtime.GC()
	runtime.GC()
	got := make(chan *encoded)
	go func() { got <- newEncoded() }()
	again := <-got
	defer again.free()
	require.Same(t, e, again, "the buffer handed back")
	require.Empty(t, again.buf)
	require.Empty(t, again.vals)
	require.NotZero(t, cap(again.buf), "its capacity kept")
}
