package worker

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
)

// roundTrips counts the commands and round trips a client sends.
type roundTrips struct{ trips, cmds atomic.Int64 }

func (*roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.trips.Add(1)
		h.cmds.Add(1)
		return next(ctx, cmd)
	}
}
func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.trips.Add(1)
		h.cmds.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// A busy worker of concurrency 1 costs Redis two round trips per job: its
// pop and its result's push. A safer wait that costs a third (a BLMOVE into
// a receipt, then a pipeline to take it, tried and reverted) shows here.
func TestBusyWorkerRoundTripsPerJob(t *testing.T) {
	t.Parallel()
	srv, _ := testServer(t)
	rdb, prefix := testenv.Redis(t)
	input, output := prefix+"in", prefix+"out"
	const n = 200
	for i := range n {
		pushJobTo(t, rdb, input, strconv.Itoa(i), srv.URL+"/ok", time.Now().Add(time.Hour))
	}
	c := redis.NewClient(&redis.Options{Addr: rdb.Options().Addr, DB: rdb.Options().DB})
	t.Cleanup(func() { _ = c.Close() })
	h := &roundTrips{}
	c.AddHook(h)
	w, err := New(Config{Kind: "k", Redis: c, Input: input, Output: output, Concurrency: 1,
		AllowPrivateNetworks: true, Logger: quietLogger()})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	start := time.Now()
	go func() { defer close(done); _ = w.Run(ctx) }()
	for rdb.LLen(t.Context(), output).Val() < n && time.Since(start) < 20*time.Second {
		time.Sleep(5 * time.Millisecond)
	}
	took := time.Since(start)
	trips, cmds := h.trips.Load(), h.cmds.Load()
	cancel()
	<-done
	require.EqualValues(t, n, rdb.LLen(t.Context(), output).Val())
	t.Logf("%d jobs in %v: %.2f round trips, %.2f commands per job", n, took, float64(trips)/n, float64(cmds)/n)
	require.LessOrEqual(t, float64(trips)/n, 2.05, "round trips per job")
}
