package jsontext

import (
	"encoding/json"
	"testing"
)

func TestAppendStringRoundTrips(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "abc", `a"b\c`, "tab\tnew\nline\r\x00\x1f", "été 😀", "<&>", "\u2028\u2029", "a\xffb"} {
		out := AppendString([]byte("x"), s)
		var got string
		if err := json.Unmarshal(out[1:], &got); err != nil {
			t.Fatalf("%q: %s is not JSON: %v", s, out[1:], err)
		}
		want := s
		if s == "a\xffb" {
			want = "a\uFFFDb"
		}
		if got != want {
			t.Errorf("%q: round trip gave %q", s, got)
		}
	}
}

func TestAppendStringDoesNotAllocate(t *testing.T) {
	buf := make([]byte, 0, 64)
	if n := testing.AllocsPerRun(100, func() { buf = AppendString(buf[:0], "d4n0q4a5n1p0bb6b6h20") }); n > 0 {
		t.Errorf("%v allocations per call, want 0", n)
	}
}
