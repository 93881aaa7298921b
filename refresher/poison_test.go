package refresher

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
)

// TestPoisonBatchIsDeadLettered: on a latin1 key column, 1,000 results
// whose uid holds 💥, which the column cannot hold, name no row (the
// database would refuse the whole batch: Illegal mix of collations,
// 1267/1270). They must go to the dead letters as unknown models, not block
// the output list for ever, and a good result sent after them is applied
// within seconds.
func TestPoisonBatchIsDeadLettered(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{timeout: time.Hour})
	_, err := b.db.Exec("ALTER TABLE items MODIFY uid CHAR(20) CHARACTER SET latin1 NOT NULL")
	require.NoError(t, err)
	b.insert("m1")
	svc := b.start(nil)
	job := b.popJob()

	const poison = 1000
	rs := make([]redisio.Result, poison)
	for i := range rs {
		rs[i] = redisio.Result{UID: fmt.Sprintf("x\U0001F4A5%d", i), AttemptUID: job.AttemptUID, Type: "success"}
	}
	b.sendAll(rs...)
	sent := time.Now()
	b.send(redisio.Result{UID: "m1", AttemptUID: job.AttemptUID, Type: "success"})

	b.waitFor("m1", "good result after 1,000 poison ones applied", func(s policy.State) bool { return !s.LastSuccessAt.IsZero() })
	took := time.Since(sent)
	t.Logf("good result applied %s after 1,000 poison results", took.Round(time.Millisecond))
	require.Less(t, took, 8*time.Second, "the good result waited too long behind the poison ones")
	waitCounter(t, func() float64 { return toFloat(svc.Metrics().DeadLetters.WithLabelValues("items")) }, poison, "poison results dead-lettered")
	dead, err := b.rdb.LRange(context.Background(), b.kind.Lists.Dead, 0, -1).Result()
	require.NoError(t, err)
	require.Len(t, dead, poison)
	for _, d := range dead {
		require.Contains(t, d, "unknown model: no row in table items")
		require.NotContains(t, d, `\"uid\":\"m1\"`, "the good result was dead-lettered")
	}
	require.Zero(t, b.llen(b.kind.Lists.Output))
}

// TestEveryResultOfABatchRefused: on a latin1 refresh_last_error column,
// 100 failure results whose reason holds 💥 are each refused by the
// database (Incorrect string value, 1366), in their batch and then one by
// one. Every one goes to the dead letters, and a good result sent after
// them is applied.
func TestEveryResultOfABatchRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{timeout: time.Hour})
	_, err := b.db.Exec("ALTER TABLE items MODIFY refresh_last_error VARCHAR(1024) CHARACTER SET latin1 NULL")
	require.NoError(t, err)
	b.insert("m1")
	svc := b.start(nil)
	job := b.popJob()

	const poison = 100
	rs := make([]redisio.Result, poison)
	for i := range rs {
		rs[i] = redisio.Result{UID: "m1", AttemptUID: job.AttemptUID, Type: "failure", Reason: fmt.Sprintf("x\U0001F4A5%d", i)}
	}
	b.sendAll(rs...)
	b.send(redisio.Result{UID: "m1", AttemptUID: job.AttemptUID, Type: "success"})

	b.waitFor("m1", "good result after 100 refused ones applied", func(s policy.State) bool { return !s.LastSuccessAt.IsZero() })
	waitCounter(t, func() float64 { return toFloat(svc.Metrics().DeadLetters.WithLabelValues("items")) }, poison, "refused results dead-lettered")
	dead, err := b.rdb.LRange(context.Background(), b.kind.Lists.Dead, 0, -1).Result()
	require.NoError(t, err)
	require.Len(t, dead, poison)
	for _, d := range dead {
		require.Contains(t, d, "cannot apply this result")
		require.NotContains(t, d, `\"type\":\"success\"`, "the good result was dead-lettered")
	}
	require.Zero(t, b.llen(b.kind.Lists.Output))
}

// TestReasonTheColumnCannotHold: a failure reason with 💥 for a latin1
// refresh_last_error column is refused (Incorrect string value, 1366): that
// result alone is dead-lettered; the others of its batch are applied.
func TestReasonTheColumnCannotHold(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{timeout: time.Hour})
	_, err := b.db.Exec("ALTER TABLE items MODIFY refresh_last_error VARCHAR(1024) CHARACTER SET latin1 NULL")
	require.NoError(t, err)
	b.insert("m1", "m2", "m3")
	svc := b.start(nil)
	jobs := map[string]redisio.Job{}
	for _, j := range b.popJobs(3) {
		jobs[j.UID] = j
	}
	b.send(redisio.Result{UID: "m1", AttemptUID: jobs["m1"].AttemptUID, Type: "success"})
	b.send(redisio.Result{UID: "m2", AttemptUID: jobs["m2"].AttemptUID, Type: "failure", Reason: "exploded \U0001F4A5"})
	b.send(redisio.Result{UID: "m3", AttemptUID: jobs["m3"].AttemptUID, Type: "failure", Reason: "plain reason"})

	b.waitFor("m1", "success applied", func(s policy.State) bool { return !s.LastSuccessAt.IsZero() })
	b.waitFor("m3", "failure applied", func(s policy.State) bool { return s.LastError == "plain reason" })
	waitCounter(t, func() float64 { return toFloat(svc.Metrics().DeadLetters.WithLabelValues("items")) }, 1, "refused result dead-lettered")
	dead, err := b.rdb.LRange(context.Background(), b.kind.Lists.Dead, 0, -1).Result()
	require.NoError(t, err)
	require.Len(t, dead, 1)
	require.Contains(t, dead[0], "cannot apply this result")
	require.True(t, strings.Contains(dead[0], "m2"), dead[0])
	require.True(t, b.state("m2").Running(), "m2's refused failure changed its row")
	require.Zero(t, b.llen(b.kind.Lists.Output))
}
