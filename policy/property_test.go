package policy

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/refresher/refresher/schedule"
)

// randomRule returns the text of a random valid-looking RRULE: a DTSTART in
// UTC or in a real zone, a FREQ from MINUTELY to MONTHLY, an INTERVAL, and
// sometimes BYHOUR/BYMINUTE/BYDAY, COUNT or UNTIL.
func randomRule(rng *rand.Rand) string {
	start := time.Date(2019+rng.IntN(7), time.Month(1+rng.IntN(12)), 1+rng.IntN(28), rng.IntN(24), rng.IntN(60), 0, 0, time.UTC)
	var b strings.Builder
	switch zone := []string{"", "Europe/Berlin", "America/New_York", "Australia/Sydney"}[rng.IntN(4)]; zone {
	case "":
		fmt.Fprintf(&b, "DTSTART:%s\n", start.Format("20060102T150405Z"))
	default:
		fmt.Fprintf(&b, "DTSTART;TZID=%s:%s\n", zone, start.Format("20060102T150405"))
	}
	freq := []string{"MINUTELY", "HOURLY", "DAILY", "DAILY", "WEEKLY", "MONTHLY"}[rng.IntN(6)]
	fmt.Fprintf(&b, "RRULE:FREQ=%s", freq)
	switch freq {
	case "MINUTELY":
		fmt.Fprintf(&b, ";INTERVAL=%d", []int{5, 10, 15, 30, 45, 90}[rng.IntN(6)])
	case "HOURLY":
		fmt.Fprintf(&b, ";INTERVAL=%d", 1+rng.IntN(6))
	case "DAILY", "WEEKLY":
		fmt.Fprintf(&b, ";INTERVAL=%d", 1+rng.IntN(3))
		if rng.IntN(2) == 0 {
			h := rng.Perm(24)[:1+rng.IntN(3)]
			fmt.Fprintf(&b, ";BYHOUR=%s;BYMINUTE=%d", joinInts(h), rng.IntN(60))
		}
		if freq == "WEEKLY" && rng.IntN(2) == 0 {
			days := []string{"MO", "TU", "WE", "TH", "FR", "SA", "SU"}
			rng.Shuffle(len(days), func(i, j int) { days[i], days[j] = days[j], days[i] })
			fmt.Fprintf(&b, ";BYDAY=%s", strings.Join(days[:1+rng.IntN(3)], ","))
		}
	case "MONTHLY":
		fmt.Fprintf(&b, ";BYMONTHDAY=%d", 1+rng.IntN(28))
	}
	switch rng.IntN(5) {
	case 0:
		fmt.Fprintf(&b, ";COUNT=%d", 1+rng.IntN(40))
	case 1:
		fmt.Fprintf(&b, ";UNTIL=%s", start.AddDate(0, rng.IntN(30), rng.IntN(30)).Format("20060102T150405Z"))
	}
	return b.String()
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}

var propertyRetrySpecs = []string{
	DefaultRetrySpec,
	"delays:0s,1m,5m,15m,30m,1h,jitter=full",
	"constant:unit=7m",
	"linear:unit=13m,max=6h,attempts=12",
	"fibonacci:unit=1m,jitter=decorrelated",
	"quadratic:unit=30s,max_age=72h",
	"polynomial:unit=1s,power=3,jitter=equal",
	"exponential:base=1s,factor=2,max=24h,attempts=30",
	"exponential:base=10s,factor=3,jitter=full,max_age=240h",
	"arctan:max=24h",
	"delayed_job:attempts=25",
	"progressive:5m/24h,1h/168h,12h/336h,24h/720h,96h/4320h,192h/8640h",
}

// TestPropertyGuarantees drives random models (random rules, policies and
// timeouts) through random sequences of start, success, failure (with and
// without Retry-After, sometimes permanent), timeout and enable, and checks
// after every transition the guarantees of docs/schedules.md that policy owns:
//
//  1. not disabled and the rule has occurrences left ⇒ refresh_at is set;
//  3. after a success refresh_at is an occurrence of the rule (or zero when
//     the rule has none left);
//  4. a retry never starts such that it could still run at the next planned
//     occurrence: branch retry ⇒ retry_at + timeout <= that occurrence; and
//     nothing is scheduled before now + Retry-After.
func TestPropertyGuarantees(t *testing.T) {
	t.Parallel()

	rng := rand.New(rand.NewPCG(20250610, 6))
	const rules = 1000
	parsed, retries, plannedBranches := 0, 0, 0
	for range rules {
		text := randomRule(rng)
		sched, err := schedule.Parse(text)
		if err != nil {
			continue // the parser may reject rules it cannot evaluate cheaply
		}
		parsed++
		p := Policy{
			Kind:    "prop",
			Timeout: []time.Duration{time.Minute, 10 * time.Minute, time.Hour, 3 * time.Hour}[rng.IntN(4)],
			Retry:   mustRetry(t, propertyRetrySpecs[rng.IntN(len(propertyRetrySpecs))]),
		}
		first := sched.Next(time.Date(2018, 1, 1, 0, 0, 0, 0, time.UTC))
		if first.IsZero() {
			t.Fatalf("rule %q has no occurrence at all", text)
		}
		// Created some time after DTSTART, up to three years later.
		created := first.Add(time.Duration(rng.Int64N(int64(3 * 365 * 24 * time.Hour))))
		s := State{RefreshAt: created}
		now := created
		ctx := func() string {
			return fmt.Sprintf("rule %q, retry %s, timeout %s, now %s, state %+v", text, p.Retry, p.Timeout, now, s)
		}

		for step := 0; step < 60; step++ {
			if s.Disabled() {
				if rng.IntN(2) == 0 {
					break
				}
				now = now.Add(time.Duration(rng.Int64N(int64(30 * 24 * time.Hour))))
				s = Enable(s, now)
				checkNotStuck(t, s, sched, now, ctx)
				continue
			}
			if s.RefreshAt.IsZero() {
				if !sched.Next(now).IsZero() {
					t.Fatalf("guarantee 1: nothing planned but the rule has occurrences left: %s", ctx())
				}
				break
			}
			// The dispatcher acts on the row when it is due, sometimes late.
			now = latest(now, s.RefreshAt).Add(time.Duration(rng.Int64N(int64(2 * time.Minute))))
			s = p.Start(s, now, "attempt")
			if s.RefreshAt.Before(now.Add(p.Timeout)) {
				t.Fatalf("start: refresh_at %s earlier than now + timeout: %s", s.RefreshAt, ctx())
			}
			checkNotStuck(t, s, sched, now, ctx)

			run := time.Duration(rng.Int64N(int64(p.Timeout)))
			var d Decision
			var f Failure
			switch r := rng.IntN(10); {
			case r < 3: // success
				now = now.Add(run)
				s = succeed(s, now, sched)
				next := sched.Next(now)
				switch {
				case s.RefreshAt.IsZero():
					if !next.IsZero() {
						t.Fatalf("guarantee 3: nothing planned after success but %s is an occurrence: %s", next, ctx())
					}
				case !s.RefreshAt.Equal(next) || !sched.Next(s.RefreshAt.Add(-time.Nanosecond)).Equal(s.RefreshAt):
					t.Fatalf("guarantee 3: refresh_at %s after success is not the next occurrence %s: %s", s.RefreshAt, next, ctx())
				}
				checkNotStuck(t, s, sched, now, ctx)
				continue
			case r < 5: // timeout
				now = s.TimeoutAt
				s, d = p.TimedOut(s, now, sched, rng.Float64())
			default:
				now = now.Add(run)
				f = Failure{Reason: "boom", Permanent: rng.IntN(40) == 0}
				if rng.IntN(4) == 0 {
					f.RetryAfter = time.Duration(rng.Int64N(int64(48 * time.Hour)))
				}
				s, d = p.Failure(s, now, f, sched, rng.Float64())
			}
			checkNotStuck(t, s, sched, now, ctx)
			if d.Branch == BranchDisabled {
				if !s.Disabled() || !s.RefreshAt.IsZero() {
					t.Fatalf("disabled branch but state not disabled: %s", ctx())
				}
				continue
			}
			retries++
			floor := now.Add(f.RetryAfter)
			if s.RefreshAt.Before(floor) {
				t.Fatalf("refresh_at %s before the Retry-After floor %s: %s", s.RefreshAt, floor, ctx())
			}
			// The next planned occurrence, computed here from the rule alone.
			planned := sched.Next(now)
			if f.RetryAfter > 0 {
				planned = sched.Next(floor.Add(-time.Nanosecond))
			}
			switch d.Branch {
			case BranchRetry:
				if !planned.IsZero() && d.RetryAt.Add(p.Timeout).After(planned) {
					t.Fatalf("guarantee 4: retry at %s could still run at the planned %s: %s", d.RetryAt, planned, ctx())
				}
				if !s.RefreshAt.Equal(d.RetryAt) {
					t.Fatalf("retry branch but refresh_at %s != retry_at %s: %s", s.RefreshAt, d.RetryAt, ctx())
				}
			case BranchPlanned:
				plannedBranches++
				if !s.RefreshAt.Equal(planned) || !sched.Next(s.RefreshAt.Add(-time.Nanosecond)).Equal(s.RefreshAt) {
					t.Fatalf("planned branch but refresh_at %s is not the planned occurrence %s: %s", s.RefreshAt, planned, ctx())
				}
			default:
				t.Fatalf("unknown branch %q: %s", d.Branch, ctx())
			}
			if d.Delay < f.RetryAfter || !d.RetryAt.Equal(now.Add(d.Delay)) {
				t.Fatalf("delay %s below Retry-After %s or retry_at %s != now + delay: %s", d.Delay, f.RetryAfter, d.RetryAt, ctx())
			}
		}
	}
	t.Logf("%d of %d rules parsed, %d retries, %d planned branches", parsed, rules, retries, plannedBranches)
	// The generator must exercise the code, not be skipped.
	if parsed < rules*8/10 || retries < 1000 || plannedBranches < 50 {
		t.Fatalf("too little coverage: %d of %d rules parsed, %d retries, %d planned branches", parsed, rules, retries, plannedBranches)
	}
}

// checkNotStuck is guarantee 1: a model that is not disabled and whose rule
// has occurrences left after now has refresh_at set.
func checkNotStuck(t *testing.T, s State, sched Nexter, now time.Time, ctx func() string) {
	t.Helper()
	if !s.Disabled() && s.RefreshAt.IsZero() && !sched.Next(now).IsZero() {
		t.Fatalf("guarantee 1: not disabled, occurrences left, refresh_at NULL: %s", ctx())
	}
	if s.Disabled() && !s.RefreshAt.IsZero() {
		t.Fatalf("disabled but refresh_at set: %s", ctx())
	}
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
