package policy

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

// dueBefore is Due as it was before DueInPlace (fe28ee8), the reference
// DueInPlace must agree with.
func dueBefore(p Policy, s State, now time.Time, sched Nexter, schedErr error, uid string, u float64) (State, DueDecision) {
	p = p.WithDefaults()
	if s.RefreshAt.IsZero() || s.RefreshAt.After(now) {
		return s, DueDecision{Action: DueWaiting}
	}
	if s.Disabled() {
		s.RefreshAt = time.Time{}
		return s, DueDecision{Action: DueDisabledRow}
	}
	if schedErr != nil || sched == nil {
		s = DisableInvalidSchedule(s, now, schedErr)
		d := DueDecision{Action: DueInvalidSchedule, ScheduleError: "empty rule"}
		if schedErr != nil {
			d.ScheduleError = schedErr.Error()
		}
		return s, d
	}
	var d DueDecision
	if m, ok := p.Catchup.Misfired(s, now); ok {
		d.Misfire, d.MissedSince = m, s.RefreshAt
		if m == MisfireSkip {
			var err error
			if s, err = planNext(s, now, sched); err != nil {
				d.Action, d.ScheduleError = DueInvalidSchedule, err.Error()
				return s, d
			}
			d.Action = DueMisfireSkipped
			return s, d
		}
	}
	if s.Running() {
		d.TimedOut = true
		s, d.Timeout = p.TimedOut(s, now, sched, u)
	}
	if s.RefreshAt.IsZero() || s.RefreshAt.After(now) || s.Disabled() {
		d.Action = DueWaiting
		return s, d
	}
	d.BeforeStart = s
	s = p.start(s, now, uid)
	d.Action, d.AttemptUID = DueStarted, uid
	return s, d
}

// TestProbeDueInPlaceAsBefore: DueInPlace, run over a batch as the
// dispatcher runs it (one decision value reused row after row, one policy
// pointer for the batch), decides every row as Due did before it, under
// policies with and without their defaults, own retry rules, incidents
// and catchup windows, for idle, running, timed-out, disabled, failing,
// misfired rows and rules that are invalid, empty or ended.
func TestProbeDueInPlaceAsBefore(t *testing.T) {
	now := at("2025-06-10T12:00:00Z")
	own, err := ParseRetry("delays:1m,2m,3m")
	if err != nil {
		t.Fatal(err)
	}
	full := Policy{Kind: "k"}.WithDefaults()
	pols := []Policy{
		{}, full, {Kind: "k", Timeout: time.Hour}, {Timeout: 2 * time.Minute, MaxTimeout: time.Minute},
		{Retry: own}, {Retry: own, Incident: true}, {Incident: true, Guard: Guard{Retry: 7 * time.Minute}},
		{Catchup: Catchup{Window: time.Minute}}, {Catchup: Catchup{Window: time.Minute, Misfire: MisfireRunOnce}},
		{MaxRetryAfter: time.Second, DisabledReason: "off", PermanentReason: "perm"},
	}
	for _, p := range append([]Policy(nil), pols...) {
		q := p.WithDefaults()
		q.Retry = own
		pols = append(pols, q)
		q.Incident = true
		pols = append(pols, q)
	}
	states := []State{
		{},
		{RefreshAt: now.Add(time.Second)},
		{RefreshAt: now},
		{RefreshAt: now.Add(-time.Hour), LastSuccessAt: now.Add(-25 * time.Hour), Status: "s"},
		{RefreshAt: now.Add(-time.Second), DisabledAt: now.Add(-time.Hour), DisabledReason: "x"},
		{RefreshAt: now, AttemptUID: "old", AttemptAt: now.Add(-time.Hour), AttemptNo: 1, TimeoutAt: now, Status: "40%"},
		{RefreshAt: now, AttemptUID: "old", AttemptAt: now.Add(-time.Hour), AttemptNo: 9, TimeoutAt: now, FailingSince: now.Add(-72 * time.Hour)},
		{RefreshAt: now.Add(-3 * time.Hour), AttemptUID: "old", AttemptAt: now.Add(-4 * time.Hour), AttemptNo: 2, TimeoutAt: now.Add(-3 * time.Hour)},
		{RefreshAt: now.Add(-time.Minute), AttemptNo: 3, FailingSince: now.Add(-time.Hour), LastError: "boom"},
	}
	type sc struct {
		sched Nexter
		err   error
	}
	scheds := []sc{
		{dailyAt{hour: 14}, nil}, {dailyAt{hour: 11, minute: 59}, nil},
		{dailyAt{hour: 14, until: now.Add(-time.Hour)}, nil}, {nil, nil}, {nil, errors.New("bad rule")},
	}
	var d DueDecision // reused row after row, as the dispatcher's
	n := 0
	for pi := range pols {
		pol := pols[pi].WithDefaults() // the dispatcher's: defaults set, by pointer
		for _, raw := range []*Policy{&pols[pi], &pol} {
			for _, s := range states {
				for _, c := range scheds {
					for _, u := range []float64{0, 0.5, 0.99} {
						wantS, wantD := dueBefore(pols[pi], s, now, c.sched, c.err, "uid", u)
						gotS := s
						raw.DueInPlace(&gotS, now, c.sched, c.err, "uid", u, &d)
						n++
						if !reflect.DeepEqual(gotS, wantS) || !reflect.DeepEqual(d, wantD) {
							t.Fatalf("policy %d %+v, state %+v, sched %+v, u %v:\n got %+v\n     %+v\nwant %+v\n     %+v", pi, *raw, s, c, u, gotS, d, wantS, wantD)
						}
						// Due too, under the policy as given.
						if gs, gd := pols[pi].Due(s, now, c.sched, c.err, "uid", u); !reflect.DeepEqual(gs, wantS) || !reflect.DeepEqual(gd, wantD) {
							t.Fatalf("Due: policy %d, state %+v: got %+v %+v, want %+v %+v", pi, s, gs, gd, wantS, wantD)
						}
					}
				}
			}
		}
		if !reflect.DeepEqual(pol, pols[pi].WithDefaults()) {
			t.Fatalf("policy %d changed by DueInPlace: %+v", pi, pol)
		}
	}
	t.Logf("%d decisions compared", n)
}
