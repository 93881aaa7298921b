package redisio

import (
	"encoding/json"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
)

// validJSONSeeds are messages validJSON must judge as json.Valid does:
// results, garbage, and the corners of the grammar.
var validJSONSeeds = []string{
	`{"uid":"42","attempt_uid":"d4n0q4a5n1p0bb6b6h20","type":"success"}`,
	`{"uid":"d4n0q4a5n1p0bb6b6h20","attempt_uid":"d4n0q4a5n1p0bb6b6h21","type":"failure","reason":"GET https://example.com/a.csv: HTTP 503","retry_after_seconds":120,"permanent":false,"scope":null}`,
	`{"a":[1,-2,3.5,-0.25e+10,1E-3,0,true,false,null,{},[],"\"\\\/\b\f\n\r\t\u00e9\uD83D\uDE00"]}`,
	"{\"a\":\"tab\there\"}", "{\"a\":\"nl\nhere\\n\"}", "{\"a\":\"\\n\x01\"}", "{\"a\":\"\x01\\n\"}",
	"{\"a\" : 1 ,\r\n\t\"b\":2}", "{\"a\x1f\":1}", "\"\xff\xfe\"", "{\"a\":\"\xc3\"}",
	`01`, `-`, `-0`, `1.`, `.5`, `1e`, `1e+`, `+1`, `0x10`, `1.5e3`, `-01`, `[1,]`, `[,1]`, `{"a":1,}`,
	`{"a"}`, `{"a":}`, `{a:1}`, `{'a':1}`, `"\u12"`, `"\u12G4"`, `"\x"`, `"\u+123"`, `"\U0041"`,
	`tru`, `truex`, `nul`, `nulll`, `[true false]`, `{"a":1}{}`, `{"a":1} `, ` {"a":1}`, `{"a":1}x`,
	`[[[[[[[[[[]]]]]]]]]]`, `[[[[[[[[[[]]]]]]]]]`, `{"a":"b\"}`, `{"a":"b\\"}`, `"`, `{`, `}`, `[`,
	"\u00a0{}", "{\"a\":NaN}", "{\"a\":Infinity}", "{\"a\":-inf}", "{\"a\":nan}", `{"a":1.0e-}`,
	`{"":""}`, `[""]`, `{"a":"\/"}`, `{"a":"\'"}`, `{"a":"\0"}`, `"\uDC00"`, `123`, `null`,
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	strings.Repeat(`{"a":`, 10001) + "1" + strings.Repeat("}", 10001),
	strings.Repeat("[[]", 6000) + strings.Repeat("]", 6000),
	strings.Repeat("[", 400) + strings.Repeat("]", 400),
}

// TestValidJSONMatchesEncodingJSON: validJSON says what json.Valid says on
// the seeds and on a few thousand mutations of them (bytes replaced,
// dropped, inserted; a fixed random sequence, so a failure repeats).
func TestValidJSONMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	check := func(in []byte) {
		t.Helper()
		if got, want := validJSON(in), json.Valid(in); got != want {
			t.Errorf("validJSON(%q, %d bytes) = %v, json.Valid says %v", in[:min(len(in), 80)], len(in), got, want)
		}
	}
	alphabet := []byte("{}[]:,\"\\/ \t\n\r\x00\x01\x1f0123456789-+.eEuUabfnrtlsx\xff\xc3\xa9")
	rng := rand.New(rand.NewPCG(25, 1))
	for _, seed := range validJSONSeeds {
		check([]byte(seed))
		if len(seed) > 300 {
			continue
		}
		for range 200 {
			b := []byte(seed)
			for range 1 + rng.IntN(3) {
				c := alphabet[rng.IntN(len(alphabet))]
				switch i := rng.IntN(len(b) + 1); {
				case i == len(b) || rng.IntN(3) == 0:
					b = append(b[:i], append([]byte{c}, b[i:]...)...)
				case rng.IntN(2) == 0:
					b = append(b[:i], b[i+1:]...)
				default:
					b[i] = c
				}
			}
			check(b)
		}
	}
}

// FuzzValidJSON: go test ./redisio -run '^$' -fuzz FuzzValidJSON.
func FuzzValidJSON(f *testing.F) {
	for _, s := range validJSONSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if got, want := validJSON(in), json.Valid(in); got != want {
			t.Errorf("validJSON(%q) = %v, json.Valid says %v", in, got, want)
		}
	})
}

// TestDecodeSuccessAllocs: decoding a plain success allocates one string
// (its uid and attempt_uid together): no copy of the message's fields
// beyond that, no heap copy of the decoder's state, the type a constant.
func TestDecodeSuccessAllocs(t *testing.T) {
	raw := []byte(`{"uid":"42","attempt_uid":"d4n0q4a5n1p0bb6b6h20","type":"success"}`)
	var r Result
	allocs := testing.AllocsPerRun(100, func() {
		var err error
		if r, err = DecodeResult(raw); err != nil {
			t.Fatal(err)
		}
	})
	if r.UID != "42" || r.AttemptUID != "d4n0q4a5n1p0bb6b6h20" || r.Type != ResultSuccess {
		t.Fatalf("decoded %+v", r)
	}
	if raceEnabled {
		t.Skip("race detector on: the parsers' sync.Pool drops what it is given at random")
	}
	if allocs > 1 {
		t.Errorf("DecodeResult of a success: %v allocations, want 1", allocs)
	}
}

// TestValidJSONDeepGarbageIsLinear: a message nested deep with garbage at
// the bottom (within the size limit) is judged at about json.Valid's
// cost. fastjson.Validate wraps each level's error in the next, so on
// such a message its allocations (and time) grow with the square of the
// depth: 2000 levels, 12 kB, allocated about 300 MB and took about a
// second. Allocated bytes, not time, are what the test compares.
func TestValidJSONDeepGarbageIsLinear(t *testing.T) {
	const depth = 2000
	for _, in := range []string{
		strings.Repeat(`{"a":`, depth) + "x" + strings.Repeat("}", depth),
		strings.Repeat("[", depth) + "x" + strings.Repeat("]", depth),
	} {
		raw := []byte(in)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		got := validJSON(raw)
		runtime.ReadMemStats(&after)
		if got {
			t.Fatalf("validJSON(%.20q...) = true", in)
		}
		// json.Valid's scanner stack: a few kB per thousand levels.
		if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
			t.Errorf("validJSON of %d bytes nested %d deep allocated %d bytes, want at most 1 MB (json.Valid's order)", len(raw), depth, n)
		}
	}
}
