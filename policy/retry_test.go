package policy

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// giveUp marks a failure n at which the policy gives up in the tables below.
const giveUp = time.Duration(-1)

// secs and mins build a table of delays; -1 stands for giveUp.
func secs(ss ...int64) []time.Duration { return scaled(time.Second, ss) }

func mins(ms ...int64) []time.Duration { return scaled(time.Minute, ms) }

func scaled(unit time.Duration, xs []int64) []time.Duration {
	out := make([]time.Duration, len(xs))
	for i, x := range xs {
		out[i] = time.Duration(x) * unit
		if x == -1 {
			out[i] = giveUp
		}
	}
	return out
}

func TestRetryDelayExact(t *testing.T) {
	t.Parallel()

	const g = -1 // give up
	tests := []struct {
		spec string
		want []time.Duration // n = 1..12
	}{
		{"delays:0s,1m,5m,15m,30m,1h", mins(0, 1, 5, 15, 30, 60, g, g, g, g, g, g)},
		{"delays:0s,1m,5m,15m,30m,1h,max=10m", mins(0, 1, 5, 10, 10, 10, g, g, g, g, g, g)},
		{"delays:0s,1m,5m,15m,30m,1h,attempts=3", mins(0, 1, g, g, g, g, g, g, g, g, g, g)},
		{"delays:2m", mins(2, g, g, g, g, g, g, g, g, g, g, g)},
		{"constant:unit=1m", mins(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1)},
		{"constant:unit=1m,attempts=4", mins(1, 1, 1, g, g, g, g, g, g, g, g, g)},
		{"linear:unit=1m", mins(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)},
		{"linear:unit=1m,max=5m,attempts=10", mins(1, 2, 3, 4, 5, 5, 5, 5, 5, g, g, g)},
		{"fibonacci:unit=1m", mins(1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144)},
		{"fibonacci:unit=1m,max=1h", mins(1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 60, 60)},
		{"quadratic:unit=1s", secs(1, 4, 9, 16, 25, 36, 49, 64, 81, 100, 121, 144)},
		{"quadratic:unit=1s,max=1m", secs(1, 4, 9, 16, 25, 36, 49, 60, 60, 60, 60, 60)},
		{"polynomial:unit=1s,power=3", secs(1, 8, 27, 64, 125, 216, 343, 512, 729, 1000, 1331, 1728)},
		{"polynomial:unit=1s,power=0.5", []time.Duration{
			1 * time.Second, 1414213562, 1732050808, 2 * time.Second, 2236067977, 2449489743,
			2645751311, 2828427125, 3 * time.Second, 3162277660, 3316624790, 3464101615,
		}},
		{"exponential:base=1s,factor=2", secs(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048)},
		{"exponential:base=1s", secs(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048)},
		{"exponential:base=1s,factor=3,max=1h", secs(1, 3, 9, 27, 81, 243, 729, 2187, 3600, 3600, 3600, 3600)},
		{"exponential:base=10s,factor=1.5,attempts=6", []time.Duration{
			10 * time.Second, 15 * time.Second, 22500 * time.Millisecond, 33750 * time.Millisecond, 50625 * time.Millisecond, giveUp, giveUp, giveUp, giveUp, giveUp, giveUp, giveUp,
		}},
		{"delayed_job", secs(6, 21, 86, 261, 630, 1301, 2406, 4101, 6566, 10005, 14646, 20741)},
		{"delayed_job:max=1h", secs(6, 21, 86, 261, 630, 1301, 2406, 3600, 3600, 3600, 3600, 3600)},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			t.Parallel()
			r, err := ParseRetry(tt.spec)
			require.NoError(t, err)
			require.Len(t, tt.want, 12)
			for n := 1; n <= 12; n++ {
				b := r.Delay(n, time.Duration(n)*time.Minute)
				want := tt.want[n-1]
				if want == giveUp {
					require.Equal(t, Backoff{GiveUp: true}, b, "n=%d", n)
					continue
				}
				require.Equal(t, Backoff{Min: want, Max: want}, b, "n=%d", n)
			}
		})
	}
}

func TestRetryArctan(t *testing.T) {
	t.Parallel()

	// 24h·(2/π)·arctan(n³/15), computed independently and rounded to the
	// millisecond (the last bits of math.Atan may differ between libms).
	wantMS := []int64{
		3661512, 26949587, 58507580, 73737014, 79830938, 82586404,
		83996111, 84789017, 85268391, 85575003, 85780147, 85922547,
	}
	r, err := ParseRetry("arctan:max=24h")
	require.NoError(t, err)
	for n := 1; n <= 12; n++ {
		b := r.Delay(n, 0)
		require.Equal(t, b.Min, b.Max)
		require.Equal(t, time.Duration(wantMS[n-1])*time.Millisecond, b.Min.Round(time.Millisecond), "n=%d", n)
	}
	// Levels off at max, never above.
	require.Equal(t, 24*time.Hour, r.Delay(1_000_000, 0).Min.Round(time.Second))
	require.LessOrEqual(t, r.Delay(math.MaxInt, 0).Max, 24*time.Hour)

	// With attempts: gives up at the 3rd failure.
	r, err = ParseRetry("arctan:max=24h,attempts=3")
	require.NoError(t, err)
	require.False(t, r.Delay(2, 0).GiveUp)
	require.True(t, r.Delay(3, 0).GiveUp)
}

func TestRetryProgressive(t *testing.T) {
	t.Parallel()

	r, err := ParseRetry("progressive:5m/24h,1h/168h,12h/336h,24h/720h,96h/4320h,192h/8640h")
	require.NoError(t, err)
	h := time.Hour
	tests := []struct {
		failingFor time.Duration
		want       time.Duration
	}{
		{0, 5 * time.Minute},
		{-time.Minute, 5 * time.Minute}, // clock skew: still the first step
		{24*h - 1, 5 * time.Minute},
		{24 * h, h},
		{168*h - 1, h},
		{168 * h, 12 * h},
		{336 * h, 24 * h},
		{719 * h, 24 * h},
		{720 * h, 96 * h},
		{4320 * h, 192 * h},
		{8640*h - 1, 192 * h},
		{8640 * h, giveUp},
		{100000 * h, giveUp},
	}
	for _, tt := range tests {
		// The attempt number does not matter.
		for _, n := range []int{1, 7, 1000} {
			b := r.Delay(n, tt.failingFor)
			if tt.want == giveUp {
				require.Equal(t, Backoff{GiveUp: true}, b, "failing for %s", tt.failingFor)
				continue
			}
			require.Equal(t, Backoff{Min: tt.want, Max: tt.want}, b, "failing for %s", tt.failingFor)
		}
	}

	r, err = ParseRetry("progressive:5m/24h,1h/168h,max=30m,attempts=50")
	require.NoError(t, err)
	require.Equal(t, 5*time.Minute, r.Delay(1, 0).Min)
	require.Equal(t, 30*time.Minute, r.Delay(2, 25*h).Min)
	require.True(t, r.Delay(50, 25*h).GiveUp)
}

func TestRetryMaxAge(t *testing.T) {
	t.Parallel()

	r, err := ParseRetry("constant:unit=1m,max_age=1h")
	require.NoError(t, err)
	require.Equal(t, Backoff{Min: time.Minute, Max: time.Minute}, r.Delay(100, time.Hour))
	require.Equal(t, Backoff{GiveUp: true}, r.Delay(1, time.Hour+time.Nanosecond))

	// Both limits: whichever comes first.
	r, err = ParseRetry("exponential:base=1s,attempts=5,max_age=10m")
	require.NoError(t, err)
	require.False(t, r.Delay(4, 10*time.Minute).GiveUp)
	require.True(t, r.Delay(5, 0).GiveUp)
	require.True(t, r.Delay(2, 11*time.Minute).GiveUp)
}

func TestRetryNoOverflow(t *testing.T) {
	t.Parallel()

	const maxD = time.Duration(math.MaxInt64)
	tests := []struct {
		spec string
		n    int
		want time.Duration
	}{
		{"linear:unit=1h", math.MaxInt, maxD},
		{"fibonacci:unit=1ns", 92, 7540113804746346429},
		{"fibonacci:unit=1ns", 93, maxD},
		{"fibonacci:unit=1m", 1 << 40, maxD},
		{"quadratic:unit=1s", 3037000500, maxD},
		{"quadratic:unit=1s", math.MaxInt, maxD},
		{"polynomial:unit=1s,power=3", math.MaxInt, maxD},
		{"polynomial:unit=1s,power=64", 2, maxD},
		{"polynomial:unit=1s,power=2.5", math.MaxInt, maxD},
		{"exponential:base=1s,factor=2", 34, 8589934592 * time.Second},
		{"exponential:base=1s,factor=2", 35, maxD},
		{"exponential:base=1s,factor=2", math.MaxInt, maxD},
		{"exponential:base=1s,factor=2,max=24h", math.MaxInt, 24 * time.Hour},
		{"delayed_job", 1 << 20, maxD},
		{"delayed_job", math.MaxInt, maxD},
		{"arctan:max=2562047h", math.MaxInt, 2562047 * time.Hour},
		{"constant:unit=2562047h", math.MaxInt, 2562047 * time.Hour},
	}
	for _, tt := range tests {
		r, err := ParseRetry(tt.spec)
		require.NoError(t, err, tt.spec)
		b := r.Delay(tt.n, 0)
		require.False(t, b.GiveUp)
		require.Equal(t, tt.want, b.Min, "%s n=%d", tt.spec, tt.n)
		require.Equal(t, tt.want, b.Max, "%s n=%d", tt.spec, tt.n)
	}

	// Jitter keeps saturated bounds in range too.
	for _, j := range []string{"full", "equal", "decorrelated"} {
		r, err := ParseRetry("exponential:base=1s,jitter=" + j)
		require.NoError(t, err)
		b := r.Delay(math.MaxInt, 0)
		require.GreaterOrEqual(t, b.Min, time.Duration(0), j)
		require.LessOrEqual(t, b.Min, b.Max, j)
		require.Equal(t, maxD, b.Max, j)
		require.Equal(t, maxD, b.Pick(1), j)
		got := b.Pick(math.Nextafter(1, 0)) // float64(span) is 2^63: must not wrap
		require.GreaterOrEqual(t, got, b.Min, j)
		require.LessOrEqual(t, got, maxD, j)
	}
}

func TestRetryNonPositiveN(t *testing.T) {
	t.Parallel()

	r, err := ParseRetry("linear:unit=1m")
	require.NoError(t, err)
	require.Equal(t, r.Delay(1, 0), r.Delay(0, 0))
	require.Equal(t, r.Delay(1, 0), r.Delay(-5, 0))
}

func TestRetryJitterBounds(t *testing.T) {
	t.Parallel()

	rng := rand.New(rand.NewPCG(1, 2))
	specs := []string{
		"delays:0s,1m,5m,15m,30m,1h",
		"constant:unit=1m",
		"linear:unit=1m",
		"fibonacci:unit=1m,max=30m",
		"quadratic:unit=1s",
		"polynomial:unit=1s,power=3",
		"exponential:base=1s,factor=2,max=1h",
		"arctan:max=24h",
		"delayed_job",
		"progressive:5m/24h,1h/168h",
	}
	for _, spec := range specs {
		plain, err := ParseRetry(spec)
		require.NoError(t, err)
		for _, j := range []Jitter{JitterFull, JitterEqual, JitterDecorrelated} {
			r, err := ParseRetry(spec + "," + "jitter=" + string(j))
			if !strings.Contains(spec, ":") {
				r, err = ParseRetry(spec + ":jitter=" + string(j))
			}
			require.NoError(t, err)
			for n := 1; n <= 12; n++ {
				age := time.Duration(n) * 7 * time.Hour
				exact := plain.Delay(n, age)
				b := r.Delay(n, age)
				if exact.GiveUp {
					require.Equal(t, Backoff{GiveUp: true}, b)
					continue
				}
				d := exact.Min
				var lo, hi time.Duration
				switch j {
				case JitterFull:
					lo, hi = 0, d
				case JitterEqual:
					lo, hi = d/2, d
				case JitterDecorrelated:
					p := d
					if n > 1 && !strings.HasPrefix(spec, "progressive") {
						p = plain.Delay(n-1, age).Min
					}
					lo, hi = min(p, d), max(3*p, d)
					if strings.Contains(spec, "max=") {
						hi = min(hi, map[string]time.Duration{
							"fibonacci":   30 * time.Minute,
							"exponential": time.Hour,
							"arctan":      24 * time.Hour,
						}[strings.Split(spec, ":")[0]])
					}
				}
				require.Equal(t, Backoff{Min: lo, Max: hi}, b, "%s jitter=%s n=%d", spec, j, n)
				for range 50 {
					got := b.Pick(rng.Float64())
					require.GreaterOrEqual(t, got, lo)
					require.LessOrEqual(t, got, hi)
				}
				require.Equal(t, lo, b.Pick(0))
			}
		}
	}
}

func TestRetryJitterDecorrelatedExponential(t *testing.T) {
	t.Parallel()

	// For factor 2 the range is [d/2, 3d/2], centred on d.
	r, err := ParseRetry("exponential:base=1s,factor=2,jitter=decorrelated")
	require.NoError(t, err)
	require.Equal(t, Backoff{Min: time.Second, Max: 3 * time.Second}, r.Delay(1, 0))
	require.Equal(t, Backoff{Min: 4 * time.Second, Max: 12 * time.Second}, r.Delay(4, 0))

	// The cap bounds the top of the range.
	r, err = ParseRetry("exponential:base=1s,factor=2,max=10s,jitter=decorrelated")
	require.NoError(t, err)
	require.Equal(t, Backoff{Min: 4 * time.Second, Max: 10 * time.Second}, r.Delay(4, 0))
	require.Equal(t, Backoff{Min: 10 * time.Second, Max: 10 * time.Second}, r.Delay(9, 0))
}

func TestBackoffPick(t *testing.T) {
	t.Parallel()

	b := Backoff{Min: 10 * time.Second, Max: 20 * time.Second}
	require.Equal(t, 10*time.Second, b.Pick(0))
	require.Equal(t, 15*time.Second, b.Pick(0.5))
	require.Equal(t, 10*time.Second, b.Pick(-1))
	require.Equal(t, 10*time.Second, b.Pick(math.NaN()))
	require.Equal(t, 20*time.Second, b.Pick(1))
	require.Equal(t, 20*time.Second, b.Pick(7))
	require.Equal(t, 5*time.Second, Backoff{Min: 5 * time.Second, Max: 5 * time.Second}.Pick(0.9))
}

func TestParseRetryString(t *testing.T) {
	t.Parallel()

	tests := []struct{ in, want string }{
		{"delays:0s,1m,5m,15m,30m,1h", "delays:0s,1m,5m,15m,30m,1h"},
		{" delays: 0s , 60s, 300s ,jitter=none", "delays:0s,1m,5m"},
		{"constant:unit=60s", "constant:unit=1m"},
		{"linear:unit=1m,jitter=full", "linear:unit=1m,jitter=full"},
		{"fibonacci:max=1h,unit=1m", "fibonacci:unit=1m,max=1h"},
		{"quadratic:unit=1s", "quadratic:unit=1s"},
		{"polynomial:power=3,unit=1s", "polynomial:unit=1s,power=3"},
		{"exponential:base=1s", "exponential:base=1s,factor=2"},
		{"exponential:base=1500ms,factor=1.5,jitter=equal,max_age=168h,attempts=20,max=90m",
			"exponential:base=1.5s,factor=1.5,max=1h30m,attempts=20,max_age=168h,jitter=equal"},
		{"arctan:max=24h", "arctan:max=24h"},
		{"delayed_job", "delayed_job"},
		{"delayed_job:attempts=25", "delayed_job:attempts=25"},
		{"progressive:5m/24h,1h/168h,12h/336h,24h/720h,96h/4320h,192h/8640h", "progressive:5m/24h,1h/168h,12h/336h,24h/720h,96h/4320h,192h/8640h"},
	}
	for _, tt := range tests {
		r, err := ParseRetry(tt.in)
		require.NoError(t, err, tt.in)
		require.Equal(t, tt.want, r.String(), tt.in)
		again, err := ParseRetry(r.String())
		require.NoError(t, err)
		require.Equal(t, r, again, "round trip of %q", tt.in)
	}
	require.Equal(t, DefaultRetrySpec, DefaultRetry.String())
}

func TestParseRetryErrors(t *testing.T) {
	t.Parallel()

	tests := []struct{ spec, want string }{
		{"exponential:base=1s,factr=2", `retry "exponential:base=1s,factr=2": unknown key "factr" (keys for exponential: base, factor, max, attempts, max_age, jitter; e.g. "exponential:base=1s,factor=2")`},
		{"", `retry "": missing policy name (policies: delays, constant, linear, fibonacci, quadratic, polynomial, exponential, arctan, delayed_job, progressive; e.g. "exponential:base=1s,factor=2")`},
		{"expo:base=1s", `retry "expo:base=1s": unknown policy "expo" (policies: delays, constant, linear, fibonacci, quadratic, polynomial, exponential, arctan, delayed_job, progressive; e.g. "exponential:base=1s,factor=2")`},
		{"constant", `retry "constant": missing key "unit" (keys for constant: unit, max, attempts, max_age, jitter; e.g. "constant:unit=1m")`},
		{"constant:", `retry "constant:": nothing after "constant:" (keys for constant: unit, max, attempts, max_age, jitter; e.g. "constant:unit=1m")`},
		{"linear:unit=1 m", `retry "linear:unit=1 m": unit=1 m: not a duration (use e.g. 90s, 5m, 1h30m) (keys for linear: unit, max, attempts, max_age, jitter; e.g. "linear:unit=1m")`},
		{"linear:unit=0s", `retry "linear:unit=0s": unit=0s: must be positive (keys for linear: unit, max, attempts, max_age, jitter; e.g. "linear:unit=1m")`},
		{"linear:unit=-1m", `retry "linear:unit=-1m": unit=-1m: must not be negative (keys for linear: unit, max, attempts, max_age, jitter; e.g. "linear:unit=1m")`},
		{"linear:unit=1m,unit=2m", `retry "linear:unit=1m,unit=2m": key "unit" given twice (keys for linear: unit, max, attempts, max_age, jitter; e.g. "linear:unit=1m")`},
		{"linear:unit=", `retry "linear:unit=": empty value for "unit" (keys for linear: unit, max, attempts, max_age, jitter; e.g. "linear:unit=1m")`},
		{"linear:1m", `retry "linear:1m": unexpected value "1m" (want key=value) (keys for linear: unit, max, attempts, max_age, jitter; e.g. "linear:unit=1m")`},
		{"fibonacci:unit=1m,,max=1h", `retry "fibonacci:unit=1m,,max=1h": empty item in the list (keys for fibonacci: unit, max, attempts, max_age, jitter; e.g. "fibonacci:unit=1m")`},
		{"polynomial:unit=1s", `retry "polynomial:unit=1s": missing key "power" (keys for polynomial: unit, power, max, attempts, max_age, jitter; e.g. "polynomial:unit=1s,power=3")`},
		{"polynomial:unit=1s,power=x", `retry "polynomial:unit=1s,power=x": power=x: invalid syntax (keys for polynomial: unit, power, max, attempts, max_age, jitter; e.g. "polynomial:unit=1s,power=3")`},
		{"polynomial:unit=1s,power=65", `retry "polynomial:unit=1s,power=65": power=65: must be between 0 and 64 (keys for polynomial: unit, power, max, attempts, max_age, jitter; e.g. "polynomial:unit=1s,power=3")`},
		{"exponential:factor=2", `retry "exponential:factor=2": missing key "base" (keys for exponential: base, factor, max, attempts, max_age, jitter; e.g. "exponential:base=1s,factor=2")`},
		{"exponential:base=1s,factor=0.5", `retry "exponential:base=1s,factor=0.5": factor=0.5: must be between 1 and 1e6 (keys for exponential: base, factor, max, attempts, max_age, jitter; e.g. "exponential:base=1s,factor=2")`},
		{"arctan", `retry "arctan": missing key "max" (keys for arctan: max, attempts, max_age, jitter; e.g. "arctan:max=24h")`},
		{"delayed_job:unit=1s", `retry "delayed_job:unit=1s": unknown key "unit" (keys for delayed_job: max, attempts, max_age, jitter; e.g. "delayed_job")`},
		{"delays:", `retry "delays:": nothing after "delays:" (delays: a list of durations, then keys max, attempts, max_age, jitter; e.g. "delays:0s,1m,5m,15m,30m,1h")`},
		{"delays:attempts=3", `retry "delays:attempts=3": no delays given (delays: a list of durations, then keys max, attempts, max_age, jitter; e.g. "delays:0s,1m,5m,15m,30m,1h")`},
		{"delays:0s,1x", `retry "delays:0s,1x": delay "1x": not a duration (use e.g. 90s, 5m, 1h30m) (delays: a list of durations, then keys max, attempts, max_age, jitter; e.g. "delays:0s,1m,5m,15m,30m,1h")`},
		{"delays:1m,attempts=0", `retry "delays:1m,attempts=0": attempts=0: must be at least 1 (delays: a list of durations, then keys max, attempts, max_age, jitter; e.g. "delays:0s,1m,5m,15m,30m,1h")`},
		{"delays:1m,jitter=half", `retry "delays:1m,jitter=half": jitter=half: want none, full, equal or decorrelated (delays: a list of durations, then keys max, attempts, max_age, jitter; e.g. "delays:0s,1m,5m,15m,30m,1h")`},
		{"progressive:5m", `retry "progressive:5m": step "5m" is not every/until (progressive: steps every/until, then keys max, attempts, max_age, jitter; e.g. "progressive:5m/24h,1h/168h,12h/336h,24h/720h,96h/4320h,192h/8640h")`},
		{"progressive:5m/24h,1h/12h", `retry "progressive:5m/24h,1h/12h": step "1h/12h": until must be later than the previous step's 24h (progressive: steps every/until, then keys max, attempts, max_age, jitter; e.g. "progressive:5m/24h,1h/168h,12h/336h,24h/720h,96h/4320h,192h/8640h")`},
		{"progressive:0s/24h", `retry "progressive:0s/24h": step "0s/24h": every must be positive (progressive: steps every/until, then keys max, attempts, max_age, jitter; e.g. "progressive:5m/24h,1h/168h,12h/336h,24h/720h,96h/4320h,192h/8640h")`},
		{"progressive:5m/x", `retry "progressive:5m/x": step "5m/x": until: not a duration (use e.g. 90s, 5m, 1h30m) (progressive: steps every/until, then keys max, attempts, max_age, jitter; e.g. "progressive:5m/24h,1h/168h,12h/336h,24h/720h,96h/4320h,192h/8640h")`},
	}
	for _, tt := range tests {
		r, err := ParseRetry(tt.spec)
		require.Nil(t, r, tt.spec)
		require.EqualError(t, err, tt.want)
		require.NotContains(t, err.Error(), "\n")
	}
}
