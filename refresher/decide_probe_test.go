package refresher

import (
	"reflect"
	"testing"
	"time"

	"github.com/refresher/refresher/internal/payload"
	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
)

// TestProbeDecideBatchNoLeak: the dispatcher decides each row of a batch
// as policy.Due decides it alone, though it keeps one decision for the
// batch (dispatcher.dec) and passes the state, decision and policy by
// pointer: no row's decision leaks into the next one, into the attempts it
// keeps to undo (started.state is the row's own BeforeStart) or into the
// ledger, which records each timed-out attempt from the state as claimed.
func TestProbeDecideBatchNoLeak(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	k := Kind{Name: "k", Policy: policy.Policy{Timeout: time.Hour}, ThrottleGroup: "host"}
	hold := now.Add(10 * time.Minute)
	for _, ledgerOn := range []bool{false, true} {
		d := &dispatcher{kindRunner: &kindRunner{cfg: Config{Rand: func() float64 { return 0.5 }}, kind: k, throttle: newThrottle(nil, k)}, schedules: newSchedules(k)}
		d.holds = map[string]time.Time{"held": hold}
		d.entries = newLedgerBatch(k.Name, LedgerConfig{On: ledgerOn})
		d.tally.reset()
		d.entries.reset()
		running := func(uid string, n int) policy.State {
			return policy.State{RefreshAt: now, AttemptUID: uid, AttemptAt: now.Add(-time.Hour), AttemptNo: n, TimeoutAt: now, Status: "s-" + uid}
		}
		claimed := []policy.State{
			running("old0", 1), // times out, retried at once: starts
			{RefreshAt: now.Add(-time.Minute), LastSuccessAt: now.Add(-time.Hour)}, // starts
			{RefreshAt: now.Add(time.Minute)},                                      // waits
			running("old3", 2),                                                     // times out, waits 1m
			{RefreshAt: now.Add(-time.Second), AttemptNo: 4, FailingSince: now.Add(-time.Hour), LastError: "e"},
			running("old5", 1),
			running("old6", 1),                 // held: times out, would start, held instead
			{RefreshAt: now.Add(-time.Minute)}, // held
			{RefreshAt: now.Add(-time.Minute)}, // starts
		}
		heldRow := map[int]bool{6: true, 7: true}
		rows := make([]models.Row, len(claimed))
		for i := range rows {
			rows[i] = models.Row{Key: string(rune('a' + i)), Rule: "FREQ=HOURLY", State: claimed[i]}
			if heldRow[i] {
				rows[i].Payload = payload.Fields{{Name: "host", Value: "held"}}
			}
		}
		pol := k.Policy.WithDefaults()
		for i := range rows {
			d.decide(&rows[i], now, &pol)
		}
		var wantStarts []started
		var wantTimedOut []string
		ref := newSchedules(k)
		for i, s := range claimed {
			sched, err := ref.get(rows[i].Key, rows[i].Rule)
			want, dec := k.Policy.Due(s, now, sched, err, rows[i].State.AttemptUID, 0.5)
			if heldRow[i] {
				want, dec = policy.Held(want, dec, hold, now)
				if dec.Action != policy.DueHeld {
					t.Fatalf("row %d: %s, not held", i, dec.Action)
				}
			}
			if dec.Action == policy.DueStarted {
				wantStarts = append(wantStarts, started{key: rows[i].Key, state: dec.BeforeStart, uid: dec.AttemptUID})
			}
			if dec.TimedOut {
				wantTimedOut = append(wantTimedOut, s.AttemptUID)
			}
			if !reflect.DeepEqual(rows[i].State, want) {
				t.Errorf("ledger %v, row %d: state %+v, want %+v", ledgerOn, i, rows[i].State, want)
			}
		}
		if !reflect.DeepEqual(d.starts, wantStarts) {
			t.Errorf("ledger %v: starts\n %+v\nwant\n %+v", ledgerOn, d.starts, wantStarts)
		}
		if d.tally.held != len(heldRow) {
			t.Errorf("ledger %v: %d held, want %d", ledgerOn, d.tally.held, len(heldRow))
		}
		if d.tally.timeouts != len(wantTimedOut) {
			t.Errorf("ledger %v: %d timeouts counted, want %d", ledgerOn, d.tally.timeouts, len(wantTimedOut))
		}
		if ledgerOn {
			var got []string
			for _, e := range d.entries.entries {
				if i := int(e.Key[0] - 'a'); e.Event == policy.EventThrottleHold && !e.Planned.Equal(claimed[i].RefreshAt) {
					t.Errorf("row %d's hold recorded as planned at %s, claimed at %s", i, e.Planned, claimed[i].RefreshAt)
				}
				if e.Event == policy.EventTimedOut {
					got = append(got, e.Attempt)
				}
			}
			if !reflect.DeepEqual(got, wantTimedOut) {
				t.Errorf("ledger's timed-out attempts %v, want %v (entries %+v)", got, wantTimedOut, d.entries.entries)
			}
		}
	}
}
