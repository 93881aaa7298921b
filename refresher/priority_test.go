package refresher

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/redisio"
)

func TestInputListLanes(t *testing.T) {
	t.Parallel()
	k := Kind{Name: "k", Table: models.Table{Priority: 10}, Lists: redisio.Lists{Input: "in"}, Lanes: []int{0, 5}}
	for level, want := range map[int]string{-3: "in:p0", 0: "in:p0", 3: "in:p0", 5: "in:p5", 9: "in:p5", 10: "in", 20: "in"} {
		require.Equal(t, want, k.inputList(models.Priority{Level: level}), "level %d", level)
	}
	k.Lanes = nil
	require.Equal(t, "in", k.inputList(models.Priority{Level: 0}), "no lanes")
	require.Error(t, checkLanes(Kind{Table: models.Table{Priority: 10}, Lanes: []int{5, 0}}))
	require.Error(t, checkLanes(Kind{Table: models.Table{Priority: 10}, Lanes: []int{0, 10}}))
	require.NoError(t, checkLanes(Kind{Table: models.Table{Priority: 10}, Lanes: []int{-1, 9}}))
}

// TestDispatchPushesByPriority: the dispatcher claims the rows by priority
// and pushes each job to its priority's list; a one-shot priority serves
// one attempt and is cleared.
func TestDispatchPushesByPriority(t *testing.T) {
	t.Parallel()
	forEachStore(t, allStores, func(t *testing.T, store string) {
		b := setup(t, setupOpts{store: store})
		b.kind.Table.Priority = 10
		b.kind.Lanes = []int{0, 5}
		b.cfg.Kinds = []Kind{b.kind}
		for i := range 25 {
			b.insert(fmt.Sprintf("n%02d", i))
		}
		b.insert("once", "own3", "own5", "own20")
		b.exec("UPDATE items SET refresh_priority = 20, refresh_priority_once = 0 WHERE uid = 'once'")
		b.exec("UPDATE items SET refresh_priority = 3 WHERE uid = 'own3'")
		b.exec("UPDATE items SET refresh_priority = 5 WHERE uid = 'own5'")
		b.exec("UPDATE items SET refresh_priority = 20 WHERE uid = 'own20'")
		b.start(func(c *Config) { c.BatchSize = 10 })
		ctx := context.Background()
		uids := func(list string) []string {
			raws, err := b.rdb.LRange(ctx, list, 0, -1).Result()
			require.NoError(t, err)
			var out []string
			for _, raw := range raws {
				var j redisio.Job
				require.NoError(t, json.Unmarshal([]byte(raw), &j))
				out = append(out, j.UID)
			}
			return out
		}
		require.Eventually(t, func() bool { return len(uids(b.kind.Lists.Input)) == 26 }, 10*time.Second, 10*time.Millisecond)
		require.Equal(t, []string{"once", "own3"}, uids(b.kind.Lists.PriorityInput(0)))
		require.Equal(t, []string{"own5"}, uids(b.kind.Lists.PriorityInput(5)))
		in := uids(b.kind.Lists.Input)
		require.Equal(t, "own20", in[len(in)-1], "the least urgent last")
		var once *int
		require.NoError(t, b.db.QueryRow("SELECT refresh_priority_once FROM items WHERE uid = 'once'").Scan(&once))
		require.Nil(t, once, "one-shot priority cleared")
	})
}

// TestTriggerAtPriority: "refresh now" at a priority makes the row due with
// a one-shot priority, so its job goes to the priority's lane ahead of the
// backlog; a running attempt is left alone and gets none.
func TestTriggerAtPriority(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	b.kind.Table.Priority = 10
	b.kind.Lanes = []int{0}
	b.cfg.Kinds = []Kind{b.kind}
	for i := range 20 {
		b.insert(fmt.Sprintf("n%02d", i))
	}
	b.insert("user", "busy")
	b.exec("UPDATE items SET refresh_at = ? WHERE uid = 'user'", t0.Add(time.Hour))
	b.exec("UPDATE items SET refresh_attempt_uid = 'x', refresh_timeout_at = ?, refresh_at = ? WHERE uid = 'busy'", t0.Add(time.Hour), t0.Add(time.Hour))
	zero := 0
	changes, err := NewAdmin(b.store, nil).TriggerAt(&zero)(context.Background(), b.kind.Table, []string{"user", "busy"}, t0)
	require.NoError(t, err)
	require.Equal(t, "refresh due now at priority 0", changes[0].Note)
	require.Contains(t, changes[1].Note, "left alone")
	once := func(uid string) *int {
		var v *int
		require.NoError(t, b.db.QueryRow("SELECT refresh_priority_once FROM items WHERE uid = ?", uid).Scan(&v))
		return v
	}
	require.Equal(t, &zero, once("user"))
	require.Nil(t, once("busy"))

	b.start(func(c *Config) { c.BatchSize = 5 })
	require.Eventually(t, func() bool {
		n, err := b.rdb.LLen(context.Background(), b.kind.Lists.Input).Result()
		return err == nil && n == 20
	}, 10*time.Second, 10*time.Millisecond)
	lane, err := b.rdb.LRange(context.Background(), b.kind.Lists.PriorityInput(0), 0, -1).Result()
	require.NoError(t, err)
	require.Len(t, lane, 1)
	require.Contains(t, lane[0], `"uid":"user"`)
	require.Nil(t, once("user"), "cleared by the claim")
}

// TestThrottledDispatcherClaimsUrgentRows: while the input list is full, a
// kind with lanes still claims and pushes the rows more urgent than its own
// level, within a fraction of a second.
func TestThrottledDispatcherClaimsUrgentRows(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	b.kind.Table.Priority = 10
	b.kind.Lanes = []int{0}
	b.kind.MaxQueued = 5
	b.cfg.Kinds = []Kind{b.kind}
	for i := range 30 {
		b.insert(fmt.Sprintf("n%02d", i))
	}
	b.insert("user")
	b.exec("UPDATE items SET refresh_at = ? WHERE uid = 'user'", t0.Add(time.Hour))
	b.start(func(c *Config) { c.BatchSize = 5; c.MaxSleep = 5 * time.Second })
	ctx := context.Background()
	require.Eventually(t, func() bool {
		n, err := b.rdb.LLen(ctx, b.kind.Lists.Input).Result()
		return err == nil && n >= 5
	}, 10*time.Second, 10*time.Millisecond)
	b.passes.wait(t, 1) // a throttled pass: the dispatcher has a backlog

	zero := 0
	_, err := NewAdmin(b.store, nil).TriggerAt(&zero)(ctx, b.kind.Table, []string{"user"}, t0)
	require.NoError(t, err)
	start := time.Now()
	require.Eventually(t, func() bool {
		n, err := b.rdb.LLen(ctx, b.kind.Lists.PriorityInput(0)).Result()
		return err == nil && n == 1
	}, 3*time.Second, 5*time.Millisecond)
	require.Less(t, time.Since(start), time.Second, "pushed while the input list was full, before MaxSleep")
	n, err := b.rdb.LLen(ctx, b.kind.Lists.Input).Result()
	require.NoError(t, err)
	require.Equal(t, int64(5), n, "no more jobs for the full input list")
}
