package redisio

import (
	"bytes"
	"strings"
)

// The most common result by far is a plain success, written as the
// reference worker's encoder and the bench's workers write it:
//
//	{"uid":"42","attempt_uid":"d4n0q4a5n1p0bb6b6h20","type":"success"}
//
// optionally with "status" after "type". DecodeResultLimit's general path
// validates, parses and checks such a message in several passes over it;
// decodePlainSuccess recognizes this one spelling in one pass and returns
// what the general path returns for it. Anything else (another order,
// whitespace, an escape, a byte that is not printable ASCII, another
// field) is not recognized and goes the general way, so the strict
// decoding of docs/protocol.md is unchanged.

// The fixed parts of a plain success, around its uid, attempt_uid and
// status.
const (
	plainUIDPrefix     = `{"uid":"`
	plainAttemptPrefix = `","attempt_uid":"`
	plainSuccessEnd    = `","type":"success"}`
	plainStatusPrefix  = `","type":"success","status":"`
	plainStatusEnd     = `"}`
)

// decodePlainSuccess returns the Result of raw and true when raw is a plain
// success spelled as above, each string non-empty (status may be empty) and
// of printable ASCII other than '"' and '\' (so that it needs no unescaping
// and is valid UTF-8); false otherwise. uid and attempt_uid share one
// allocation, as in the general path.
func decodePlainSuccess(raw []byte) (Result, bool) {
	rest, ok := bytes.CutPrefix(raw, []byte(plainUIDPrefix))
	if !ok {
		return Result{}, false
	}
	uid, rest, ok := plainString(rest)
	if !ok || uid == 0 {
		return Result{}, false
	}
	rest, ok = bytes.CutPrefix(rest, []byte(plainAttemptPrefix))
	if !ok {
		return Result{}, false
	}
	attempt, after, ok := plainString(rest)
	if !ok || attempt == 0 {
		return Result{}, false
	}
	var status []byte
	if string(after) != plainSuccessEnd {
		tail, ok := bytes.CutPrefix(after, []byte(plainStatusPrefix))
		if !ok {
			return Result{}, false
		}
		n, end, ok := plainString(tail)
		if !ok || string(end) != plainStatusEnd {
			return Result{}, false
		}
		status = tail[:n]
	}
	var b strings.Builder
	b.Grow(uid + attempt)
	b.Write(raw[len(plainUIDPrefix):][:uid])
	b.Write(rest[:attempt])
	both := b.String()
	r := Result{UID: both[:uid], AttemptUID: both[uid:], Type: ResultSuccess}
	if len(status) > 0 {
		r.Status = string(status)
	}
	return r, true
}

// plainString returns the length of the string that b starts with (the
// bytes before the first '"'), and b from that '"' on, when every byte
// before it is printable ASCII other than '\'.
func plainString(b []byte) (n int, rest []byte, ok bool) {
	for i, c := range b {
		switch {
		case c == '"':
			return i, b[i:], true
		case c < 0x20 || c > 0x7e || c == '\\':
			return 0, nil, false
		}
	}
	return 0, nil, false
}
