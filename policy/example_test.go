package policy_test

import (
	"fmt"
	"time"

	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/schedule"
)

func ExampleParseRetry() {
	r, err := policy.ParseRetry("exponential:base=1s,factor=2,max=1m,attempts=8")
	if err != nil {
		panic(err)
	}
	for n := 1; n <= 8; n++ {
		b := r.Delay(n, 0)
		if b.GiveUp {
			fmt.Printf("failure %d: give up\n", n)
			continue
		}
		fmt.Printf("failure %d: wait %s\n", n, b.Min)
	}

	_, err = policy.ParseRetry("exponential:base=1s,factr=2")
	fmt.Println(err)
	// Output:
	// failure 1: wait 1s
	// failure 2: wait 2s
	// failure 3: wait 4s
	// failure 4: wait 8s
	// failure 5: wait 16s
	// failure 6: wait 32s
	// failure 7: wait 1m0s
	// failure 8: give up
	// retry "exponential:base=1s,factr=2": unknown key "factr" (keys for exponential: base, factor, max, attempts, max_age, jitter; e.g. "exponential:base=1s,factor=2")
}

func ExampleBackoff_Pick() {
	r, err := policy.ParseRetry("constant:unit=10m,jitter=equal")
	if err != nil {
		panic(err)
	}
	b := r.Delay(1, 0)
	fmt.Println(b.Min, b.Max, b.Pick(0.5))
	// Output: 5m0s 10m0s 7m30s
}

func ExamplePolicy_Failure() {
	// Every day at 14:00 UTC; an attempt may run for an hour.
	sched, err := schedule.Parse("DTSTART:20250101T140000Z\nRRULE:FREQ=DAILY")
	if err != nil {
		panic(err)
	}
	for _, spec := range []string{"constant:unit=30m", "constant:unit=65m"} {
		retry, err := policy.ParseRetry(spec)
		if err != nil {
			panic(err)
		}
		p := policy.Policy{Kind: "big_tables", Timeout: time.Hour, Retry: retry}

		start := time.Date(2025, 6, 10, 11, 59, 0, 0, time.UTC)
		s := p.Start(policy.State{}, start, "cv37img5tppgl4002kb0")
		now := start.Add(time.Minute)
		s, d := p.Failure(s, now, policy.Failure{Reason: "HTTP 503"}, sched, 0)
		fmt.Printf("%s: %s, refresh_at %s\n", spec, d.Branch, s.RefreshAt.Format(time.Kitchen))
	}

	// A permanent failure disables the model with the worker's reason.
	p := policy.Policy{Kind: "big_tables"}
	s := p.Start(policy.State{}, time.Date(2025, 6, 10, 12, 0, 0, 0, time.UTC), "cv37img5tppgl4002kb0")
	s, d := p.Failure(s, s.AttemptAt.Add(time.Second), policy.Failure{
		Reason:             "GET https://example.com/broken: 404 Not Found",
		UserFriendlyReason: "Provided URL is invalid: https://example.com/broken",
		Permanent:          true,
	}, sched, 0)
	fmt.Printf("%s (permanent %t): %s\n", d.Branch, d.Permanent, s.DisabledReason)
	// Output:
	// constant:unit=30m: retry, refresh_at 12:30PM
	// constant:unit=65m: planned, refresh_at 2:00PM
	// disabled (permanent true): Provided URL is invalid: https://example.com/broken
}
