package refresher

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The backoff starts at 100ms, doubles up to its limit, and starts over
// after a success: the waits the dispatcher (limit 5 MaxSleep), the poller
// and the start-up check (limit 5s) had each written out.
func TestBackoffDoublesUpToItsLimitAndResets(t *testing.T) {
	b := backoff{limit: time.Second}
	var got []time.Duration
	for range 6 {
		got = append(got, b.failed())
	}
	ms := time.Millisecond
	require.Equal(t, []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, time.Second, time.Second}, got)
	b.reset()
	require.Equal(t, 100*ms, b.failed())
	require.Equal(t, 50*ms, (&backoff{limit: 50 * ms}).failed(), "a limit below 100ms caps the first wait too")
}

func TestSleepEndsOnTimeoutWakeOrContext(t *testing.T) {
	ctx := t.Context()
	start := time.Now()
	require.True(t, sleep(ctx, 30*time.Millisecond))
	require.GreaterOrEqual(t, time.Since(start), 30*time.Millisecond)

	wake := make(chan struct{}, 1)
	wake <- struct{}{}
	require.True(t, sleepOrWake(ctx, 0, wake), "no wait")
	require.Len(t, wake, 1, "a sleep of zero leaves the wake signal for the next one")
	start = time.Now()
	require.True(t, sleepOrWake(ctx, forever, wake), "woken")
	require.Less(t, time.Since(start), time.Second)
	require.Empty(t, wake)

	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(20*time.Millisecond, cancel)
	require.False(t, sleepOrWake(cctx, forever, wake), "a cancelled context ends a sleep without a timer")
	require.False(t, sleep(cctx, 0), "and is reported without a wait")
}
