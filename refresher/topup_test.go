package refresher

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
)

// TestGarbageTopsUpBatches: messages that cannot be applied do not shrink
// the batches of results. With BatchSize 10, a batch that meets garbage is
// topped up (Drain.Next) until it holds 10 results, but never past 20
// messages, and the batch fetched ahead while the database applies one is
// as large as that one. Every garbage message is dead-lettered once.
func TestGarbageTopsUpBatches(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{timeout: time.Hour})
	// Results for uids no row has are valid messages (dead-lettered by the
	// poller as unknown models); "not json" is garbage Fetch recognises.
	var msgs []any
	valid := func(name string, i int) any {
		return fmt.Sprintf(`{"uid":"%s%d","attempt_uid":"a","type":"success"}`, name, i)
	}
	for i := range 10 {
		msgs = append(msgs, valid("full", i))
	}
	for i := range 5 {
		msgs = append(msgs, valid("half", i), fmt.Sprintf("not json %d", i))
	}
	for i := range 5 {
		msgs = append(msgs, valid("rest", i), fmt.Sprintf("not json again %d", i))
	}
	for i := range 25 {
		msgs = append(msgs, fmt.Sprintf("not json either %d", i))
	}
	for i := range 5 {
		msgs = append(msgs, valid("later", i))
	}
	require.NoError(t, b.rdb.RPush(context.Background(), b.kind.Lists.Output, msgs...).Err())

	var (
		mu      sync.Mutex
		batches []int
	)
	svc := b.start(func(c *Config) {
		c.BatchSize = 10
		c.Observer.AfterApply = func(_ string, n int) {
			mu.Lock()
			defer mu.Unlock()
			batches = append(batches, n)
		}
	})
	waitCounter(t, func() float64 { return toFloat(svc.Metrics().DeadLetters.WithLabelValues("items")) }, float64(len(msgs)), "every message dead-lettered")
	// The dead letters are written before the batch's AfterApply runs, so
	// wait for the hook of the last batch too.
	testenv.Eventually(t, 10*time.Second, "every batch's AfterApply", func() bool {
		mu.Lock()
		defer mu.Unlock()
		sum := 0
		for _, n := range batches {
			sum += n
		}
		return sum >= len(msgs)
	})
	mu.Lock()
	defer mu.Unlock()
	// 10 results: no top-up. Then 10 fetched ahead, half garbage, topped
	// up with the 10 that should hold the 5 results missing at that share;
	// then 20 fetched ahead, all garbage, the most a batch holds; then the
	// 5 garbage and 5 results left.
	require.Equal(t, []int{10, 20, 20, 10}, batches)
	require.Equal(t, int64(len(msgs)), b.llen(b.kind.Lists.Dead))
	require.Zero(t, b.inRedis("test-a"))
}

// TestShortReadAheadCatchesUp: a batch fetched ahead that came short (it
// took what had arrived when the previous batch began) is joined by what
// arrived during that batch's apply before it is applied (catchUp), not
// applied alone with the rest in a transaction of its own after it. With
// BatchSize 4: 5 results, then 3 more while the first batch is applied
// (after its read-ahead took the fifth) make batches of 4 and 4, not 4, 1
// and 3.
func TestShortReadAheadCatchesUp(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{timeout: time.Hour})
	// Results for uids no row has: dead-lettered as unknown models.
	result := func(i int) any { return fmt.Sprintf(`{"uid":"u%d","attempt_uid":"a","type":"success"}`, i) }
	var first []any
	for i := range 5 {
		first = append(first, result(i))
	}
	require.NoError(t, b.rdb.RPush(context.Background(), b.kind.Lists.Output, first...).Err())
	var (
		mu      sync.Mutex
		batches []int
		commits atomic.Int64
	)
	svc := b.start(func(c *Config) {
		c.BatchSize = 4
		c.faults.beforeCommit = func(string) error {
			if commits.Add(1) != 1 {
				return nil
			}
			// The read-ahead has taken the fifth result; 3 more arrive.
			b.pollList(b.kind.Lists.Output, 5*time.Second, func(n int64) bool { return n == 0 })
			return b.rdb.RPush(context.Background(), b.kind.Lists.Output, result(5), result(6), result(7)).Err()
		}
		c.Observer.AfterApply = func(_ string, n int) {
			mu.Lock()
			defer mu.Unlock()
			batches = append(batches, n)
		}
	})
	waitCounter(t, func() float64 { return toFloat(svc.Metrics().DeadLetters.WithLabelValues("items")) }, 8, "every result dead-lettered")
	testenv.Eventually(t, 10*time.Second, "every batch's AfterApply", func() bool {
		mu.Lock()
		defer mu.Unlock()
		sum := 0
		for _, n := range batches {
			sum += n
		}
		return sum >= 8
	})
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []int{4, 4}, batches)
	require.Zero(t, b.inRedis("test-a"))
}
