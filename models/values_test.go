package models_test

import (
	"testing"
	"time"

	. "github.com/refresher/refresher/models"
)

// TestKeyStringAndJSONValue: keys read by either database/sql driver come
// out as the text workers see, and payload values as encoding/json renders
// them.
func TestKeyStringAndJSONValue(t *testing.T) {
	t.Parallel()
	at := time.Date(2024, 5, 6, 7, 8, 9, 123456000, time.FixedZone("x", 3600))
	for _, c := range []struct {
		in   any
		want string
	}{
		{[]byte("ab"), "ab"}, {"ab", "ab"}, {int64(-42), "-42"}, {uint64(18446744073709551615), "18446744073709551615"},
		{float64(1.5), "1.5"}, {float64(1e21), "1e+21"}, {at, "2024-05-06T06:08:09.123456Z"}, {int32(7), "7"},
	} {
		eq(t, KeyString(c.in), c.want, "KeyString(", c.in, ")")
	}
	eq(t, JSONValue([]byte("ab")), any("ab"), "bytes")
	eq(t, JSONValue(at), any("2024-05-06T06:08:09.123456Z"), "time")
	eq(t, JSONValue(int64(3)), any(int64(3)), "number")
	eq(t, JSONValue(nil), any(nil), "NULL")
}
