package policy

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDue(t *testing.T) {
	t.Parallel()

	p := Policy{Kind: "feeds", Timeout: time.Hour} // default retry: 0s, 1m, 5m, ...
	sched := dailyAt{hour: 14}
	now := at("2025-06-10T12:00:00Z")
	const uid = "d1new000000000000000"
	const old = "d0attempt00000000000"
	badRule := errors.New(`RRULE: unknown FREQ "SOMETIMES"`)

	// running is a row whose attempt n started at 11:00 and times out at
	// 12:00 (now).
	running := func(n int) State {
		return State{RefreshAt: now, AttemptUID: old, AttemptAt: at("2025-06-10T11:00:00Z"), AttemptNo: n,
			TimeoutAt: now, Status: "importing 40%", LastSuccessAt: at("2025-06-09T14:00:00Z")}
	}
	tests := []struct {
		name     string
		in       State
		sched    Nexter
		schedErr error
		want     State
		wantDec  DueDecision
	}{
		{
			name:  "idle and due: starts",
			in:    State{RefreshAt: now.Add(-time.Minute), Status: "fetched 10 bytes", LastSuccessAt: at("2025-06-09T14:00:00Z")},
			sched: sched,
			want:  State{RefreshAt: at("2025-06-10T13:00:00Z"), AttemptUID: uid, AttemptAt: now, AttemptNo: 1, TimeoutAt: at("2025-06-10T13:00:00Z"), LastSuccessAt: at("2025-06-09T14:00:00Z")},
			wantDec: DueDecision{Action: DueStarted, AttemptUID: uid,
				BeforeStart: State{RefreshAt: now.Add(-time.Minute), Status: "fetched 10 bytes", LastSuccessAt: at("2025-06-09T14:00:00Z")}},
		},
		{
			name:    "due exactly now: starts",
			in:      State{RefreshAt: now},
			sched:   sched,
			want:    State{RefreshAt: at("2025-06-10T13:00:00Z"), AttemptUID: uid, AttemptAt: now, AttemptNo: 1, TimeoutAt: at("2025-06-10T13:00:00Z")},
			wantDec: DueDecision{Action: DueStarted, AttemptUID: uid, BeforeStart: State{RefreshAt: now}},
		},
		{
			name:    "not due yet: left alone",
			in:      State{RefreshAt: now.Add(time.Microsecond)},
			sched:   sched,
			want:    State{RefreshAt: now.Add(time.Microsecond)},
			wantDec: DueDecision{Action: DueWaiting},
		},
		{
			name:    "nothing planned: left alone",
			in:      State{LastError: "x"},
			sched:   sched,
			want:    State{LastError: "x"},
			wantDec: DueDecision{Action: DueWaiting},
		},
		{
			name:    "disabled row with refresh_at set: refresh_at cleared",
			in:      State{RefreshAt: now, DisabledAt: at("2025-06-01T00:00:00Z"), DisabledReason: "bad URL"},
			sched:   sched,
			want:    State{DisabledAt: at("2025-06-01T00:00:00Z"), DisabledReason: "bad URL"},
			wantDec: DueDecision{Action: DueDisabledRow},
		},
		{
			name:     "disabled row with an invalid rule: stays disabled as it was",
			in:       State{RefreshAt: now, DisabledAt: at("2025-06-01T00:00:00Z"), DisabledReason: "bad URL"},
			schedErr: badRule,
			want:     State{DisabledAt: at("2025-06-01T00:00:00Z"), DisabledReason: "bad URL"},
			wantDec:  DueDecision{Action: DueDisabledRow},
		},
		{
			name:     "invalid rule: disabled, the parser's message in last_error",
			in:       State{RefreshAt: now, AttemptNo: 2},
			schedErr: badRule,
			want: State{AttemptNo: 2, DisabledAt: now,
				DisabledReason: `Invalid refresh schedule: RRULE: unknown FREQ "SOMETIMES"`,
				LastError:      `Invalid refresh schedule: RRULE: unknown FREQ "SOMETIMES"`},
			wantDec: DueDecision{Action: DueInvalidSchedule, ScheduleError: `RRULE: unknown FREQ "SOMETIMES"`},
		},
		{
			name: "empty rule: disabled",
			in:   State{RefreshAt: now},
			want: State{DisabledAt: now, DisabledReason: "Invalid refresh schedule: empty rule",
				LastError: "Invalid refresh schedule: empty rule"},
			wantDec: DueDecision{Action: DueInvalidSchedule, ScheduleError: "empty rule"},
		},
		{
			name:  "running attempt 1 timed out, retry at once: timed out then started",
			in:    running(1),
			sched: sched,
			want: State{RefreshAt: at("2025-06-10T13:00:00Z"), AttemptUID: uid, AttemptAt: now, AttemptNo: 2,
				TimeoutAt: at("2025-06-10T13:00:00Z"), FailingSince: at("2025-06-10T11:00:00Z"),
				LastSuccessAt: at("2025-06-09T14:00:00Z"), LastError: "timed out after 1h"},
			wantDec: DueDecision{Action: DueStarted, AttemptUID: uid, TimedOut: true, Timeout: Decision{
				Branch: BranchRetry, RetryAt: now, PlannedAt: at("2025-06-10T14:00:00Z"), RefreshAt: now,
				Reason: "retry after 0s ends (timeout 1h) by the planned 2025-06-10T14:00:00Z"},
				BeforeStart: State{RefreshAt: now, AttemptAt: at("2025-06-10T11:00:00Z"), AttemptNo: 1,
					FailingSince: at("2025-06-10T11:00:00Z"), LastSuccessAt: at("2025-06-09T14:00:00Z"), LastError: "timed out after 1h"}},
		},
		{
			name:  "running attempt 2 timed out, retry in 1m: waits",
			in:    running(2),
			sched: sched,
			want: State{RefreshAt: at("2025-06-10T12:01:00Z"), AttemptAt: at("2025-06-10T11:00:00Z"), AttemptNo: 2,
				FailingSince: at("2025-06-10T11:00:00Z"), LastSuccessAt: at("2025-06-09T14:00:00Z"), LastError: "timed out after 1h"},
			wantDec: DueDecision{Action: DueWaiting, TimedOut: true, Timeout: Decision{
				Branch: BranchRetry, Backoff: Backoff{Min: time.Minute, Max: time.Minute}, Delay: time.Minute,
				RetryAt: at("2025-06-10T12:01:00Z"), PlannedAt: at("2025-06-10T14:00:00Z"), RefreshAt: at("2025-06-10T12:01:00Z"),
				Reason: "retry after 1m ends (timeout 1h) by the planned 2025-06-10T14:00:00Z"}},
		},
		{
			name:  "running attempt 7 timed out: the retry policy gives up",
			in:    running(7),
			sched: sched,
			want: State{AttemptAt: at("2025-06-10T11:00:00Z"), AttemptNo: 7, DisabledAt: now,
				DisabledReason: "Cannot refresh feeds after 7 attempt(s)", FailingSince: at("2025-06-10T11:00:00Z"),
				LastSuccessAt: at("2025-06-09T14:00:00Z"), LastError: "timed out after 1h"},
			wantDec: DueDecision{Action: DueWaiting, TimedOut: true, Timeout: Decision{
				Branch: BranchDisabled, GaveUp: true, Reason: "Cannot refresh feeds after 7 attempt(s)"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, dec := p.Due(tt.in, now, tt.sched, tt.schedErr, uid, 0)
			require.Equal(t, tt.want, got)
			require.Equal(t, tt.wantDec, dec)
		})
	}
}

// DueInPlace skips WithDefaults only for a policy it would not change:
// hasDefaults agrees with WithDefaults on policies with each defaulted
// field unset in turn, and DueInPlace decides as Due under each.
func TestDueInPlaceDefaults(t *testing.T) {
	full := Policy{Kind: "k"}.WithDefaults()
	cases := []Policy{{}, full}
	for i := range 11 {
		p := full
		switch i {
		case 0:
			p.Kind = ""
		case 1:
			p.Timeout = 0
		case 2:
			p.MaxTimeout = 0
		case 3:
			p.Retry = nil
		case 4:
			p.DisabledReason = ""
		case 5:
			p.PermanentReason = ""
		case 6:
			p.MaxRetryAfter = 0
		case 7:
			p.Guard.Threshold = 0
		case 8:
			p.Guard.MinResults = 0
		case 9:
			p.Guard.Window = 0
		case 10:
			p.Guard.Retry = 0
		}
		cases = append(cases, p)
	}
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	sched := &fixedNext{now.Add(time.Hour)}
	for i, p := range cases {
		if got, want := p.hasDefaults(), reflect.DeepEqual(p, p.WithDefaults()); got != want {
			t.Errorf("case %d: hasDefaults %v, but WithDefaults changes it: %v", i, got, !want)
		}
		for _, s := range []State{
			{RefreshAt: now.Add(-time.Second)},
			{RefreshAt: now.Add(-time.Second), AttemptUID: "old", TimeoutAt: now.Add(-time.Second), AttemptNo: 2},
			{RefreshAt: now.Add(time.Second)},
		} {
			wantS, wantD := p.WithDefaults().Due(s, now, sched, nil, "uid", 0.5)
			gotS, gotD := s, DueDecision{Action: "stale", AttemptUID: "stale"}
			p.DueInPlace(&gotS, now, sched, nil, "uid", 0.5, &gotD)
			if !reflect.DeepEqual(gotS, wantS) || !reflect.DeepEqual(gotD, wantD) {
				t.Errorf("case %d, %+v: DueInPlace gave %+v %+v, Due %+v %+v", i, s, gotS, gotD, wantS, wantD)
			}
		}
	}
}
