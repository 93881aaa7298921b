package policy

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/schedule"
)

// TestSpreadOffsetPinned pins offsets computed outside Go (FNV-1a 64 of
// kind, NUL, key, modulo the window's seconds): a change of the hash, its
// input or its resolution would move every row of every deployment, which
// the offset must never do across versions, restarts or instances.
func TestSpreadOffsetPinned(t *testing.T) {
	t.Parallel()
	tests := []struct {
		kind, key string
		window    time.Duration
		want      time.Duration
	}{
		{"feeds", "42", 10 * time.Minute, 540 * time.Second},
		{"feeds", "43", 10 * time.Minute, 151 * time.Second},
		{"model", "d0uid", time.Hour, 2952 * time.Second},
		{"big_tables", "1", 24 * time.Hour, 70660 * time.Second},
		// Sub-second parts of the window are ignored; windows under 2s
		// leave a single offset, 0.
		{"feeds", "42", 10*time.Minute + 999*time.Millisecond, 540 * time.Second},
		{"feeds", "42", time.Second, 0},
		{"feeds", "42", 999 * time.Millisecond, 0},
		{"feeds", "42", 0, 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%s/%s", tt.kind, tt.key, tt.window), func(t *testing.T) {
			require.Equal(t, tt.want, SpreadOffset(tt.kind, tt.key, tt.window))
		})
	}
}

// TestSpreadOffsetProperty: for random kinds, keys and windows the offset
// is a whole number of seconds in [0, window), the same when computed
// again, and the offsets of many keys cover the window rather than a few
// points of it.
func TestSpreadOffsetProperty(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(14, 2))
	for range 20_000 {
		kind := fmt.Sprintf("kind%d", rng.IntN(5))
		key := fmt.Sprintf("%x", rng.Uint64()>>rng.IntN(64))
		window := time.Duration(1+rng.Int64N(int64(48*time.Hour))) * time.Duration(1+rng.IntN(2))
		off := SpreadOffset(kind, key, window)
		require.GreaterOrEqual(t, off, time.Duration(0), "%s %s %s", kind, key, window)
		require.Less(t, off, max(window, time.Nanosecond), "%s %s %s", kind, key, window)
		require.Zero(t, off%time.Second, "%s %s %s", kind, key, window)
		require.Equal(t, off, SpreadOffset(kind, key, window), "stable")
	}
	seen := map[time.Duration]bool{}
	for i := range 10_000 {
		seen[SpreadOffset("feeds", fmt.Sprint(i), 10*time.Minute)] = true
	}
	require.Greater(t, len(seen), 590, "10000 keys over 600 one-second slots")
}

func TestSpreadOffsetOwnRules(t *testing.T) {
	t.Parallel()
	s := Spread{Window: 10 * time.Minute}
	require.Equal(t, 540*time.Second, s.Offset("feeds", "42", false))
	require.Equal(t, 540*time.Second, s.Offset("feeds", "42", true), "own rules are spread by default")
	s.SkipOwnRules = true
	require.Equal(t, 540*time.Second, s.Offset("feeds", "42", false))
	require.Zero(t, s.Offset("feeds", "42", true), "spread_own_rules: false")
	require.Zero(t, Spread{}.Offset("feeds", "42", false), "no window, no spread")
}

func mustParse(t testing.TB, text string) *schedule.Schedule {
	t.Helper()
	s, err := schedule.Parse(text)
	require.NoError(t, err)
	return s
}

// TestSpreaded: the spread occurrences are the rule's plus the offset,
// including on the DST days of a real zone.
func TestSpreaded(t *testing.T) {
	t.Parallel()
	daily14 := Spreaded(dailyAt{hour: 14}, 7*time.Minute)
	// Daily at 02:30 in Berlin: on 2026-03-29 clocks spring forward from
	// 02:00 CET to 03:00 CEST, so 02:30 does not exist and the rule runs at
	// 03:30 CEST (01:30Z, RFC 5545); on 2026-10-25 they fall back from
	// 03:00 CEST to 02:00 CET, so 02:30 occurs twice and the rule means the
	// first (CEST, 00:30Z).
	berlin := Spreaded(mustParse(t, "DTSTART;TZID=Europe/Berlin:20260101T023000\nRRULE:FREQ=DAILY"), 7*time.Minute)
	ended := Spreaded(dailyAt{hour: 14, until: at("2025-06-11T14:00:00Z")}, 7*time.Minute)
	tests := []struct {
		name  string
		sched Nexter
		after string
		want  string // "" for the zero time
	}{
		{"before the day's occurrence", daily14, "2025-06-10T12:00:00Z", "2025-06-10T14:07:00Z"},
		{"between the rule's 14:00 and the spread 14:07", daily14, "2025-06-10T14:03:00Z", "2025-06-10T14:07:00Z"},
		{"just before the spread occurrence", daily14, "2025-06-10T14:06:59.999999999Z", "2025-06-10T14:07:00Z"},
		{"at the spread occurrence: strictly after", daily14, "2025-06-10T14:07:00Z", "2025-06-11T14:07:00Z"},
		{"the rule's last occurrence, spread", ended, "2025-06-11T14:00:00Z", "2025-06-11T14:07:00Z"},
		{"after the rule's last occurrence", ended, "2025-06-11T14:07:00Z", ""},
		{"Berlin, the day before spring forward (CET)", berlin, "2026-03-28T00:00:00Z", "2026-03-28T01:37:00Z"},
		{"Berlin, spring forward: 03:30 CEST + 7m", berlin, "2026-03-28T01:37:00Z", "2026-03-29T01:37:00Z"},
		{"Berlin, spring forward, after the rule's 01:30Z", berlin, "2026-03-29T01:32:00Z", "2026-03-29T01:37:00Z"},
		{"Berlin, the day after (CEST)", berlin, "2026-03-29T01:37:00Z", "2026-03-30T00:37:00Z"},
		{"Berlin, fall back: the first 02:30 (CEST) + 7m", berlin, "2026-10-24T12:00:00Z", "2026-10-25T00:37:00Z"},
		{"Berlin, the day after fall back (CET)", berlin, "2026-10-25T00:37:00Z", "2026-10-26T01:37:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := time.Time{}
			if tt.want != "" {
				want = at(tt.want)
			}
			got := tt.sched.Next(at(tt.after))
			require.True(t, want.Equal(got), "want %s, got %s", want, got)
		})
	}
	base := dailyAt{hour: 14}
	require.Equal(t, Nexter(base), Spreaded(base, 0), "a zero offset is the rule itself")
}

// TestSpreadAlignment: success, retries and their alignment use the spread
// occurrences (the shell hands Due and Apply the spread schedule).
func TestSpreadAlignment(t *testing.T) {
	t.Parallel()
	p := Policy{Kind: "feeds", Timeout: time.Hour}
	sched := Spreaded(dailyAt{hour: 14}, 540*time.Second) // feeds/42 in a 10m window
	now := at("2025-06-10T12:00:00Z")
	running := State{AttemptUID: "a", AttemptAt: now, AttemptNo: 5, TimeoutAt: now.Add(time.Hour), RefreshAt: now.Add(time.Hour)}

	require.Equal(t, at("2025-06-10T14:09:00Z"), succeed(running, now, sched).RefreshAt)

	// Attempt 5 fails at 13:05: the 30m retry at 13:35 would still run
	// (timeout 1h) at 14:09, the planned spread occurrence, which serves as
	// the retry.
	_, d := p.Failure(running, at("2025-06-10T13:05:00Z"), Failure{Reason: "boom"}, sched, 0)
	require.Equal(t, BranchPlanned, d.Branch)
	require.Equal(t, at("2025-06-10T14:09:00Z"), d.PlannedAt)
	require.Equal(t, at("2025-06-10T14:09:00Z"), d.RefreshAt)
	// At 13:08 the retry at 13:38 ends at 14:38, after 14:09: planned too.
	// At 12:38, the retry at 13:08 ends at 14:08, before 14:09: it runs.
	_, d = p.Failure(running, at("2025-06-10T12:38:00Z"), Failure{Reason: "boom"}, sched, 0)
	require.Equal(t, BranchRetry, d.Branch)
	require.Equal(t, at("2025-06-10T13:08:00Z"), d.RefreshAt)
	// Without the spread the same failure would wait for 14:00.
	_, d = p.Failure(running, at("2025-06-10T12:38:00Z"), Failure{Reason: "boom"}, dailyAt{hour: 14}, 0)
	require.Equal(t, BranchPlanned, d.Branch)

	// A Retry-After floor is compared with the spread occurrence: 90m from
	// 12:39 is 14:09, exactly the spread occurrence, which serves.
	_, d = p.Failure(running, at("2025-06-10T12:39:00Z"), Failure{Reason: "429", RetryAfter: 90 * time.Minute}, sched, 0)
	require.Equal(t, at("2025-06-10T14:09:00Z"), d.PlannedAt)
	require.Equal(t, BranchPlanned, d.Branch)
}

// The inline hash is hash/fnv's FNV-1a of kind, NUL, key.
// Not parallel: AllocsPerRun refuses parallel tests.
func TestSpreadOffsetIsFNV1a(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 4))
	for range 1000 {
		kind, key := fmt.Sprint(rng.Uint64()), fmt.Sprintf("k%x\x00é", rng.Uint64())
		h := fnv.New64a()
		h.Write([]byte(kind + "\x00" + key))
		require.Equal(t, time.Duration(h.Sum64()%3600)*time.Second, SpreadOffset(kind, key, time.Hour))
	}
	require.Zero(t, testing.AllocsPerRun(100, func() { SpreadOffset("feeds", "d0uid", time.Hour) }))
}
