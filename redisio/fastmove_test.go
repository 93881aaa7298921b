package redisio

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// cmdLog is a go-redis hook that records the name of every command sent.
type cmdLog struct{ names []string }

func (l *cmdLog) DialHook(next redis.DialHook) redis.DialHook { return next }
func (l *cmdLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			l.names = append(l.names, c.Name())
		}
		return next(ctx, cmds)
	}
}
func (l *cmdLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		l.names = append(l.names, cmd.Name())
		return next(ctx, cmd)
	}
}

// A batch of minFastMove results or more moves natively: the first into
// the empty processing list, the one fetched ahead into the ahead list,
// each read back with LRANGE; Ack of the first makes the ahead list the
// processing list, and the results come in push order throughout.
func TestFetchMovesLargeBatchesNatively(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	log := &cmdLog{}
	b.rdb.AddHook(log)
	d := b.client.Drain(b.lists, "A", 0)
	const n = minFastMove + 20
	pushResults(t, b, 3*n)

	first, err := d.Fetch(ctx, n, 0)
	require.NoError(t, err)
	require.Equal(t, seq(0, n), uidsOf(first))
	require.Contains(t, log.names, "lrange", "the batch is read with LRANGE")
	requireList(t, b, b.lists.Processing("A"), results(0, n)...)
	require.Zero(t, b.rdb.Exists(ctx, b.lists.Ahead("A")).Val())

	second, err := d.Next(ctx, n)
	require.NoError(t, err)
	require.Equal(t, seq(n, 2*n), uidsOf(second))
	requireList(t, b, b.lists.Processing("A"), results(0, n)...)
	requireList(t, b, b.lists.Ahead("A"), results(n, 2*n)...)

	// A small top-up goes through Lua, behind the ahead list.
	third, err := d.Next(ctx, 5)
	require.NoError(t, err)
	require.Equal(t, seq(2*n, 2*n+5), uidsOf(third))
	requireList(t, b, b.lists.Ahead("A"), results(n, 2*n+5)...)

	require.NoError(t, d.Ack(ctx, first, nil))
	requireList(t, b, b.lists.Processing("A"), results(n, 2*n+5)...)
	require.Zero(t, b.rdb.Exists(ctx, b.lists.Ahead("A")).Val(), "renamed to the processing list")
	// The next batch fetched ahead goes to the ahead list again.
	fourth, err := d.Next(ctx, n)
	require.NoError(t, err)
	require.Equal(t, seq(2*n+5, 3*n), uidsOf(fourth))
	requireList(t, b, b.lists.Ahead("A"), results(2*n+5, 3*n)...)

	// One Ack over the processing list and part of the ahead list.
	both := append(append([]Message{}, second...), third...)
	require.NoError(t, d.Ack(ctx, both, nil))
	requireList(t, b, b.lists.Processing("A"), results(2*n+5, 3*n)...)
	require.Zero(t, b.rdb.Exists(ctx, b.lists.Ahead("A")).Val())
	require.NoError(t, d.Ack(ctx, fourth, nil))
	requireList(t, b, b.lists.Processing("A"))
	requireList(t, b, b.lists.Output)
	requireNoBatchInFlight(t, b, "A")
}

// The native move is kept only when the batch's memory proves every result
// under the size limit and the batch under the byte bound: an oversized
// result among many is stubbed (it never leaves Redis whole), a result
// just under the limit is returned whole, and a batch over the byte bound
// stops before the result that would exceed it.
func TestFastMoveKeepsTheLimits(t *testing.T) {
	t.Parallel()
	const limit = 4 << 10
	for _, tc := range []struct {
		name string
		odd  string // pushed as result 50
		fits bool
	}{
		{"oversized", `{"uid":"x","pad":"` + strings.Repeat("y", limit) + `"}`, false},
		{"just under", `{"uid":"x","pad":"` + strings.Repeat("y", limit-30) + `"}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			ctx := t.Context()
			c, err := NewWithConfig(b.rdb, Config{MaxResultBytes: limit})
			require.NoError(t, err)
			vals := make([]any, 0, 3*minFastMove)
			for i := range 3 * minFastMove {
				if i == 50 {
					vals = append(vals, tc.odd)
					continue
				}
				vals = append(vals, result(i))
			}
			require.NoError(t, b.rdb.RPush(ctx, b.lists.Output, vals...).Err())
			d := c.Drain(b.lists, "A", 0)
			msgs, err := d.Fetch(ctx, 2*minFastMove, 0)
			require.NoError(t, err)
			require.Len(t, msgs, 2*minFastMove)
			require.Equal(t, seq(0, 50), uidsOf(msgs[:50]))
			require.Equal(t, seq(51, 2*minFastMove), uidsOf(msgs[51:]))
			if tc.fits {
				require.Equal(t, tc.odd, string(msgs[50].Raw))
			} else {
				require.Error(t, msgs[50].Err)
				require.Equal(t, len(tc.odd), msgs[50].Size)
				require.Less(t, len(msgs[50].Raw), len(tc.odd), "never returned whole")
			}
			require.NoError(t, d.Ack(ctx, msgs, nil))
		})
	}

	t.Run("batch bytes", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		c, err := NewWithConfig(b.rdb, Config{MaxResultBytes: 1 << 10, MaxBatchBytes: 150 * len(result(100))})
		require.NoError(t, err)
		pushResults(t, b, 400) // results 100..399 have one length
		d := c.Drain(b.lists, "A", 0)
		first, err := d.Fetch(ctx, 100, 0)
		require.NoError(t, err)
		require.Len(t, first, 100)
		msgs, err := d.Next(ctx, 300)
		require.NoError(t, err)
		require.Equal(t, seq(100, 250), uidsOf(msgs), "stops at the byte bound")
	})
}

// Recover brings an instance's ahead list back too, behind its processing
// list, whether the instance itself restarts or another one takes over;
// and an Ack after the takeover changes nothing.
func TestRecoverTakesTheAheadListBack(t *testing.T) {
	t.Parallel()
	const n = minFastMove
	for _, self := range []bool{true, false} {
		t.Run(fmt.Sprintf("self=%v", self), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			ctx := t.Context()
			pushResults(t, b, 2*n+3)
			a := b.client.Drain(b.lists, "A", 0)
			first, err := a.Fetch(ctx, n, 0)
			require.NoError(t, err)
			_, err = a.Next(ctx, n)
			require.NoError(t, err)
			requireList(t, b, b.lists.Ahead("A"), results(n, 2*n)...)

			r := a
			if !self {
				require.NoError(t, b.rdb.Del(ctx, b.lists.Heartbeat("A"), b.lists.Heartbeat("A"+aheadSuffix)).Err())
				r = b.client.Drain(b.lists, "B", 0)
			}
			moved, err := r.Recover(ctx)
			require.NoError(t, err)
			require.Equal(t, 2*n, moved)
			requireList(t, b, b.lists.Output, results(0, 2*n+3)...)
			requireList(t, b, b.lists.Processing("A"))
			requireList(t, b, b.lists.Ahead("A"))
			if !self {
				require.ErrorIs(t, a.Ack(ctx, first, nil), ErrRecovered)
				requireList(t, b, b.lists.Output, results(0, 2*n+3)...)
			}
		})
	}
}

// While an instance lives, a service of the previous version, which knows
// only processing lists, leaves its ahead list alone: the list is named
// like a processing list and its name's heartbeat is kept alive, by Fetch
// and by Heartbeat. When the instance dies, that service recovers it, and
// a processing list left by that service is recovered by this version.
func TestAheadListAndThePreviousVersion(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	pushResults(t, b, 2*minFastMove)
	a := b.client.Drain(b.lists, "A", 0)
	_, err := a.Fetch(ctx, minFastMove, 0)
	require.NoError(t, err)
	_, err = a.Next(ctx, minFastMove)
	require.NoError(t, err)

	// What the previous version's RecoverOthers does: every key that
	// matches the pattern is an instance's list, moved back when that
	// instance's heartbeat is gone.
	previous := func() int {
		keys, err := b.rdb.Keys(ctx, b.lists.processingPattern()).Result()
		require.NoError(t, err)
		moved := 0
		for _, key := range keys {
			id := strings.TrimPrefix(key, b.lists.Output+processingInfix)
			if b.rdb.Exists(ctx, b.lists.Heartbeat(id)).Val() == 1 {
				continue
			}
			for b.rdb.LMove(ctx, key, b.lists.Output, "RIGHT", "LEFT").Err() == nil {
				moved++
			}
		}
		return moved
	}
	require.Contains(t, b.rdb.Keys(ctx, b.lists.processingPattern()).Val(), b.lists.Ahead("A"))
	require.Zero(t, previous(), "the instance is alive")
	require.NoError(t, b.rdb.Del(ctx, b.lists.Heartbeat("A"+aheadSuffix)).Err())
	require.NoError(t, a.Heartbeat(ctx))
	require.Zero(t, previous(), "Heartbeat keeps the ahead list's heartbeat alive")

	require.NoError(t, b.rdb.Del(ctx, b.lists.Heartbeat("A"), b.lists.Heartbeat("A"+aheadSuffix)).Err())
	require.Equal(t, 2*minFastMove, previous())
	requireList(t, b, b.lists.Processing("A"))
	requireList(t, b, b.lists.Ahead("A"))
	require.Equal(t, int64(2*minFastMove), b.rdb.LLen(ctx, b.lists.Output).Val())

	// The other way: the previous version's processing list, no ahead list.
	require.NoError(t, b.rdb.Del(ctx, b.lists.Output).Err())
	require.NoError(t, b.rdb.RPush(ctx, b.lists.Processing("old"), result(0), result(1)).Err())
	n, err := b.client.Drain(b.lists, "B", 0).RecoverOthers(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	requireList(t, b, b.lists.Output, results(0, 2)...)
}

// The poller is killed at every command of a sequence that moves batches
// natively (Fetch, Next into the ahead list, Ack of both, and so on),
// before or after the command reached Redis: every result is applied at
// least once, what the recovering instance sees is a tail of the push
// order, and nothing is left in any list.
func TestFastMoveKilledAtEveryStep(t *testing.T) {
	t.Parallel()
	const n = minFastMove
	const total = 3*n + 7
	for step := 1; step <= 16; step++ {
		for _, afterExec := range []bool{false, true} {
			for _, sameID := range []bool{false, true} {
				t.Run(fmt.Sprintf("step%d/afterExec=%v/sameID=%v", step, afterExec, sameID), func(t *testing.T) {
					t.Parallel()
					b := setup(t)
					ctx := t.Context()
					pushResults(t, b, total)
					k := &killer{afterExec: afterExec}
					k.left.Store(int64(step))
					dying := redis.NewClient(b.rdb.Options())
					dying.AddHook(k)
					t.Cleanup(func() { _ = dying.Close() })
					a := New(dying).Drain(b.lists, "A", 0)

					var applied [total]atomic.Int32
					commit := func(msgs []Message) {
						for _, m := range msgs {
							require.NoError(t, m.Err)
							var i int
							_, err := fmt.Sscan(m.Result.UID, &i)
							require.NoError(t, err)
							applied[i].Add(1)
						}
					}
					run := func() error {
						for {
							msgs, err := a.Fetch(ctx, n, 0)
							if err != nil || len(msgs) == 0 {
								return err
							}
							next, err := a.Next(ctx, n)
							if err != nil {
								return err
							}
							commit(msgs)
							if err := a.Ack(ctx, msgs, nil); err != nil {
								return err
							}
							commit(next)
							if err := a.Ack(ctx, next, nil); err != nil {
								return err
							}
						}
					}
					if err := run(); err != nil {
						require.ErrorIs(t, err, errKilled)
					}

					id := "B"
					if sameID {
						id = "A"
					} else {
						require.NoError(t, b.rdb.Del(ctx, b.lists.Heartbeat("A"), b.lists.Heartbeat("A"+aheadSuffix)).Err())
					}
					r := b.client.Drain(b.lists, id, 0)
					_, err := r.Recover(ctx)
					require.NoError(t, err)
					var order []string
					for {
						msgs, err := r.Fetch(ctx, n, 0)
						require.NoError(t, err)
						if len(msgs) == 0 {
							break
						}
						order = append(order, uidsOf(msgs)...)
						commit(msgs)
						require.NoError(t, r.Ack(ctx, msgs, nil))
					}
					for i := range applied {
						require.Positive(t, applied[i].Load(), "result %d was lost", i)
					}
					if all := seq(0, total); len(order) > 0 {
						require.Equal(t, all[total-len(order):], order)
					}
					requireList(t, b, b.lists.Output)
					for _, key := range []string{b.lists.Processing("A"), b.lists.Ahead("A"), b.lists.Processing("B"), b.lists.Ahead("B")} {
						requireList(t, b, key)
					}
				})
			}
		}
	}
}

// The proof copies the batch once per slice, so a batch heavier than four
// size limits is not moved natively (no LRANGE), whatever its count: the
// Lua path returns it, and Redis copies nothing per slice.
func TestFastMoveSkipsHeavyBatches(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	c, err := NewWithConfig(b.rdb, Config{MaxResultBytes: 1 << 10})
	require.NoError(t, err)
	log := &cmdLog{}
	b.rdb.AddHook(log)
	pad := strings.Repeat("p", 200)
	vals := make([]any, 2*minFastMove)
	for i := range vals {
		vals[i] = `{"uid":"` + fmt.Sprint(i) + `","attempt_uid":"a","type":"success","pad":"` + pad + `"}`
	}
	require.NoError(t, b.rdb.RPush(ctx, b.lists.Output, vals...).Err())
	d := c.Drain(b.lists, "A", 0)
	msgs, err := d.Fetch(ctx, 2*minFastMove, 0)
	require.NoError(t, err)
	require.Len(t, msgs, 2*minFastMove)
	require.NotContains(t, log.names, "lrange", "moved through Lua")
	require.NoError(t, d.Ack(ctx, msgs, nil))
}

// The native move copies the whole output list (COPY, then LTRIM) while
// that costs Redis less than SORT ... STORE of the batch: up to about 12
// batches of small results, under 4 of 1 KiB results (see fetchScript).
// Before, any list longer than four batches went through SORT, which
// costs about 0.2 µs of Redis per result whatever the list's length.
func TestNativeMoveCopiesWhileCheaperThanSort(t *testing.T) {
	t.Parallel()
	pad := strings.Repeat("p", 1000)
	for _, tc := range []struct {
		name  string
		total int // results queued, each batch minFastMove
		pad   string
		want  string // the command that moved the batch
	}{
		{"ten small batches", 10 * minFastMove, "", "copy"},
		{"twenty small batches", 20 * minFastMove, "", "sort"},
		{"six batches of 1 KiB results", 6 * minFastMove, pad, "sort"},
		{"three batches of 1 KiB results", 3 * minFastMove, pad, "copy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			d, admin, l := aclDrain(t, Config{})
			vals := make([]any, tc.total)
			for i := range vals {
				vals[i] = `{"uid":"` + fmt.Sprint(i) + `","attempt_uid":"a","type":"success","status":"` + tc.pad + `"}`
			}
			require.NoError(t, admin.RPush(ctx, l.Output, vals...).Err())
			calls := func(name string) int {
				info := admin.Info(ctx, "commandstats").Val()
				_, rest, ok := strings.Cut(info, "cmdstat_"+name+":calls=")
				if !ok {
					return 0
				}
				var n int
				_, _ = fmt.Sscanf(rest, "%d", &n)
				return n
			}
			copies, sorts := calls("copy"), calls("sort")
			msgs, err := d.Fetch(ctx, minFastMove, 0)
			require.NoError(t, err)
			require.Equal(t, seq(0, minFastMove), uidsOf(msgs))
			copied, sorted := calls("copy") > copies, calls("sort") > sorts
			if tc.want == "copy" {
				require.True(t, copied && !sorted, "moved by COPY: %v, by SORT: %v", copied, sorted)
			} else {
				require.True(t, sorted, "moved by SORT")
			}
			require.NoError(t, d.Ack(ctx, msgs, nil))
			require.EqualValues(t, tc.total-minFastMove, admin.LLen(ctx, l.Output).Val())
		})
	}
}
