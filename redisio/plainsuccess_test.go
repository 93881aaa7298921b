package redisio

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

// plainSeeds are messages near the plain success's spelling: those it
// recognizes and those it must leave to the general path.
var plainSeeds = []string{
	`{"uid":"42","attempt_uid":"d4n0q4a5n1p0bb6b6h20","type":"success"}`,
	`{"uid":"42","attempt_uid":"d4n0q4a5n1p0bb6b6h20","type":"success","status":"fetched 12 bytes"}`,
	`{"uid":"42","attempt_uid":"d4n0q4a5n1p0bb6b6h20","type":"success","status":""}`,
	`{"uid":"a b/c","attempt_uid":"x","type":"success"}`,
	`{"uid":"","attempt_uid":"x","type":"success"}`,
	`{"uid":"42","attempt_uid":"","type":"success"}`,
	`{"uid":"4\"2","attempt_uid":"x","type":"success"}`,
	`{"uid":"4\\2","attempt_uid":"x","type":"success"}`,
	`{"uid":"\u0034","attempt_uid":"x","type":"success"}`,
	"{\"uid\":\"4\t2\",\"attempt_uid\":\"x\",\"type\":\"success\"}",
	"{\"uid\":\"été\",\"attempt_uid\":\"x\",\"type\":\"success\"}",
	"{\"uid\":\"\xff\",\"attempt_uid\":\"x\",\"type\":\"success\"}",
	`{"uid":"42","attempt_uid":"x","type":"success"} `,
	` {"uid":"42","attempt_uid":"x","type":"success"}`,
	`{"uid":"42","attempt_uid":"x","type":"success",}`,
	`{"uid":"42","attempt_uid":"x","type":"success"}}`,
	`{"uid":"42","attempt_uid":"x","type":"success","uid":"43"}`,
	`{"uid":"42","attempt_uid":"x","type":"success","status":"a","status":"b"}`,
	`{"uid":"42","attempt_uid":"x","type":"success","status":null}`,
	`{"uid":"42","attempt_uid":"x","type":"success","status":1}`,
	`{"uid":"42","attempt_uid":"x","type":"success","reason":"r"}`,
	`{"uid":"42","attempt_uid":"x","type":"failure"}`,
	`{"uid":"42","attempt_uid":"x","type":"status","status":"s"}`,
	`{"attempt_uid":"x","uid":"42","type":"success"}`,
	`{"uid":"42","attempt_uid":"x","type":"success"`,
	`{"uid":"42","attempt_uid":"x","type":"succes"}`,
	`{"uid":42,"attempt_uid":"x","type":"success"}`,
	`{"uid":"42","attempt_uid":"x","type":"success","status":"s"}x`,
}

// TestPlainSuccessMatchesGeneralPath: DecodeResultLimit returns the same
// result and error with the plain-success path as its general path alone
// does, on the seeds and on 300 random mutations of each (a byte changed,
// removed or inserted, from the bytes that matter to the spelling).
func TestPlainSuccessMatchesGeneralPath(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("\"\\{}:,a s\x00\x1f\x7f\xc3\xa9\xffuidtypesuccess")
	recognized := 0
	check := func(msg []byte) {
		t.Helper()
		got, gerr := DecodeResultLimit(msg, 0)
		want, werr := decodeResultJSON(msg)
		if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) || !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: decoded %+v, %v; the general path %+v, %v", msg, got, gerr, want, werr)
		}
		if _, ok := decodePlainSuccess(msg); ok {
			recognized++
			if werr != nil {
				t.Fatalf("%q: recognized as a plain success, refused by the general path: %v", msg, werr)
			}
		}
	}
	for _, s := range plainSeeds {
		check([]byte(s))
		for range 300 {
			m := []byte(s)
			i := rng.IntN(len(m) + 1)
			c := alphabet[rng.IntN(len(alphabet))]
			switch rng.IntN(3) {
			case 0:
				if i < len(m) {
					m[i] = c
				}
			case 1:
				if i < len(m) {
					m = append(m[:i], m[i+1:]...)
				}
			default:
				m = append(m[:i], append([]byte{c}, m[i:]...)...)
			}
			check(m)
		}
	}
	if recognized < len(plainSeeds) {
		t.Errorf("the plain-success path recognized %d messages, want at least %d", recognized, len(plainSeeds))
	}
}

// TestPlainSuccessRecognized: the spellings the reference worker and the
// bench's workers send take the one-pass path.
func TestPlainSuccessRecognized(t *testing.T) {
	for _, s := range plainSeeds[:4] {
		if _, ok := decodePlainSuccess([]byte(s)); !ok {
			t.Errorf("%s: not recognized", s)
		}
	}
}

func BenchmarkDecodeSuccess(b *testing.B) {
	raw := []byte(`{"uid":"100042","attempt_uid":"d4mc0r8k6bqs73e1q2g0","type":"success"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeResult(raw); err != nil {
			b.Fatal(err)
		}
	}
}
