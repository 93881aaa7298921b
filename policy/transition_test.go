package policy

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// dailyAt is a test schedule: every day at hour:minute UTC, with no
// occurrence after until (when set).
type dailyAt struct {
	hour, minute int
	until        time.Time
}

func (d dailyAt) Next(after time.Time) time.Time {
	after = after.UTC()
	t := time.Date(after.Year(), after.Month(), after.Day(), d.hour, d.minute, 0, 0, time.UTC)
	if !t.After(after) {
		t = t.AddDate(0, 0, 1)
	}
	if !d.until.IsZero() && t.After(d.until) {
		return time.Time{}
	}
	return t
}

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

func mustRetry(t testing.TB, spec string) *Retry {
	t.Helper()
	r, err := ParseRetry(spec)
	require.NoError(t, err)
	return r
}

// failing returns the state of a model whose attempt started at start and
// is still running.
func failing(p Policy, start time.Time, attemptNo int) State {
	return p.Start(State{AttemptNo: attemptNo - 1}, start, "d0attempt00000000000")
}

func TestPolicyDefaults(t *testing.T) {
	t.Parallel()

	p := Policy{}.WithDefaults()
	require.Equal(t, Policy{
		Kind:            "model",
		Timeout:         time.Hour,
		Retry:           DefaultRetry,
		DisabledReason:  "Cannot refresh {kind} after {attempts} attempt(s)",
		PermanentReason: "Cannot refresh {kind}: the source was rejected",
		MaxRetryAfter:   7 * 24 * time.Hour,
		MaxTimeout:      4 * time.Hour,
		Guard:           Guard{Threshold: 0.8, MinResults: 50, Window: 5 * time.Minute, Retry: time.Minute},
	}, p)
	require.NoError(t, p.Validate())
	require.NoError(t, Policy{}.Validate())

	custom := Policy{Kind: "big_tables", Timeout: time.Minute, Retry: mustRetry(t, "linear:unit=1m"), DisabledReason: "{kind}: {attempts}",
		PermanentReason: "{kind} rejected", MaxRetryAfter: time.Hour, MaxTimeout: 3 * time.Minute,
		Guard: Guard{Threshold: 0.5, MinResults: 10, Window: time.Minute, Retry: 2 * time.Minute}}
	require.Equal(t, custom, custom.WithDefaults())
}

func TestPolicyValidate(t *testing.T) {
	t.Parallel()

	require.EqualError(t, Policy{Timeout: -time.Second}.Validate(), "Timeout cannot be negative (got -1s)")
	require.EqualError(t, Policy{DisabledReason: "Cannot refresh {kind} after {n} tries"}.Validate(),
		`DisabledReason "Cannot refresh {kind} after {n} tries": unknown placeholder {n} (use {kind} and {attempts})`)
	require.EqualError(t, Policy{DisabledReason: strings.Repeat("x", 1025)}.Validate(),
		"DisabledReason is 1025 characters long, longer than the column's 1024")
	require.NoError(t, Policy{DisabledReason: "{attempts} failures of {kind}"}.Validate())
	require.EqualError(t, Policy{PermanentReason: "{model} rejected"}.Validate(),
		`PermanentReason "{model} rejected": unknown placeholder {model} (use {kind} and {attempts})`)
	require.EqualError(t, Policy{MaxRetryAfter: -time.Second}.Validate(), "MaxRetryAfter cannot be negative (got -1s)")
}

func TestTransitionStart(t *testing.T) {
	t.Parallel()

	p := Policy{Timeout: 30 * time.Minute}
	now := at("2025-06-10T12:00:00Z")
	before := State{
		RefreshAt:     now.Add(-time.Second),
		AttemptNo:     2,
		FailingSince:  at("2025-06-10T11:00:00Z"),
		LastError:     "boom",
		Status:        "50% done",
		LastSuccessAt: at("2025-06-09T14:00:00Z"),
	}
	got := p.Start(before, now, "cv37img5tppgl4002kb0")
	require.Equal(t, State{
		RefreshAt:     at("2025-06-10T12:30:00Z"),
		AttemptUID:    "cv37img5tppgl4002kb0",
		AttemptAt:     now,
		AttemptNo:     3,
		TimeoutAt:     at("2025-06-10T12:30:00Z"),
		FailingSince:  at("2025-06-10T11:00:00Z"),
		LastError:     "boom",
		LastSuccessAt: at("2025-06-09T14:00:00Z"),
	}, got)
	require.True(t, got.Running())
}

func TestTransitionSuccess(t *testing.T) {
	t.Parallel()

	p := Policy{}
	sched := dailyAt{hour: 14}
	s := failing(p, at("2025-06-10T13:00:00Z"), 3)
	s.FailingSince = at("2025-06-10T09:00:00Z")
	s.LastError = "boom"
	s.Status = "almost"

	now := at("2025-06-10T13:20:00Z")
	got := succeed(s, now, sched)
	require.Equal(t, State{
		RefreshAt:     at("2025-06-10T14:00:00Z"), // aligned to the rule, not now + timeout
		AttemptAt:     at("2025-06-10T13:00:00Z"),
		LastSuccessAt: now, // the running attempt's status ends with it
	}, got)

	// Success exactly at an occurrence: the next one, strictly after.
	got = succeed(s, at("2025-06-10T14:00:00Z"), sched)
	require.Equal(t, at("2025-06-11T14:00:00Z"), got.RefreshAt)

	// No occurrence left: nothing planned.
	got = succeed(s, now, dailyAt{hour: 14, until: at("2025-06-10T12:00:00Z")})
	require.True(t, got.RefreshAt.IsZero())
	require.Equal(t, now, got.LastSuccessAt)
}

func TestTransitionFailureAlignment(t *testing.T) {
	t.Parallel()

	daily14 := dailyAt{hour: 14}
	now := at("2025-06-10T12:00:00Z")
	today14 := at("2025-06-10T14:00:00Z")
	tomorrow14 := at("2025-06-11T14:00:00Z")

	tests := []struct {
		name       string
		sched      Nexter
		retry      string
		timeout    time.Duration
		retryAfter time.Duration
		u          float64
		now        time.Time

		branch    Branch
		delay     time.Duration
		plannedAt time.Time
		refreshAt time.Time
	}{
		{
			name: "retry would still run at 14:00: waits for 14:00", retry: "constant:unit=65m",
			branch: BranchPlanned, delay: 65 * time.Minute, plannedAt: today14, refreshAt: today14,
		},
		{
			name: "retry ends before 14:00: runs at its retry time", retry: "constant:unit=59m",
			branch: BranchRetry, delay: 59 * time.Minute, plannedAt: today14, refreshAt: at("2025-06-10T12:59:00Z"),
		},
		{
			name: "retry would end exactly at 14:00: runs", retry: "constant:unit=1h",
			branch: BranchRetry, delay: time.Hour, plannedAt: today14, refreshAt: at("2025-06-10T13:00:00Z"),
		},
		{
			name: "retry would end 1ns after 14:00: waits", retry: "delays:1h0m0.000000001s",
			branch: BranchPlanned, delay: time.Hour + 1, plannedAt: today14, refreshAt: today14,
		},
		{
			name: "immediate retry at 13:30 could still run at 14:00", retry: "delays:0s", now: at("2025-06-10T13:30:00Z"),
			branch: BranchPlanned, delay: 0, plannedAt: today14, refreshAt: today14,
		},
		{
			name: "immediate retry with a short timeout runs", retry: "delays:0s", timeout: 10 * time.Minute, now: at("2025-06-10T13:30:00Z"),
			branch: BranchRetry, delay: 0, plannedAt: today14, refreshAt: at("2025-06-10T13:30:00Z"),
		},
		{
			name: "retry would start after the planned occurrence", retry: "constant:unit=3h",
			branch: BranchPlanned, delay: 3 * time.Hour, plannedAt: today14, refreshAt: today14,
		},
		{
			name: "retry would start exactly at the planned occurrence", retry: "constant:unit=2h",
			branch: BranchPlanned, delay: 2 * time.Hour, plannedAt: today14, refreshAt: today14,
		},
		{
			name: "retry a day later: the next occurrence serves", retry: "constant:unit=30h",
			branch: BranchPlanned, delay: 30 * time.Hour, plannedAt: today14, refreshAt: today14,
		},
		{
			name: "Retry-After floor pushes past the planned occurrence", retry: "constant:unit=1m", retryAfter: 3 * time.Hour,
			branch: BranchRetry, delay: 3 * time.Hour, plannedAt: tomorrow14, refreshAt: at("2025-06-10T15:00:00Z"),
		},
		{
			name: "Retry-After floor exactly at the occurrence: the occurrence serves", retry: "constant:unit=1m", retryAfter: 2 * time.Hour,
			branch: BranchPlanned, delay: 2 * time.Hour, plannedAt: today14, refreshAt: today14,
		},
		{
			name: "Retry-After shorter than the policy delay", retry: "constant:unit=30m", retryAfter: 10 * time.Minute,
			branch: BranchRetry, delay: 30 * time.Minute, plannedAt: today14, refreshAt: at("2025-06-10T12:30:00Z"),
		},
		{
			name: "negative Retry-After counts as none", retry: "constant:unit=30m", retryAfter: -10 * time.Hour,
			branch: BranchRetry, delay: 30 * time.Minute, plannedAt: today14, refreshAt: at("2025-06-10T12:30:00Z"),
		},
		{
			name: "jitter: u picks inside the range", retry: "constant:unit=40m,jitter=full", u: 0.5,
			branch: BranchRetry, delay: 20 * time.Minute, plannedAt: today14, refreshAt: at("2025-06-10T12:20:00Z"),
		},
		{
			name: "jitter: the top of the range could run at 14:00", retry: "constant:unit=90m,jitter=equal", u: 0.99,
			branch: BranchPlanned, delay: 45*time.Minute + time.Duration(0.99*float64(45*time.Minute)), plannedAt: today14, refreshAt: today14,
		},
		{
			name: "no occurrence left: the retry still runs", sched: dailyAt{hour: 14, until: at("2025-06-10T11:00:00Z")}, retry: "constant:unit=3h",
			branch: BranchRetry, delay: 3 * time.Hour, refreshAt: at("2025-06-10T15:00:00Z"),
		},
		{
			name: "last occurrence before the floor: retry at the floor", sched: dailyAt{hour: 14, until: today14}, retry: "constant:unit=1m", retryAfter: 3 * time.Hour,
			branch: BranchRetry, delay: 3 * time.Hour, refreshAt: at("2025-06-10T15:00:00Z"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := Policy{Kind: "big_tables", Timeout: cmpOr(tt.timeout, time.Hour), Retry: mustRetry(t, tt.retry)}
			sched := tt.sched
			if sched == nil {
				sched = daily14
			}
			now := now
			if !tt.now.IsZero() {
				now = tt.now
			}
			s := failing(p, now.Add(-time.Minute), 1)
			got, d := p.Failure(s, now, Failure{Reason: "HTTP 503", RetryAfter: tt.retryAfter}, sched, tt.u)

			require.Equal(t, tt.branch, d.Branch)
			require.False(t, d.Permanent)
			require.False(t, d.GaveUp)
			require.Equal(t, tt.delay, d.Delay)
			require.Equal(t, now.Add(tt.delay), d.RetryAt)
			require.Equal(t, tt.plannedAt, d.PlannedAt)
			require.Equal(t, tt.refreshAt, d.RefreshAt)
			require.NotEmpty(t, d.Reason)
			require.NotContains(t, d.Reason, "\n")

			require.Equal(t, State{
				RefreshAt:    tt.refreshAt,
				AttemptAt:    now.Add(-time.Minute),
				AttemptNo:    1,
				FailingSince: now.Add(-time.Minute),
				LastError:    "HTTP 503",
			}, got)
		})
	}
}

func cmpOr(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

func TestTransitionFailureKeepsFailingSince(t *testing.T) {
	t.Parallel()

	p := Policy{Retry: mustRetry(t, "constant:unit=1m")}
	s := failing(p, at("2025-06-10T12:00:00Z"), 4)
	s.FailingSince = at("2025-06-09T08:00:00Z")
	got, d := p.Failure(s, at("2025-06-10T12:00:30Z"), Failure{Reason: "x"}, dailyAt{hour: 14}, 0)
	require.Equal(t, BranchRetry, d.Branch)
	require.Equal(t, at("2025-06-09T08:00:00Z"), got.FailingSince)
	require.Equal(t, 4, got.AttemptNo) // not reset: failing planned refreshes count too
	require.Empty(t, got.AttemptUID)
	require.True(t, got.TimeoutAt.IsZero())
}

func TestTransitionFailurePermanent(t *testing.T) {
	t.Parallel()

	p := Policy{Kind: "big_tables"}
	now := at("2025-06-10T12:00:10Z")
	s := failing(p, at("2025-06-10T12:00:00Z"), 1)
	s.Status = "fetching"
	got, d := p.Failure(s, now, Failure{
		Reason:             "GET https://example.com/broken: 404",
		UserFriendlyReason: "Provided URL is invalid: https://example.com/broken",
		Permanent:          true,
		RetryAfter:         time.Hour,
	}, dailyAt{hour: 14}, 0)
	require.Equal(t, Decision{
		Branch:    BranchDisabled,
		Permanent: true,
		Reason:    "Provided URL is invalid: https://example.com/broken",
	}, d)
	require.Equal(t, State{
		AttemptAt:      at("2025-06-10T12:00:00Z"),
		AttemptNo:      1,
		DisabledAt:     now,
		DisabledReason: "Provided URL is invalid: https://example.com/broken",
		FailingSince:   at("2025-06-10T12:00:00Z"),
		LastError:      "GET https://example.com/broken: 404",
	}, got)
	require.True(t, got.Disabled())

	// Without a user-friendly reason: the kind's PermanentReason, never the
	// technical reason, which stays in last_error for operators.
	got, d = p.Failure(s, now, Failure{Reason: "bad input", Permanent: true}, dailyAt{hour: 14}, 0)
	require.Equal(t, "Cannot refresh big_tables: the source was rejected", d.Reason)
	require.Equal(t, "Cannot refresh big_tables: the source was rejected", got.DisabledReason)
	require.Equal(t, "bad input", got.LastError)
	_, d = p.Failure(s, now, Failure{Permanent: true, UserFriendlyReason: " "}, dailyAt{hour: 14}, 0)
	require.Equal(t, "Cannot refresh big_tables: the source was rejected", d.Reason)
	custom := Policy{Kind: "feeds", PermanentReason: "{kind} rejected after {attempts} attempt(s)"}
	_, d = custom.Failure(s, now, Failure{Reason: "HTTP 404", Permanent: true}, dailyAt{hour: 14}, 0)
	require.Equal(t, "feeds rejected after 1 attempt(s)", d.Reason)
}

// A Retry-After beyond MaxRetryAfter (default 7 days) is capped: a worker's
// retry_after_seconds of 9223372036 once planned a row for the year 2319.
func TestTransitionFailureCapsRetryAfter(t *testing.T) {
	t.Parallel()

	now := at("2025-06-10T12:00:10Z")
	never := dailyAt{hour: 14, until: now} // no occurrence left: the retry decides
	tests := []struct {
		name       string
		p          Policy
		retryAfter time.Duration
		want       time.Time
	}{
		{"absurd value, default cap", Policy{}, 9223372036 * time.Second, now.Add(7 * 24 * time.Hour)},
		{"just above the default cap", Policy{}, 7*24*time.Hour + time.Second, now.Add(7 * 24 * time.Hour)},
		{"at the default cap", Policy{}, 7 * 24 * time.Hour, now.Add(7 * 24 * time.Hour)},
		{"below the cap", Policy{}, 2 * time.Hour, now.Add(2 * time.Hour)},
		{"custom cap", Policy{MaxRetryAfter: time.Hour}, 2 * time.Hour, now.Add(time.Hour)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := failing(tt.p, at("2025-06-10T12:00:00Z"), 1)
			got, d := tt.p.Failure(s, now, Failure{Reason: "HTTP 429", RetryAfter: tt.retryAfter}, never, 0)
			require.Equal(t, BranchRetry, d.Branch)
			require.Equal(t, tt.want, got.RefreshAt)
		})
	}
}

func TestTransitionFailureGivesUp(t *testing.T) {
	t.Parallel()

	// The default policy: 0s, 1m, 5m, 15m, 30m, 1h, then give up at the 7th
	// consecutive failure. Each attempt fails at once.
	p := Policy{Kind: "big_tables", Timeout: time.Minute}
	sched := dailyAt{hour: 14}
	now := at("2025-06-10T08:00:00Z")
	s := State{RefreshAt: now}
	var delays []time.Duration
	for i := 1; ; i++ {
		require.LessOrEqual(t, i, 7)
		now = s.RefreshAt
		s = p.Start(s, now, "attempt")
		var d Decision
		s, d = p.Failure(s, now.Add(time.Second), Failure{Reason: "boom"}, sched, 0)
		if d.Branch == BranchDisabled {
			require.Equal(t, 7, i)
			require.True(t, d.GaveUp)
			require.False(t, d.Permanent)
			require.Equal(t, "Cannot refresh big_tables after 7 attempt(s)", d.Reason)
			break
		}
		require.Equal(t, BranchRetry, d.Branch)
		delays = append(delays, d.Delay)
	}
	require.Equal(t, []time.Duration{0, time.Minute, 5 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour}, delays)
	require.Equal(t, State{
		AttemptAt:      s.AttemptAt,
		AttemptNo:      7,
		DisabledAt:     s.AttemptAt.Add(time.Second),
		DisabledReason: "Cannot refresh big_tables after 7 attempt(s)",
		FailingSince:   at("2025-06-10T08:00:00Z"),
		LastError:      "boom",
	}, s)

	// A custom template, and max_age measured from failing_since.
	p = Policy{Kind: "feeds", Retry: mustRetry(t, "constant:unit=1m,max_age=2h"), DisabledReason: "{kind} failed {attempts} times"}
	s = failing(p, at("2025-06-10T12:00:00Z"), 30)
	s.FailingSince = at("2025-06-10T10:00:00Z")
	_, d := p.Failure(s, at("2025-06-10T12:00:00Z"), Failure{Reason: "x"}, sched, 0)
	require.Equal(t, BranchRetry, d.Branch)
	got, d := p.Failure(s, at("2025-06-10T12:00:01Z"), Failure{Reason: "x"}, sched, 0)
	require.Equal(t, Decision{Branch: BranchDisabled, GaveUp: true, Reason: "feeds failed 30 times"}, d)
	require.Equal(t, "feeds failed 30 times", got.DisabledReason)
}

func TestTransitionTimedOut(t *testing.T) {
	t.Parallel()

	p := Policy{Timeout: 90 * time.Minute, Retry: mustRetry(t, "delays:0s,10m")}
	s := failing(p, at("2025-06-10T10:00:00Z"), 1)
	now := s.TimeoutAt
	got, d := p.TimedOut(s, now, dailyAt{hour: 14}, 0)
	require.Equal(t, "timed out after 1h30m", got.LastError)
	require.Equal(t, BranchRetry, d.Branch)
	// Due at once (ends 13:00, before 14:00): the shell starts the next
	// attempt in the same pass.
	require.Equal(t, now, got.RefreshAt)
	require.False(t, got.RefreshAt.After(now))
	require.Empty(t, got.AttemptUID)

	require.Equal(t, "timed out after 1h", TimeoutReason(time.Hour))
	require.Equal(t, "timed out after 1m30s", TimeoutReason(90*time.Second))
}

func TestTransitionStatus(t *testing.T) {
	t.Parallel()

	s := SetStatus(State{AttemptUID: "a"}, "importing 10/20")
	require.Equal(t, State{AttemptUID: "a", Status: "importing 10/20"}, s)

	long := strings.Repeat("é", 300)
	s = SetStatus(s, long)
	require.Equal(t, 255, utf8.RuneCountInString(s.Status))
	require.Equal(t, strings.Repeat("é", 254)+"…", s.Status)
}

func TestTransitionDisableEnable(t *testing.T) {
	t.Parallel()

	now := at("2025-06-10T12:00:00Z")
	running := failing(Policy{}, at("2025-06-10T11:59:00Z"), 3)
	running.FailingSince = at("2025-06-10T10:00:00Z")
	running.LastError = "boom"

	disabled := Disable(running, now, "Provided URL is invalid")
	require.Equal(t, State{
		AttemptAt:      at("2025-06-10T11:59:00Z"),
		AttemptNo:      3,
		DisabledAt:     now,
		DisabledReason: "Provided URL is invalid",
		FailingSince:   at("2025-06-10T10:00:00Z"),
		LastError:      "boom",
	}, disabled)

	later := at("2025-06-11T09:00:00Z")
	enabled := Enable(disabled, later)
	require.Equal(t, State{
		RefreshAt: later,
		AttemptAt: at("2025-06-10T11:59:00Z"),
		LastError: "boom",
	}, enabled)
	require.False(t, enabled.Disabled())

	// Enabling a running model forgets its attempt: its result is stale.
	enabled = Enable(running, later)
	require.Empty(t, enabled.AttemptUID)
	require.True(t, enabled.TimeoutAt.IsZero())
	require.Equal(t, later, enabled.RefreshAt)
}

func TestDisableInvalidSchedule(t *testing.T) {
	t.Parallel()

	now := at("2025-06-10T12:00:00Z")
	s := DisableInvalidSchedule(State{RefreshAt: now}, now, errors.New(`RRULE: unknown FREQ "SOMETIMES"`))
	require.Equal(t, State{DisabledAt: now, DisabledReason: `Invalid refresh schedule: RRULE: unknown FREQ "SOMETIMES"`,
		LastError: `Invalid refresh schedule: RRULE: unknown FREQ "SOMETIMES"`}, s) // last_error: operators see it too
	require.Equal(t, "Invalid refresh schedule: empty rule", InvalidScheduleReason(nil))

	s = DisableInvalidSchedule(State{}, now, errors.New(strings.Repeat("x", 2000)))
	require.Equal(t, 1024, utf8.RuneCountInString(s.DisabledReason))
	require.Equal(t, 1024, utf8.RuneCountInString(s.LastError))
}

func TestTruncate(t *testing.T) {
	t.Parallel()

	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"", 5, ""},
		{"hello", 5, "hello"},
		{"hello!", 5, "hell…"},
		{"日本語のテキスト", 4, "日本語…"},
		{"日本語", 3, "日本語"},
		{"ab\xffcd", 10, "ab\uFFFDcd"},
		{"ab\xff\xfecd", 3, "ab…"},
		{"abc", 1, "…"},
		{"abc", 0, ""},
	}
	for _, tt := range tests {
		got := Truncate(tt.in, tt.n)
		require.Equal(t, tt.want, got, "Truncate(%q, %d)", tt.in, tt.n)
		require.True(t, utf8.ValidString(got))
	}

	// Long technical reasons fit refresh_last_error.
	p := Policy{}
	s := failing(p, at("2025-06-10T12:00:00Z"), 1)
	got, _ := p.Failure(s, at("2025-06-10T12:00:01Z"), Failure{Reason: strings.Repeat("ü", 5000)}, dailyAt{hour: 14}, 0)
	require.Equal(t, 1024, utf8.RuneCountInString(got.LastError))
}

func TestTrigger(t *testing.T) {
	t.Parallel()

	now := at("2025-06-10T12:00:00Z")
	running := State{RefreshAt: at("2025-06-10T13:00:00Z"), AttemptUID: "a", AttemptNo: 2, TimeoutAt: at("2025-06-10T13:00:00Z")}
	got, act := Trigger(running, now)
	require.Equal(t, TriggerRunning, act)
	require.Equal(t, running, got, "a running attempt is left alone")

	disabled := State{AttemptNo: 7, DisabledAt: at("2025-06-01T00:00:00Z"), DisabledReason: "gave up",
		FailingSince: at("2025-05-31T00:00:00Z"), LastError: "HTTP 503"}
	got, act = Trigger(disabled, now)
	require.Equal(t, TriggerEnabled, act)
	require.Equal(t, State{RefreshAt: now, LastError: "HTTP 503"}, got)

	failing := State{RefreshAt: at("2025-06-10T14:00:00Z"), AttemptNo: 3, FailingSince: at("2025-06-10T09:00:00Z")}
	got, act = Trigger(failing, now)
	require.Equal(t, TriggerDue, act)
	require.Equal(t, State{RefreshAt: now, AttemptNo: 3, FailingSince: at("2025-06-10T09:00:00Z")}, got, "counters kept")
}

// succeed is the success transition as Apply takes it, without its error.
func succeed(s State, now time.Time, sched Nexter) State {
	s, _ = success(s, now, sched)
	return s
}
