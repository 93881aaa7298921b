package refresher

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/redisio"
)

// The mixtures of a flood round (runFlood): the good results alone, among
// small garbage, and among the same garbage with one in ten oversized.
const (
	floodAlone = iota
	floodSmall
	floodBig
)

var floodNames = [...]string{"alone", "small garbage", "with oversized"}

// TestGarbageFloodAppliesEveryGoodResult: 10,000 garbage messages (not
// JSON, wrong shape, unknown uid) mixed into 10,000 good results of running
// attempts, and the same with 1,000 of them oversized (100 KiB each): every
// good result is applied, every garbage message is dead-lettered, and
// nothing is left behind in Redis or running in the table. These are
// counts, which a busy machine does not change; how much slower the
// garbage makes the service is BenchmarkGarbageFlood's.
func TestGarbageFloodAppliesEveryGoodResult(t *testing.T) {
	if testing.Short() {
		t.Skip("pushes 100 MB of results through the service")
	}
	t.Parallel()
	runFlood(t, []int{floodBig, floodSmall})
}

// BenchmarkGarbageFlood reports how much longer the service takes to
// apply 10,000 good results among 10,000 garbage messages than alone
// (small-garbage/alone), and among the same garbage with 1,000 of them
// oversized, 100 KiB each (oversized/alone), with the time alone:
//
//	go test ./refresher -run '^$' -bench GarbageFlood -benchtime 1x
//
// Measured on 2 quiet cores with MariaDB (load average under 1, eight
// runs), the good results alone took 0.23-0.32 s, the small garbage
// 1.3-1.8x and the mix with oversized messages 1.8-2.5x (median 2.1x); with
// -race, 1.8-2.0x and 2.1-2.4x; on a loaded machine under -race, 6.45x was
// seen. The oversized ones cost Redis CPU that no client can spare it:
// Redis copies each into its script engine (about 0.14 ms per 100 KiB:
// copies, page faults and its Lua hashing every byte), takes its SHA-1
// (0.11 ms) and frees it. Each round logs the Redis CPU it took: 0.36-0.41
// s for the round with oversized messages (0.02 s alone, 0.05-0.06 s with
// the small garbage), so Redis's single thread, sharing 2 cores with the
// database and the service, then works longer than the database.
//
// The poller keeps the garbage off the good results' way: a batch is
// topped up to 1,000 results (so the flood does not multiply the
// transactions), and the next batch is fetched, its oversized messages
// stubbed inside Redis, while the database applies the current one.
//
// Two rounds of each mixture run, interleaved, and the faster of each
// counts: the machine may be busy for a moment.
func BenchmarkGarbageFlood(b *testing.B) {
	var small, big, alone float64
	n := 0
	for b.Loop() {
		best := runFlood(b, []int{floodBig, floodAlone, floodSmall, floodAlone, floodBig, floodSmall})
		small += best[floodSmall].Seconds() / best[floodAlone].Seconds()
		big += best[floodBig].Seconds() / best[floodAlone].Seconds()
		alone += best[floodAlone].Seconds()
		n++
	}
	b.ReportMetric(small/float64(n), "small-garbage/alone")
	b.ReportMetric(big/float64(n), "oversized/alone")
	b.ReportMetric(alone/float64(n), "alone-s")
}

// runFlood runs the rounds of order on one service and one table of
// 10,000 rows, due again each day: each round answers every job with a
// success, mixed as the round says, and checks that every good result was
// applied, every garbage message dead-lettered, and nothing left behind.
// It returns the fastest time of each mixture that ran, from the moment
// the round's messages reach the output list until the last good result
// is applied. Each round's messages are pushed to a list of their own and
// renamed onto the output list in one step, so the time measured is the
// service's, not the pushes'.
func runFlood(tb testing.TB, order []int) (best [3]time.Duration) {
	tb.Helper()
	const n = 10_000
	b := setup(tb, setupOpts{timeout: 24 * time.Hour})
	uids := b.insertN(n, t0)
	// MaxSleep 100ms: the dispatcher, idle during a round, finds the rows
	// due again soon after the clock moves.
	svc := b.start(func(c *Config) { c.FetchBlock = time.Second; c.MaxSleep = 100 * time.Millisecond })
	applied := results(svc, "success", "applied")
	ctx := context.Background()

	// jobs waits for the n jobs of one round and takes them off the input
	// list.
	jobs := func() []redisio.Job {
		tb.Helper()
		testenv.Eventually(tb, 30*time.Second, fmt.Sprintf("%d jobs pushed", n), func() bool {
			return b.llen(b.kind.Lists.Input) == n
		})
		raws, err := b.rdb.LRange(ctx, b.kind.Lists.Input, 0, -1).Result()
		require.NoError(tb, err)
		require.NoError(tb, b.rdb.Del(ctx, b.kind.Lists.Input).Err())
		out := make([]redisio.Job, len(raws))
		for i, raw := range raws {
			require.NoError(tb, json.Unmarshal([]byte(raw), &out[i]))
		}
		return out
	}
	success := func(j redisio.Job) string {
		raw, err := json.Marshal(redisio.Result{UID: j.UID, AttemptUID: j.AttemptUID, Type: "success"})
		require.NoError(tb, err)
		return string(raw)
	}
	// redisCPU reads the CPU time the Redis server has used (INFO cpu).
	redisCPU := func() time.Duration {
		var total time.Duration
		for line := range strings.SplitSeq(b.rdb.Info(ctx, "cpu").Val(), "\r\n") {
			for _, field := range []string{"used_cpu_sys:", "used_cpu_user:"} {
				if v, ok := strings.CutPrefix(line, field); ok {
					s, _ := strconv.ParseFloat(v, 64)
					total += time.Duration(s * float64(time.Second))
				}
			}
		}
		return total
	}
	// round renames msgs onto the output list and returns how long the
	// service takes until the success counter reaches want, and the CPU
	// time Redis used meanwhile.
	staging := b.kind.Lists.Output + "-staging"
	round := func(msgs []any, want float64) (took, redisTook time.Duration) {
		tb.Helper()
		for i := 0; i < len(msgs); i += 1000 {
			require.NoError(tb, b.rdb.RPush(ctx, staging, msgs[i:min(i+1000, len(msgs))]...).Err())
		}
		cpu := redisCPU()
		start := time.Now()
		require.NoError(tb, b.rdb.Rename(ctx, staging, b.kind.Lists.Output).Err())
		// The poller wakes the wait after each batch it applies.
		testenv.Eventually(tb, 2*time.Minute, fmt.Sprintf("%v good results applied", want), func() bool { return applied() >= want })
		return time.Since(start), redisCPU() - cpu
	}

	oversized := `{"uid":"m0001","attempt_uid":"a","type":"success","pad":"` + strings.Repeat("p", 100<<10) + `"}`
	deadLetters := func() float64 { return toFloat(svc.Metrics().DeadLetters.WithLabelValues("items")) }
	var dead float64 // dead letters expected so far
	for r, mix := range order {
		if r > 0 {
			// The rows are due again at the next 14:00.
			b.clock.Advance(24 * time.Hour)
		}
		batch := jobs()
		msgs := make([]any, 0, 2*n)
		for i, j := range batch {
			msgs = append(msgs, success(j))
			if mix == floodAlone {
				continue
			}
			switch i % 10 {
			case 0, 1:
				msgs = append(msgs, fmt.Sprintf("not json %d", i))
			case 2, 3:
				msgs = append(msgs, fmt.Sprintf(`{"uid":%d,"attempt_uid":"a","type":"success"}`, i)) // wrong shape
			case 4, 5:
				msgs = append(msgs, fmt.Sprintf(`{"hello":"world","n":%d,"nested":{"a":[1,2,3]}}`, i)) // unknown shape
			case 6, 7, 8:
				msgs = append(msgs, fmt.Sprintf(`{"uid":"nobody%d","attempt_uid":"a","type":"success"}`, i)) // unknown uid
			case 9:
				if mix == floodBig {
					msgs = append(msgs, oversized)
				} else {
					msgs = append(msgs, fmt.Sprintf("not json either %d", i))
				}
			}
		}
		took, redisTook := round(msgs, float64((r+1)*n))
		best[mix] = min(cmp.Or(best[mix], took), took)
		tb.Logf("round %d, %s: %s, of which Redis used %s of CPU", r, floodNames[mix],
			took.Round(time.Millisecond), redisTook.Round(time.Millisecond))
		// Every garbage message is dead-lettered (the dead list keeps the
		// last MaxDead, 10,000), and nothing is left behind.
		dead += float64(len(msgs) - n)
		waitCounter(tb, deadLetters, dead, "dead letters")
		require.Equal(tb, dead, deadLetters(), "dead letters after round %d", r)
		testenv.Eventually(tb, 10*time.Second, "output and processing lists empty", func() bool { return b.inRedis("test-a") == 0 })
		if mix != floodAlone {
			require.Equal(tb, int64(n), b.llen(b.kind.Lists.Dead))
		}
		now := b.clock.Now()
		for uid, st := range b.states(uids) {
			require.False(tb, st.Running(), "model %s still running after round %d", uid, r)
			require.True(tb, st.LastSuccessAt.Equal(now), "model %s: last success %s, want %s", uid, st.LastSuccessAt, now)
		}
	}
	return best
}
