package refresher

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
)

// The whole life of a model: due -> job with the right payload -> success ->
// refresh_at is the next occurrence and the counters are reset.
func TestModelLifecycle(t *testing.T) {
	t.Parallel()
	forEachStore(t, allStores, func(t *testing.T, store string) {
		b := setup(t, setupOpts{store: store, timeout: time.Hour})
		b.insert("m1")
		b.start(nil)

		job := b.popJob()
		require.Equal(t, "items", job.Kind)
		require.Equal(t, "m1", job.UID)
		require.Len(t, job.AttemptUID, 20)
		require.Equal(t, 1, job.AttemptNo)
		require.True(t, job.TimeoutAt.Equal(t0.Add(time.Hour)), "timeout_at %s", job.TimeoutAt)
		require.Equal(t, map[string]any{"input_url": "https://example.com/m1"}, job.Payload)

		st := b.state("m1")
		require.Equal(t, job.AttemptUID, st.AttemptUID)
		require.Equal(t, 1, st.AttemptNo)
		require.True(t, st.AttemptAt.Equal(t0))
		require.True(t, st.RefreshAt.Equal(t0.Add(time.Hour)), "refresh_at is the timeout while running")

		b.send(redisio.Result{UID: "m1", AttemptUID: job.AttemptUID, Type: "status", Status: "downloading 40%"})
		b.waitFor("m1", "status stored", func(s policy.State) bool { return s.Status == "downloading 40%" })

		done := b.clock.Advance(5 * time.Minute)
		b.send(redisio.Result{UID: "m1", AttemptUID: job.AttemptUID, Type: "success", Status: "fetched 1234 bytes"})
		st = b.waitFor("m1", "success applied", func(s policy.State) bool { return !s.Running() })
		require.Equal(t, "fetched 1234 bytes", st.Status, "a success's status stays for the UI")
		require.True(t, st.RefreshAt.Equal(time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)), "refresh_at %s", st.RefreshAt)
		require.Equal(t, 0, st.AttemptNo)
		require.True(t, st.LastSuccessAt.Equal(done))
		require.True(t, st.FailingSince.IsZero())
		require.Empty(t, st.LastError)
		require.True(t, st.TimeoutAt.IsZero())

		// Nothing more until 14:00; at 14:00 the next attempt starts.
		b.noJob()
		b.clock.Advance(14*time.Hour - 10*time.Hour - 5*time.Minute)
		job2 := b.popJob()
		require.Equal(t, 1, job2.AttemptNo)
		require.NotEqual(t, job.AttemptUID, job2.AttemptUID)
	})
}

// Failures go through the retry policy to disabled with the kind's reason;
// enable brings the model back; a permanent failure disables at once with the
// worker's reason.
func TestFailuresDisableAndEnable(t *testing.T) {
	t.Parallel()
	forEachStore(t, allStores, func(t *testing.T, store string) {
		b := setup(t, setupOpts{store: store, timeout: 10 * time.Minute, retry: "delays:0s,1m"})
		b.insert("m1")
		svc := b.start(nil)

		fail := func(job redisio.Job, reason string) {
			b.send(redisio.Result{UID: job.UID, AttemptUID: job.AttemptUID, Type: "failure", Reason: reason})
		}
		j1 := b.popJob()
		fail(j1, "HTTP 500")
		// delays[0] = 0s: due again at once; the dispatcher starts attempt 2.
		j2 := b.popJob()
		require.Equal(t, 2, j2.AttemptNo)
		st := b.state("m1")
		require.Equal(t, "HTTP 500", st.LastError)
		require.True(t, st.FailingSince.Equal(t0), "failing_since is the first attempt's start")

		fail(j2, "HTTP 502")
		st = b.waitFor("m1", "second failure", func(s policy.State) bool { return !s.Running() })
		require.True(t, st.RefreshAt.Equal(t0.Add(time.Minute)), "delays[1] = 1m: refresh_at %s", st.RefreshAt)
		b.noJob()

		b.clock.Advance(time.Minute)
		j3 := b.popJob()
		require.Equal(t, 3, j3.AttemptNo)
		fail(j3, "HTTP 503")
		st = b.waitFor("m1", "disabled", func(s policy.State) bool { return s.Disabled() })
		require.Equal(t, "Cannot refresh items after 3 attempt(s)", st.DisabledReason)
		require.True(t, st.DisabledAt.Equal(t0.Add(time.Minute)))
		require.True(t, st.RefreshAt.IsZero())
		require.Empty(t, st.AttemptUID)
		require.Equal(t, "HTTP 503", st.LastError)
		waitCounter(t, func() float64 { return decisions(svc, "disabled", "worker") }, 1, "disabled decision counted")
		b.noJob()

		// The user fixes the model: enable makes it due now, counters reset.
		changes, err := NewAdmin(b.store, b.rio).Enable(context.Background(), b.kind.Table, []string{"m1"}, b.clock.Now())
		require.NoError(t, err)
		require.Len(t, changes, 1)
		require.Equal(t, "enabled, refresh due now", changes[0].Note)
		j4 := b.popJob()
		require.Equal(t, 1, j4.AttemptNo)
		st = b.state("m1")
		require.False(t, st.Disabled())
		require.Empty(t, st.DisabledReason)
		require.True(t, st.FailingSince.IsZero())
		require.Equal(t, 0, st.AttemptNo-1, "attempt_no restarts at 1")

		// A permanent failure disables at once with the worker's words.
		b.send(redisio.Result{UID: "m1", AttemptUID: j4.AttemptUID, Type: "failure", Permanent: true,
			Reason: "GET https://example.com/m1: HTTP 404", UserFriendlyReason: "Provided URL is invalid: https://example.com/m1"})
		st = b.waitFor("m1", "disabled", func(s policy.State) bool { return s.Disabled() })
		require.Equal(t, "Provided URL is invalid: https://example.com/m1", st.DisabledReason)
		require.Equal(t, "GET https://example.com/m1: HTTP 404", st.LastError)
		require.Equal(t, 1, st.AttemptNo)
		require.True(t, st.RefreshAt.IsZero())
	})
}

func decisions(svc *Service, branch, cause string) float64 {
	return toFloat(svc.Metrics().Decisions.WithLabelValues("items", branch, cause))
}

// A result whose attempt is not the current one changes nothing.
func TestStaleResultChangesNothing(t *testing.T) {
	t.Parallel()
	forEachStore(t, allStores, func(t *testing.T, store string) {
		b := setup(t, setupOpts{store: store, timeout: time.Hour})
		b.insert("m1")
		svc := b.start(nil)
		job := b.popJob()
		before := b.state("m1")

		b.send(redisio.Result{UID: "m1", AttemptUID: "c0000000000000000000", Type: "success"})
		b.send(redisio.Result{UID: "m1", AttemptUID: "c0000000000000000000", Type: "failure", Permanent: true, Reason: "x"})
		b.send(redisio.Result{UID: "m1", AttemptUID: "c0000000000000000000", Type: "status", Status: "stale status"})
		waitCounter(t, results(svc, "status", "stale"), 1, "stale results counted")
		require.Equal(t, before, b.state("m1"))

		// Enable makes the running attempt's own result stale as well.
		_, err := NewAdmin(b.store, b.rio).Enable(context.Background(), b.kind.Table, []string{"m1"}, b.clock.Now())
		require.NoError(t, err)
		next := b.popJob()
		b.send(redisio.Result{UID: "m1", AttemptUID: job.AttemptUID, Type: "success"})
		waitCounter(t, results(svc, "success", "stale"), 2, "old attempt's success is stale")
		st := b.state("m1")
		require.Equal(t, next.AttemptUID, st.AttemptUID)
		require.True(t, st.LastSuccessAt.IsZero())
	})
}

// A worker that never answers is noticed at timeout_at; with a zero first
// delay the retry starts in the same pass.
func TestTimeoutIsRetried(t *testing.T) {
	t.Parallel()
	forEachStore(t, allStores, func(t *testing.T, store string) {
		b := setup(t, setupOpts{store: store, timeout: 10 * time.Minute, retry: "delays:0s,1m"})
		b.insert("m1")
		svc := b.start(nil)
		j1 := b.popJob()
		b.noJob()

		b.clock.Advance(10 * time.Minute)
		j2 := b.popJob()
		require.Equal(t, 2, j2.AttemptNo)
		require.NotEqual(t, j1.AttemptUID, j2.AttemptUID)
		st := b.state("m1")
		require.Equal(t, "timed out after 10m", st.LastError)
		require.True(t, st.FailingSince.Equal(t0))
		require.Equal(t, 1.0, decisions(svc, "retry", "timeout"))

		// The late answer of the timed-out attempt is stale.
		b.send(redisio.Result{UID: "m1", AttemptUID: j1.AttemptUID, Type: "success"})
		waitCounter(t, results(svc, "success", "stale"), 1, "late result is stale")
		require.Equal(t, j2.AttemptUID, b.state("m1").AttemptUID)
	})
}

// A row whose own refresh_rrule cannot be parsed is disabled with a reason
// the UI can show; the rest of the batch goes on.
func TestInvalidRowScheduleDisables(t *testing.T) {
	t.Parallel()
	forEachStore(t, allStores, func(t *testing.T, store string) {
		b := setup(t, setupOpts{store: store})
		b.insert("bad", "good")
		b.exec("UPDATE items SET refresh_rrule = 'RRULE:FREQ=SOMETIMES' WHERE uid = 'bad'")
		b.start(nil)
		job := b.popJob()
		require.Equal(t, "good", job.UID)
		st := b.waitFor("bad", "disabled", func(s policy.State) bool { return s.Disabled() })
		require.Contains(t, st.DisabledReason, "Invalid refresh schedule: ")
		require.Contains(t, st.DisabledReason, "SOMETIMES")
	})
}

// Trigger makes an idle model due now and leaves a running one alone.
func TestTrigger(t *testing.T) {
	t.Parallel()
	forEachStore(t, allStores, func(t *testing.T, store string) {
		b := setup(t, setupOpts{store: store, timeout: time.Hour})
		b.insert("m1", "m2")
		b.exec("UPDATE items SET refresh_at = ? WHERE uid = 'm2'", t0.Add(24*time.Hour))
		b.start(nil)
		job := b.popJob()
		require.Equal(t, "m1", job.UID)

		changes, err := NewAdmin(b.store, b.rio).Trigger(context.Background(), b.kind.Table, []string{"m1", "m2", "nope"}, b.clock.Now())
		require.NoError(t, err)
		require.Len(t, changes, 3)
		require.Contains(t, changes[0].Note, "is running")
		require.Equal(t, changes[0].Before, changes[0].After)
		require.Equal(t, "refresh due now", changes[1].Note)
		require.False(t, changes[2].Found)
		require.Equal(t, "m2", b.popJob().UID)
	})
}
