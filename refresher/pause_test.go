package refresher

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
)

// The operator's pause in a running service: a paused model's running
// attempt still applies its result, and the run that result plans is not
// dispatched (the dispatcher pauses the row again); a paused kind is not
// dispatched at all until resumed; resuming a model plans its next
// occurrence.
func TestPausedModelAndKindAreNotDispatched(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, setupOpts{timeout: time.Hour})
	b.insert("m1", "m2")
	b.start(nil)
	jobs := map[string]redisio.Job{}
	for range 2 {
		j := b.popJob()
		jobs[j.UID] = j
	}

	changes, err := NewAdmin(b.store, b.rio).Pause(ctx, b.kind.Table, b.kind.Lists, []string{"m1"}, PauseInfo{Note: "upstream down", By: "ops", At: t0})
	require.NoError(t, err)
	require.True(t, changes[0].Found)
	require.True(t, b.state("m1").RefreshAt.IsZero(), "paused: nothing planned")

	// The running attempt's result applies and plans 14:00 ...
	b.clock.Advance(time.Minute)
	for _, uid := range []string{"m1", "m2"} {
		b.send(redisio.Result{UID: uid, AttemptUID: jobs[uid].AttemptUID, Type: "success"})
		b.waitFor(uid, "success applied", func(s policy.State) bool { return !s.Running() })
	}
	at14 := time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)
	require.True(t, b.state("m1").RefreshAt.Equal(at14))
	require.False(t, b.state("m1").LastSuccessAt.IsZero())

	// ... which is not dispatched: at 14:00 only m2 starts, m1 is paused again.
	b.clock.Advance(at14.Sub(b.clock.Now()))
	j := b.popJob()
	require.Equal(t, "m2", j.UID)
	b.waitFor("m1", "paused again by the dispatcher", func(s policy.State) bool { return s.RefreshAt.IsZero() })
	b.noJob()

	// The kind: paused, nothing is dispatched even when due.
	b.send(redisio.Result{UID: "m2", AttemptUID: j.AttemptUID, Type: "success"})
	b.waitFor("m2", "success applied", func(s policy.State) bool { return !s.Running() })
	require.NoError(t, NewAdmin(b.store, b.rio).PauseKind(ctx, b.kind.Lists, PauseInfo{Note: "incident", By: "ops"}))
	b.passes.wait(t, 1)
	b.clock.Advance(24 * time.Hour)
	b.noJob()
	require.True(t, b.state("m2").RefreshAt.Equal(at14.Add(24*time.Hour)), "still due, not started")

	// Resumed, the kind dispatches m2 once; m1 stays paused until resumed,
	// then waits for its next occurrence: the runs it missed are not fired.
	was, err := NewAdmin(b.store, b.rio).ResumeKind(ctx, b.kind.Lists)
	require.NoError(t, err)
	require.True(t, was)
	require.Equal(t, "m2", b.popJob().UID)
	b.noJob()
	changes, err = NewAdmin(b.store, b.rio).Resume(ctx, b.kind.Table, b.kind.Lists, []string{"m1"}, b.clock.Now(),
		ResumeSchedules(b.kind.Name, b.kind.Schedule, b.kind.Policy.Spread))
	require.NoError(t, err)
	require.Equal(t, "resumed; next refresh at 2026-11-23T14:00:00Z", changes[0].Note)
	require.True(t, b.state("m1").RefreshAt.Equal(at14.Add(48*time.Hour)))
	b.noJob()
}
