package policy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDueMisfire: Due with a catchup window, after a downtime.
func TestDueMisfire(t *testing.T) {
	t.Parallel()

	skip := Policy{Kind: "feeds", Timeout: time.Hour, Catchup: Catchup{Window: time.Hour}}
	runOnce := skip
	runOnce.Catchup.Misfire = MisfireRunOnce
	unlimited := Policy{Kind: "feeds", Timeout: time.Hour}
	sched := dailyAt{hour: 14}
	// The service was down from June 7 to June 10 at 16:00: the occurrences
	// of the 7th, 8th, 9th and 10th were missed.
	now := at("2025-06-10T16:00:00Z")
	const uid = "d1new000000000000000"
	missed := at("2025-06-07T14:00:00Z")
	idle := State{RefreshAt: missed, LastSuccessAt: at("2025-06-06T14:00:00Z"), Status: "fetched 3 rows"}
	started := State{RefreshAt: now.Add(time.Hour), AttemptUID: uid, AttemptAt: now, AttemptNo: 1, TimeoutAt: now.Add(time.Hour),
		LastSuccessAt: at("2025-06-06T14:00:00Z")}
	// failing missed its retry (attempt 3 failed, the retry was at 12:05
	// on the 7th).
	failing := State{RefreshAt: at("2025-06-07T12:05:00Z"), AttemptAt: at("2025-06-07T12:00:00Z"), AttemptNo: 3,
		FailingSince: at("2025-06-07T11:00:00Z"), LastError: "boom"}

	tests := []struct {
		name    string
		p       Policy
		in      State
		sched   Nexter
		now     time.Time
		want    State
		wantDec DueDecision
	}{
		{
			name: "skip: missed 4 occurrences, moves to the next one, none run",
			p:    skip, in: idle, sched: sched, now: now,
			want:    State{RefreshAt: at("2025-06-11T14:00:00Z"), LastSuccessAt: at("2025-06-06T14:00:00Z"), Status: "fetched 3 rows"},
			wantDec: DueDecision{Action: DueMisfireSkipped, Misfire: MisfireSkip, MissedSince: missed},
		},
		{
			name: "run_once: starts once now",
			p:    runOnce, in: idle, sched: sched, now: now,
			want:    started,
			wantDec: DueDecision{Action: DueStarted, AttemptUID: uid, BeforeStart: idle, Misfire: MisfireRunOnce, MissedSince: missed},
		},
		{
			name: "unlimited window (the default): starts once now, no misfire",
			p:    unlimited, in: idle, sched: sched, now: now,
			want:    started,
			wantDec: DueDecision{Action: DueStarted, AttemptUID: uid, BeforeStart: idle},
		},
		{
			name: "due for exactly the window: starts",
			p:    skip, in: State{RefreshAt: at("2025-06-10T14:00:00Z")}, sched: sched, now: at("2025-06-10T15:00:00Z"),
			want: State{RefreshAt: at("2025-06-10T16:00:00Z"), AttemptUID: uid, AttemptAt: at("2025-06-10T15:00:00Z"), AttemptNo: 1,
				TimeoutAt: at("2025-06-10T16:00:00Z")},
			wantDec: DueDecision{Action: DueStarted, AttemptUID: uid, BeforeStart: State{RefreshAt: at("2025-06-10T14:00:00Z")}},
		},
		{
			name: "due for the window and 1µs: skipped to tomorrow",
			p:    skip, in: State{RefreshAt: at("2025-06-10T14:00:00Z")}, sched: sched, now: at("2025-06-10T15:00:00.000001Z"),
			want:    State{RefreshAt: at("2025-06-11T14:00:00Z")},
			wantDec: DueDecision{Action: DueMisfireSkipped, Misfire: MisfireSkip, MissedSince: at("2025-06-10T14:00:00Z")},
		},
		{
			name: "skip a missed retry: the failing run and attempt count are kept",
			p:    skip, in: failing, sched: sched, now: now,
			want: State{RefreshAt: at("2025-06-11T14:00:00Z"), AttemptAt: at("2025-06-07T12:00:00Z"), AttemptNo: 3,
				FailingSince: at("2025-06-07T11:00:00Z"), LastError: "boom"},
			wantDec: DueDecision{Action: DueMisfireSkipped, Misfire: MisfireSkip, MissedSince: at("2025-06-07T12:05:00Z")},
		},
		{
			name: "skip when the rule has no occurrence left: nothing planned",
			p:    skip, in: idle, sched: dailyAt{hour: 14, until: at("2025-06-09T14:00:00Z")}, now: now,
			want:    State{LastSuccessAt: at("2025-06-06T14:00:00Z"), Status: "fetched 3 rows"},
			wantDec: DueDecision{Action: DueMisfireSkipped, Misfire: MisfireSkip, MissedSince: missed},
		},
		{
			name: "skip with a spread schedule: the next spread occurrence",
			p:    skip, in: idle, sched: Spreaded(sched, 540*time.Second), now: now,
			want:    State{RefreshAt: at("2025-06-11T14:09:00Z"), LastSuccessAt: at("2025-06-06T14:00:00Z"), Status: "fetched 3 rows"},
			wantDec: DueDecision{Action: DueMisfireSkipped, Misfire: MisfireSkip, MissedSince: missed},
		},
		{
			name: "a running attempt's timeout long past is no misfire: it times out and retries at once",
			p:    skip,
			in: State{RefreshAt: at("2025-06-07T13:00:00Z"), AttemptUID: "old", AttemptAt: at("2025-06-07T12:00:00Z"), AttemptNo: 1,
				TimeoutAt: at("2025-06-07T13:00:00Z")},
			sched: sched, now: now,
			want: State{RefreshAt: now.Add(time.Hour), AttemptUID: uid, AttemptAt: now, AttemptNo: 2, TimeoutAt: now.Add(time.Hour),
				FailingSince: at("2025-06-07T12:00:00Z"), LastError: "timed out after 1h"},
			wantDec: DueDecision{Action: DueStarted, AttemptUID: uid, TimedOut: true,
				Timeout: Decision{Branch: BranchRetry, RetryAt: now, PlannedAt: at("2025-06-11T14:00:00Z"), RefreshAt: now,
					Reason: "retry after 0s ends (timeout 1h) by the planned 2025-06-11T14:00:00Z"},
				BeforeStart: State{RefreshAt: now, AttemptAt: at("2025-06-07T12:00:00Z"), AttemptNo: 1,
					FailingSince: at("2025-06-07T12:00:00Z"), LastError: "timed out after 1h"}},
		},
		{
			name: "a disabled row never misfires",
			p:    skip, in: State{RefreshAt: missed, DisabledAt: missed, DisabledReason: "bad"}, sched: sched, now: now,
			want:    State{DisabledAt: missed, DisabledReason: "bad"},
			wantDec: DueDecision{Action: DueDisabledRow},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, dec := tt.p.Due(tt.in, tt.now, tt.sched, nil, uid, 0)
			require.Equal(t, tt.want, got)
			require.Equal(t, tt.wantDec, dec)
		})
	}
}

func TestParseMisfire(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Misfire{"": MisfireSkip, "skip": MisfireSkip, "run_once": MisfireRunOnce} {
		got, err := ParseMisfire(in)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	_, err := ParseMisfire("catch_up")
	require.EqualError(t, err, `"catch_up" is not a misfire setting (use skip, the default, or run_once)`)
	require.EqualError(t, Policy{Catchup: Catchup{Window: -time.Second}}.Validate(),
		"catchup window cannot be negative (got -1s; leave it out for unlimited)")
	require.EqualError(t, Policy{Catchup: Catchup{Misfire: "later"}}.Validate(),
		`misfire: "later" is not a misfire setting (use skip, the default, or run_once)`)
}
