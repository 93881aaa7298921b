package worker

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/redisio"
)

// TestPopTakesPriorityListsFirst: a job on a priority lane is popped before
// the ones queued earlier on the input list, and a pop takes its batch from
// one list only.
func TestPopTakesPriorityListsFirst(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	ctx := context.Background()
	lists := redisio.Lists{Input: prefix + "in"}
	push := func(list string, uids ...string) {
		for _, uid := range uids {
			data, err := json.Marshal(redisio.Job{UID: uid, AttemptUID: "a" + uid, TimeoutAt: time.Now().Add(time.Hour)})
			require.NoError(t, err)
			require.NoError(t, rdb.RPush(ctx, list, data).Err())
		}
	}
	push(lists.Input, "q1", "q2", "q3", "q4")
	push(lists.PriorityInput(5), "p5")
	push(lists.PriorityInput(0), "p0a", "p0b")
	w, err := New(Config{Kind: "k", Redis: rdb, Input: lists.Input, PriorityInputs: lists.Inputs([]int{0, 5})[:2],
		Output: prefix + "out", Concurrency: 3, Logger: quietLogger()})
	require.NoError(t, err)
	var got [][]string
	for range 4 {
		msgs, err := w.pop(ctx, 3)
		require.NoError(t, err)
		var uids []string
		for _, m := range msgs {
			var j redisio.Job
			require.NoError(t, json.Unmarshal([]byte(m), &j))
			uids = append(uids, j.UID)
		}
		got = append(got, uids)
	}
	require.Equal(t, [][]string{{"p0a", "p0b"}, {"p5"}, {"q1", "q2", "q3"}, {"q4"}}, got)
}
