package policy

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DefaultRetrySpec is the retry policy of the original design: retry at once,
// then after 1m, 5m, 15m, 30m and 1h, and give up at the 7th consecutive
// failure.
const DefaultRetrySpec = "delays:0s,1m,5m,15m,30m,1h"

// DefaultRetry is the parsed DefaultRetrySpec.
var DefaultRetry = mustParseRetry(DefaultRetrySpec)

// maxDelay is the largest delay a policy returns: every computation saturates
// here instead of overflowing time.Duration (about 292 years).
const maxDelay = time.Duration(math.MaxInt64)

// Retry is a parsed retry policy (docs/schedules.md, "Retry policies"): the delay after the n-th
// consecutive failure, a cap, the limits after which the model is given up,
// and the jitter. A *Retry is immutable and safe for concurrent use. Build one
// with ParseRetry.
type Retry struct {
	family string

	delays []time.Duration   // delays
	steps  []progressiveStep // progressive
	unit   time.Duration     // constant, linear, fibonacci, quadratic, polynomial
	power  float64           // polynomial
	base   time.Duration     // exponential
	factor float64           // exponential

	max      time.Duration // cap on one delay (for arctan also its level); 0: none
	attempts int           // give up at failure n >= attempts; 0: no limit
	maxAge   time.Duration // give up when failing for longer; 0: no limit
	jitter   Jitter
}

// progressiveStep: retry every Every while the model has been failing for less
// than Until.
type progressiveStep struct {
	Every, Until time.Duration
}

// Jitter names how a delay is randomised. The range for a computed delay d
// (after the max= cap) is:
//
//   - none: [d, d];
//   - full: [0, d];
//   - equal: [d/2, d];
//   - decorrelated: a stateless form of AWS's "decorrelated jitter"
//     (sleep = random(base, 3·previous sleep)): with p the computed delay of
//     the previous failure (p = d for the first failure and for progressive),
//     the range is [min(p, d), max(3·p, d)], the upper bound capped by max=.
//     For exponential:factor=2 that is [d/2, 3d/2], centred on d.
type Jitter string

// The jitter kinds accepted by the jitter= key.
const (
	JitterNone         Jitter = "none"
	JitterFull         Jitter = "full"
	JitterEqual        Jitter = "equal"
	JitterDecorrelated Jitter = "decorrelated"
)

// Backoff is a retry policy's answer for one failure: give up, or wait a delay
// anywhere in [Min, Max] (Min == Max without jitter).
type Backoff struct {
	// GiveUp: the policy's limit (attempts, age, end of a delays list or of
	// the progressive steps) is reached; the model must be disabled.
	GiveUp bool
	// Min and Max bound the delay; both are 0 when GiveUp.
	Min, Max time.Duration
}

// Pick returns the delay for a random u in [0, 1): Min + u·(Max-Min). u is
// clamped to [0, 1]; Pick(0) is Min and Pick never returns more than Max.
func (b Backoff) Pick(u float64) time.Duration {
	if b.Max <= b.Min || !(u > 0) { // !(u > 0) also catches NaN
		return b.Min
	}
	span := b.Max - b.Min
	off := float64(span) * u
	if off >= float64(span) {
		return b.Max
	}
	return b.Min + time.Duration(off)
}

// Delay returns what to do after the n-th consecutive failure (n < 1 counts
// as 1) when the model has been failing for failingFor (now -
// failing_since; only progressive and max_age= look at it).
//
// Exact delays for n = 1, 2, 3, ... (before max= and jitter):
//
//   - delays:d1,...,dk: d_n for n <= k; gives up at n = k+1;
//   - constant:unit=u: u, u, u, ...;
//   - linear:unit=u: n·u: 1u, 2u, 3u, ...;
//   - fibonacci:unit=u: fib(n)·u with fib(1) = fib(2) = 1: 1u, 1u, 2u, 3u, 5u, 8u, ...;
//   - quadratic:unit=u: n²·u: 1u, 4u, 9u, ...;
//   - polynomial:unit=u,power=k: n^k·u;
//   - exponential:base=b,factor=f: b·f^(n-1): with 1s and 2: 1s, 2s, 4s, ...;
//   - arctan:max=m: m·(2/π)·arctan(n³/15): with 24h about 1h1m after the
//     first failure, 7h29m after the 2nd, 22h56m after the 6th, never m;
//   - delayed_job: n⁴+5 seconds: 6s, 21s, 1m26s, ...;
//   - progressive:e1/a1,...: e_i for the first i with failingFor < a_i; gives
//     up when failingFor >= the last a_i.
//
// At degenerately high n every family saturates at about 292 years instead of
// overflowing; max= caps one delay. attempts=N gives up at the N-th
// consecutive failure (so N attempts in all), max_age=A when failingFor > A.
func (r *Retry) Delay(n int, failingFor time.Duration) Backoff {
	n = max(n, 1)
	if r.attempts > 0 && n >= r.attempts {
		return Backoff{GiveUp: true}
	}
	if r.maxAge > 0 && failingFor > r.maxAge {
		return Backoff{GiveUp: true}
	}
	d, ok := r.raw(n, failingFor)
	if !ok {
		return Backoff{GiveUp: true}
	}
	d = r.capped(d)
	switch r.jitter {
	case JitterFull:
		return Backoff{Min: 0, Max: d}
	case JitterEqual:
		return Backoff{Min: d / 2, Max: d}
	case JitterDecorrelated:
		p := d
		if n > 1 && r.family != "progressive" {
			if prev, ok := r.raw(n-1, failingFor); ok {
				p = r.capped(prev)
			}
		}
		hi := r.capped(max(mulSat(p, 3), d))
		return Backoff{Min: min(p, d), Max: hi}
	default:
		return Backoff{Min: d, Max: d}
	}
}

func (r *Retry) capped(d time.Duration) time.Duration {
	if r.max > 0 && d > r.max {
		return r.max
	}
	return d
}

// raw is the family's delay for failure n >= 1, before cap and jitter; ok is
// false when the family itself gives up.
func (r *Retry) raw(n int, failingFor time.Duration) (d time.Duration, ok bool) {
	switch r.family {
	case "delays":
		if n > len(r.delays) {
			return 0, false
		}
		return r.delays[n-1], true
	case "constant":
		return r.unit, true
	case "linear":
		return mulSat(r.unit, int64(n)), true
	case "fibonacci":
		return mulSat(r.unit, fib(n)), true
	case "quadratic":
		return mulSat(r.unit, powSat(int64(n), 2)), true
	case "polynomial":
		if r.power == math.Trunc(r.power) {
			return mulSat(r.unit, powSat(int64(n), int(r.power))), true
		}
		return floatSat(float64(r.unit) * math.Pow(float64(n), r.power)), true
	case "exponential":
		return floatSat(float64(r.base) * math.Pow(r.factor, float64(n-1))), true
	case "arctan":
		n3 := math.Pow(float64(n), 3)
		return min(r.max, floatSat(float64(r.max)*(2/math.Pi)*math.Atan(n3/15))), true
	case "delayed_job":
		return mulSat(time.Second, addSat(powSat(int64(n), 4), 5)), true
	case "progressive":
		for _, s := range r.steps {
			if failingFor < s.Until {
				return s.Every, true
			}
		}
		return 0, false
	}
	panic("policy: unknown retry family " + r.family) // unreachable: ParseRetry checks
}

// fib returns fib(n) with fib(1) = fib(2) = 1, saturating at MaxInt64.
func fib(n int) int64 {
	if n > 92 { // fib(93) > MaxInt64
		return math.MaxInt64
	}
	a, b := int64(0), int64(1)
	for i := 1; i < n; i++ {
		a, b = b, a+b
	}
	return b
}

// powSat returns x^k (x >= 1, k >= 0), saturating at MaxInt64.
func powSat(x int64, k int) int64 {
	p := int64(1)
	for range k {
		if p > math.MaxInt64/x {
			return math.MaxInt64
		}
		p *= x
	}
	return p
}

func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// mulSat returns d·k (d, k >= 0), saturating at maxDelay.
func mulSat(d time.Duration, k int64) time.Duration {
	if d == 0 || k == 0 {
		return 0
	}
	if k > int64(maxDelay/d) {
		return maxDelay
	}
	return d * time.Duration(k)
}

// floatSat converts a non-negative nanosecond count, saturating at maxDelay.
func floatSat(ns float64) time.Duration {
	switch {
	case math.IsNaN(ns) || ns <= 0:
		return 0
	case ns >= float64(maxDelay): // float64(MaxInt64) is 2^63
		return maxDelay
	}
	return time.Duration(math.Round(ns))
}

// retryFamily describes one policy family for parsing and error hints.
type retryFamily struct {
	keys    []string // family keys, in normalized order
	example string
}

var retryFamilies = map[string]retryFamily{
	"delays":      {nil, DefaultRetrySpec},
	"constant":    {[]string{"unit"}, "constant:unit=1m"},
	"linear":      {[]string{"unit"}, "linear:unit=1m"},
	"fibonacci":   {[]string{"unit"}, "fibonacci:unit=1m"},
	"quadratic":   {[]string{"unit"}, "quadratic:unit=1s"},
	"polynomial":  {[]string{"unit", "power"}, "polynomial:unit=1s,power=3"},
	"exponential": {[]string{"base", "factor"}, "exponential:base=1s,factor=2"},
	"arctan":      {nil, "arctan:max=24h"},
	"delayed_job": {nil, "delayed_job"},
	"progressive": {nil, "progressive:5m/24h,1h/168h,12h/336h,24h/720h,96h/4320h,192h/8640h"},
}

// familyOrder lists the families as documented.
var familyOrder = []string{"delays", "constant", "linear", "fibonacci", "quadratic", "polynomial", "exponential", "arctan", "delayed_job", "progressive"}

var commonKeys = []string{"max", "attempts", "max_age", "jitter"}

// ParseRetry parses a retry policy spec: a family, then after a colon a
// comma-separated list of values and key=value pairs:
//
//	delays:0s,1m,5m,15m,30m,1h
//	constant:unit=1m
//	linear:unit=1m
//	fibonacci:unit=1m
//	quadratic:unit=1s
//	polynomial:unit=1s,power=3
//	exponential:base=1s,factor=2      (factor defaults to 2)
//	arctan:max=24h
//	delayed_job
//	progressive:5m/24h,1h/168h,12h/336h,24h/720h,96h/4320h,192h/8640h
//
// Every family also takes max= (cap on one delay), attempts= (give up at that
// many consecutive failures), max_age= (give up when failing for longer) and
// jitter=none|full|equal|decorrelated (default none). Durations use Go syntax
// (90s, 1h30m). An error names the bad part and shows a valid example.
func ParseRetry(spec string) (*Retry, error) {
	r, err := parseRetry(strings.TrimSpace(spec))
	if err != nil {
		return nil, fmt.Errorf("retry %q: %w", spec, err)
	}
	return r, nil
}

func mustParseRetry(spec string) *Retry {
	r, err := ParseRetry(spec)
	if err != nil {
		panic(err)
	}
	return r
}

// retrySpecError is a problem with a spec plus a hint for its family.
type retrySpecError struct {
	problem string
	family  string // "" for an unknown family
}

func (e *retrySpecError) Error() string {
	fam, ok := retryFamilies[e.family]
	if !ok {
		return fmt.Sprintf("%s (policies: %s; e.g. %q)", e.problem, strings.Join(familyOrder, ", "), "exponential:base=1s,factor=2")
	}
	keys := slices.Concat(fam.keys, commonKeys)
	what := "keys for " + e.family + ": " + strings.Join(keys, ", ")
	switch e.family {
	case "delays":
		what = "delays: a list of durations, then keys " + strings.Join(commonKeys, ", ")
	case "progressive":
		what = "progressive: steps every/until, then keys " + strings.Join(commonKeys, ", ")
	}
	return fmt.Sprintf("%s (%s; e.g. %q)", e.problem, what, fam.example)
}

func parseRetry(spec string) (*Retry, error) {
	family, rest, hasParams := strings.Cut(spec, ":")
	family = strings.TrimSpace(family)
	if _, ok := retryFamilies[family]; !ok {
		if family == "" {
			return nil, &retrySpecError{problem: "missing policy name"}
		}
		return nil, &retrySpecError{problem: fmt.Sprintf("unknown policy %q", family)}
	}
	r := &Retry{family: family, jitter: JitterNone, factor: 2}
	fail := func(format string, args ...any) error {
		return &retrySpecError{problem: fmt.Sprintf(format, args...), family: family}
	}
	seen := map[string]bool{}
	if hasParams {
		if strings.TrimSpace(rest) == "" {
			return nil, fail("nothing after %q", family+":")
		}
		for part := range strings.SplitSeq(rest, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				return nil, fail("empty item in the list")
			}
			key, val, isKey := strings.Cut(part, "=")
			if !isKey {
				if err := r.addValue(part); err != nil {
					return nil, fail("%v", err)
				}
				continue
			}
			key, val = strings.TrimSpace(key), strings.TrimSpace(val)
			if !slices.Contains(retryFamilies[family].keys, key) && !slices.Contains(commonKeys, key) {
				return nil, fail("unknown key %q", key)
			}
			if seen[key] {
				return nil, fail("key %q given twice", key)
			}
			seen[key] = true
			if val == "" {
				return nil, fail("empty value for %q", key)
			}
			if err := r.setKey(key, val); err != nil {
				return nil, fail("%v", err)
			}
		}
	}
	if err := r.check(seen); err != nil {
		return nil, fail("%v", err)
	}
	return r, nil
}

// addValue takes a positional value: a delay (delays) or a step (progressive).
func (r *Retry) addValue(v string) error {
	switch r.family {
	case "delays":
		d, err := parseDelay(v)
		if err != nil {
			return fmt.Errorf("delay %q: %v", v, err)
		}
		r.delays = append(r.delays, d)
		return nil
	case "progressive":
		every, until, ok := strings.Cut(v, "/")
		if !ok {
			return fmt.Errorf("step %q is not every/until", v)
		}
		e, err := parseDelay(every)
		if err != nil {
			return fmt.Errorf("step %q: every: %v", v, err)
		}
		u, err := parseDelay(until)
		if err != nil {
			return fmt.Errorf("step %q: until: %v", v, err)
		}
		if e <= 0 {
			return fmt.Errorf("step %q: every must be positive", v)
		}
		if n := len(r.steps); n > 0 && u <= r.steps[n-1].Until {
			return fmt.Errorf("step %q: until must be later than the previous step's %s", v, FormatDuration(r.steps[n-1].Until))
		}
		if u <= 0 {
			return fmt.Errorf("step %q: until must be positive", v)
		}
		r.steps = append(r.steps, progressiveStep{Every: e, Until: u})
		return nil
	}
	return fmt.Errorf("unexpected value %q (want key=value)", v)
}

func (r *Retry) setKey(key, val string) error {
	var err error
	switch key {
	case "unit", "base", "max", "max_age":
		var d time.Duration
		d, err = parseDelay(val)
		if err == nil && d <= 0 {
			err = fmt.Errorf("must be positive")
		}
		switch key {
		case "unit":
			r.unit = d
		case "base":
			r.base = d
		case "max":
			r.max = d
		case "max_age":
			r.maxAge = d
		}
	case "power":
		r.power, err = strconv.ParseFloat(val, 64)
		if err == nil && (r.power < 0 || r.power > 64 || math.IsNaN(r.power)) {
			err = fmt.Errorf("must be between 0 and 64")
		}
	case "factor":
		r.factor, err = strconv.ParseFloat(val, 64)
		if err == nil && !(r.factor >= 1 && r.factor <= 1e6) {
			err = fmt.Errorf("must be between 1 and 1e6")
		}
	case "attempts":
		r.attempts, err = strconv.Atoi(val)
		if err == nil && r.attempts < 1 {
			err = fmt.Errorf("must be at least 1")
		}
	case "jitter":
		r.jitter = Jitter(val)
		switch r.jitter {
		case JitterNone, JitterFull, JitterEqual, JitterDecorrelated:
		default:
			err = fmt.Errorf("want none, full, equal or decorrelated")
		}
	}
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok {
			err = ne.Err // "invalid syntax", without the strconv function name
		}
		return fmt.Errorf("%s=%s: %v", key, val, err)
	}
	return nil
}

// check reports a missing required key or value.
func (r *Retry) check(seen map[string]bool) error {
	var required []string
	switch r.family {
	case "delays":
		if len(r.delays) == 0 {
			return fmt.Errorf("no delays given")
		}
	case "progressive":
		if len(r.steps) == 0 {
			return fmt.Errorf("no steps given")
		}
	case "constant", "linear", "fibonacci", "quadratic":
		required = []string{"unit"}
	case "polynomial":
		required = []string{"unit", "power"}
	case "exponential":
		required = []string{"base"}
	case "arctan":
		required = []string{"max"}
	}
	for _, k := range required {
		if !seen[k] {
			return fmt.Errorf("missing key %q", k)
		}
	}
	return nil
}

// parseDelay parses a non-negative Go duration.
func parseDelay(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("not a duration (use e.g. 90s, 5m, 1h30m)")
	}
	if d < 0 {
		return 0, fmt.Errorf("must not be negative")
	}
	return d, nil
}

// String returns the normalized spec: ParseRetry(r.String()) is the same
// policy. Durations drop zero units ("1h", not "1h0m0s"), keys come in a fixed
// order and defaults are left out.
func (r *Retry) String() string {
	var parts []string
	switch r.family {
	case "delays":
		for _, d := range r.delays {
			parts = append(parts, FormatDuration(d))
		}
	case "progressive":
		for _, s := range r.steps {
			parts = append(parts, FormatDuration(s.Every)+"/"+FormatDuration(s.Until))
		}
	case "constant", "linear", "fibonacci", "quadratic":
		parts = append(parts, "unit="+FormatDuration(r.unit))
	case "polynomial":
		parts = append(parts, "unit="+FormatDuration(r.unit), "power="+strconv.FormatFloat(r.power, 'g', -1, 64))
	case "exponential":
		parts = append(parts, "base="+FormatDuration(r.base), "factor="+strconv.FormatFloat(r.factor, 'g', -1, 64))
	}
	if r.max > 0 {
		parts = append(parts, "max="+FormatDuration(r.max))
	}
	if r.attempts > 0 {
		parts = append(parts, "attempts="+strconv.Itoa(r.attempts))
	}
	if r.maxAge > 0 {
		parts = append(parts, "max_age="+FormatDuration(r.maxAge))
	}
	if r.jitter != JitterNone {
		parts = append(parts, "jitter="+string(r.jitter))
	}
	if len(parts) == 0 {
		return r.family
	}
	return r.family + ":" + strings.Join(parts, ",")
}

// FormatDuration is time.Duration.String without trailing zero units:
// 1h, 1h30m, 1m, 90ms, 0s.
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
