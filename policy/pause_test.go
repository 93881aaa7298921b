package policy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPauseResume checks the operator's pause and resume on every kind of
// row: the exact state each leaves.
func TestPauseResume(t *testing.T) {
	now := at("2026-03-04T14:00:00Z")
	daily := dailyAt{hour: 2}
	ended := dailyAt{hour: 2, until: at("2026-03-01T00:00:00Z")}
	idle := State{RefreshAt: at("2026-03-05T02:00:00Z"), LastSuccessAt: at("2026-03-04T02:00:05Z")}
	late := State{RefreshAt: at("2026-03-01T02:00:00Z")} // paused since Mar 1: three runs missed
	running := State{RefreshAt: at("2026-03-04T14:30:00Z"), AttemptUID: "d1v5bqh6n88c73890001", AttemptNo: 1,
		AttemptAt: at("2026-03-04T13:30:00Z"), TimeoutAt: at("2026-03-04T14:30:00Z")}
	failing := State{RefreshAt: at("2026-03-04T14:05:00Z"), AttemptNo: 2, FailingSince: at("2026-03-04T09:00:00Z"), LastError: "HTTP 503"}
	disabled := State{DisabledAt: at("2026-03-04T09:00:00Z"), DisabledReason: "Provided URL is invalid", AttemptNo: 1}

	without := func(s State) State { s.RefreshAt = time.Time{}; return s }
	with := func(s State, r time.Time) State { s.RefreshAt = r; return s }
	for _, c := range []struct {
		name   string
		in     State
		sched  Nexter
		paused State
		resume State
	}{
		{"idle", idle, daily, without(idle), with(idle, at("2026-03-05T02:00:00Z"))},
		{"missed runs: one next occurrence, none fired", late, daily, without(late), with(late, at("2026-03-05T02:00:00Z"))},
		{"running: due at its timeout", running, daily, without(running), running},
		{"failing: next occurrence, counters kept", failing, daily, without(failing), with(failing, at("2026-03-05T02:00:00Z"))},
		{"disabled stays disabled", disabled, daily, disabled, disabled},
		{"rule ended: nothing planned", idle, ended, without(idle), without(idle)},
		{"no schedule: due now, to be disabled by the dispatcher", idle, nil, without(idle), with(idle, now)},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := Pause(c.in)
			require.Equal(t, c.paused, p, "Pause")
			require.Equal(t, p, Pause(p), "Pause is idempotent")
			require.Equal(t, c.resume, Resume(p, now, c.sched), "Resume")
		})
	}
}
