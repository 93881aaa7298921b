package refresher

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
)

// insertGroup creates models due at the clock's now, each in throttle
// group group (the name column).
func (b *testBundle) insertGroup(group string, uids ...string) {
	b.t.Helper()
	for _, uid := range uids {
		_, err := b.db.Exec("INSERT INTO items (uid, input_url, name, refresh_at) VALUES (?, ?, ?, ?)",
			uid, "https://example.com/"+uid, group, b.clock.Now())
		require.NoError(b.t, err)
	}
}

// jobsByUID pops n jobs and returns them by uid.
func (b *testBundle) jobsByUID(n int) map[string]redisio.Job {
	b.t.Helper()
	jobs := make(map[string]redisio.Job, n)
	for _, j := range b.popJobs(n) {
		jobs[j.UID] = j
	}
	return jobs
}

// One throttled result holds its group, and only its group: a row of the
// group due meanwhile waits for the hold's end without using an attempt, a
// queued row answered as throttled uses none either, a row of another group
// is dispatched, and at the hold's end the group runs again.
func TestThrottleHoldsItsGroupOnly(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{timeout: time.Hour, retry: "delays:0s,1m"})
	b.kind.Table.Payload = []string{"input_url", "name"}
	b.kind.ThrottleGroup = "name"
	b.cfg.Kinds = []Kind{b.kind}
	b.insertGroup("api-a", "a1", "a2")
	b.insertGroup("api-b", "b1")
	svc := b.start(nil)
	jobs := b.jobsByUID(3)
	require.Equal(t, "api-a", jobs["a1"].Payload["name"])

	// a1's worker gets a 429 with Retry-After 600 from api-a.
	b.send(redisio.Result{UID: "a1", AttemptUID: jobs["a1"].AttemptUID, Type: "failure", Reason: "HTTP 429",
		RetryAfterSeconds: 600, ThrottleKey: "api-a"})
	holdEnd := t0.Add(10 * time.Minute)
	st := b.waitFor("a1", "429 applied", func(s policy.State) bool { return !s.Running() })
	require.Equal(t, 1, st.AttemptNo, "the row that got the 429 used its attempt")
	require.True(t, st.RefreshAt.Equal(holdEnd), "refresh_at %s", st.RefreshAt)

	// The hold is in Redis (written just after the commit) and expires by
	// itself.
	key := b.kind.Lists.Input + ":throttle"
	waitCounter(t, func() float64 { return float64(b.rdb.Exists(context.Background(), key).Val()) }, 1, "hold written")
	ttl, err := b.rdb.PTTL(context.Background(), key).Result()
	require.NoError(t, err)
	require.True(t, ttl > 0 && ttl <= 601*time.Second, "ttl %s", ttl)

	// a2 was queued already: its worker answers throttled.
	b.send(redisio.Result{UID: "a2", AttemptUID: jobs["a2"].AttemptUID, Type: "failure", Reason: "throttled by api-a",
		RetryAfterSeconds: 600, Scope: "group", ThrottleKey: "api-a"})
	st = b.waitFor("a2", "throttled answer applied", func(s policy.State) bool { return !s.Running() })
	require.Equal(t, 0, st.AttemptNo, "a throttled answer uses no attempt")
	require.True(t, st.FailingSince.IsZero(), "a throttled wait is no failure")
	require.True(t, st.RefreshAt.Equal(holdEnd), "refresh_at %s", st.RefreshAt)
	require.False(t, st.Disabled())

	// A new row of api-a and one of api-b fall due during the hold: only
	// api-b's is dispatched; api-a's waits for the hold's end, uncounted.
	b.clock.Advance(time.Minute)
	b.insertGroup("api-a", "a3")
	b.insertGroup("api-b", "b2")
	j := b.popJob()
	require.Equal(t, "b2", j.UID)
	st = b.waitFor("a3", "held", func(s policy.State) bool { return s.RefreshAt.Equal(holdEnd) })
	require.Equal(t, 0, st.AttemptNo)
	require.False(t, st.Running())
	b.noJob()
	waitCounter(t, func() float64 { return testutil.ToFloat64(svc.Metrics().Throttled.WithLabelValues("items", "held")) }, 1, "held rows counted")
	require.Equal(t, 1.0, testutil.ToFloat64(svc.Metrics().ThrottledGroups.WithLabelValues("items")))
	require.Equal(t, 1.0, testutil.ToFloat64(svc.Metrics().Throttled.WithLabelValues("items", "answered")))

	// At the hold's end the whole group runs again.
	b.clock.Advance(9 * time.Minute)
	again := b.jobsByUID(3)
	require.Contains(t, again, "a1")
	require.Contains(t, again, "a2")
	require.Contains(t, again, "a3")
	require.Equal(t, 1, again["a2"].AttemptNo)
	require.Equal(t, 2, again["a1"].AttemptNo)
}

// 100 rows fail transiently at once: the incident guard holds, so none is
// disabled although each fails past its retry policy; a permanent failure
// still disables.
func TestIncidentGuardDisablesNobody(t *testing.T) {
	t.Parallel()
	// delays:1m gives up at the 2nd consecutive failure.
	b := setup(t, setupOpts{timeout: time.Hour, retry: "delays:1m"})
	uids := make([]string, 100)
	for i := range uids {
		uids[i] = fmt.Sprintf("m%03d", i)
	}
	b.insert(uids...)
	svc := b.start(nil)

	failAll := func(permanent string) {
		t.Helper()
		jobs := b.jobsByUID(len(uids))
		msgs := make([]any, 0, len(jobs))
		for _, uid := range uids {
			r := redisio.Result{UID: uid, AttemptUID: jobs[uid].AttemptUID, Type: "failure", Reason: "HTTP 503"}
			if uid == permanent {
				r.Reason, r.Permanent = "HTTP 404", true
			}
			raw, err := json.Marshal(r)
			require.NoError(t, err)
			msgs = append(msgs, raw)
		}
		require.NoError(t, b.rdb.RPush(context.Background(), b.kind.Lists.Output, msgs...).Err())
		for _, uid := range uids {
			b.waitFor(uid, "failure applied", func(s policy.State) bool { return !s.Running() })
		}
	}
	for round := range 3 {
		failAll("")
		for _, uid := range uids {
			st := b.state(uid)
			require.False(t, st.Disabled(), "round %d: %s disabled: %s", round, uid, st.DisabledReason)
			require.True(t, st.RefreshAt.After(b.clock.Now()), "round %d: %s waits", round, uid)
		}
		require.Equal(t, 1.0, testutil.ToFloat64(svc.Metrics().Incident.WithLabelValues("items")), "round %d", round)
		b.clock.Advance(time.Minute)
	}

	failAll("m042")
	st := b.state("m042")
	require.True(t, st.Disabled(), "a permanent failure still disables during an incident")
	require.Equal(t, "HTTP 404", st.LastError)
	for _, uid := range uids {
		if uid != "m042" {
			require.False(t, b.state(uid).Disabled(), uid)
		}
	}
}
