package redisio

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/refresher/refresher/internal/testenv"
)

// BenchmarkFetchAck measures what a poller's batch of 1000 results costs
// Redis: Fetch and Ack (drain), Next while a batch is in flight and Ack
// (ahead), against the hand-written baseline's LPOP of as many. redis-cpu-µs/result is the CPU time of Redis's
// main thread over the calls (its /proc schedstat; the benchmark reports
// nothing when Redis does not run on this machine): the whole server's, so
// run it on a Redis of its own (REFRESHER_TEST_REDIS) for figures to quote.
//
//	go test ./redisio -run '^$' -bench FetchAck -benchtime 200x
func BenchmarkFetchAck(b *testing.B) {
	const n = 1000
	rdb, prefix := testenv.Redis(b)
	ctx := context.Background()
	c, err := NewWithConfig(rdb, Config{Now: time.Now})
	if err != nil {
		b.Fatal(err)
	}
	lists := DefaultLists(prefix + "k")
	vals := make([]any, n)
	for i := range vals {
		// The shape of the bench's results: a key and an xid.
		vals[i] = `{"uid":"` + strconv.Itoa(100000+i) + `","attempt_uid":"d4mc0r8k6bqs73e1q2` + strconv.Itoa(i%10) + `g","type":"success"}`
	}
	// The main thread of a local server: its pid, from INFO.
	var schedstat string
	if info, err := rdb.Info(ctx, "server").Result(); err == nil {
		if _, rest, ok := strings.Cut(info, "process_id:"); ok {
			pid := strings.TrimSpace(rest[:strings.IndexByte(rest, '\n')])
			schedstat = "/proc/" + pid + "/task/" + pid + "/schedstat"
		}
	}
	cpuNS := func() int64 {
		b, err := os.ReadFile(schedstat)
		if err != nil {
			return -1
		}
		v, _ := strconv.ParseInt(strings.Fields(string(b))[0], 10, 64)
		return v
	}
	fill := func(b *testing.B) {
		b.StopTimer()
		if err := rdb.RPush(ctx, lists.Output, vals...).Err(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	// timed runs f and adds Redis's CPU time over it to *ns.
	timed := func(ns *int64, f func()) {
		before := cpuNS()
		f()
		if after := cpuNS(); before >= 0 && after >= 0 {
			*ns += after - before
		}
	}
	report := func(b *testing.B, ns int64) {
		if ns > 0 {
			b.ReportMetric(float64(ns)/1e3/float64(b.N*n), "redis-cpu-µs/result")
		}
	}
	b.Run("drain", func(b *testing.B) {
		d := c.Drain(lists, "bench", 0)
		var ns int64
		for b.Loop() {
			fill(b)
			timed(&ns, func() {
				msgs, err := d.Fetch(ctx, n, 0)
				if err != nil || len(msgs) != n {
					b.Fatalf("fetched %d of %d: %v", len(msgs), n, err)
				}
				if err := d.Ack(ctx, msgs, nil); err != nil {
					b.Fatal(err)
				}
			})
		}
		report(b, ns)
	})
	// A busy poller's steady state: each batch is fetched ahead (Next)
	// while the one before it is in flight, then that one is acknowledged.
	b.Run("ahead", func(b *testing.B) {
		d := c.Drain(lists, "bench-ahead", 0)
		fill(b)
		prev, err := d.Fetch(ctx, n, 0)
		if err != nil || len(prev) != n {
			b.Fatalf("fetched %d of %d: %v", len(prev), n, err)
		}
		var ns int64
		for b.Loop() {
			fill(b)
			timed(&ns, func() {
				msgs, err := d.Next(ctx, n)
				if err != nil || len(msgs) != n {
					b.Fatalf("fetched %d of %d: %v", len(msgs), n, err)
				}
				if err := d.Ack(ctx, prev, nil); err != nil {
					b.Fatal(err)
				}
				prev = msgs
			})
		}
		report(b, ns)
	})
	// A poller behind a backlog: the output list holds eight batches when
	// each is fetched (the native move's COPY or SORT, see fetchScript).
	b.Run("backlog", func(b *testing.B) {
		d := c.Drain(lists, "bench-backlog", 0)
		for range 7 {
			fill(b)
		}
		var ns int64
		for b.Loop() {
			fill(b)
			timed(&ns, func() {
				msgs, err := d.Fetch(ctx, n, 0)
				if err != nil || len(msgs) != n {
					b.Fatalf("fetched %d of %d: %v", len(msgs), n, err)
				}
				if err := d.Ack(ctx, msgs, nil); err != nil {
					b.Fatal(err)
				}
			})
		}
		report(b, ns)
		b.StopTimer()
		if err := rdb.Del(ctx, lists.Output).Err(); err != nil {
			b.Fatal(err)
		}
	})
	b.Run("lpop", func(b *testing.B) {
		var ns int64
		for b.Loop() {
			fill(b)
			timed(&ns, func() {
				got, err := rdb.LPopCount(ctx, lists.Output, n).Result()
				if err != nil || len(got) != n {
					b.Fatalf("popped %d of %d: %v", len(got), n, err)
				}
			})
		}
		report(b, ns)
	})
}

// BenchmarkNativeMoveCopyOrSort measures what the fetch script's two
// native moves of a batch of 1000 cost Redis (INFO commandstats, µs of
// the main thread per batch), for output lists of several lengths and two
// sizes of result: COPY of the whole list, PERSIST and the two LTRIMs,
// against SORT ... BY nosort LIMIT STORE and the LTRIM of the output list.
// fetchScript picks the cheaper one from the list's memory and length. Run
// it on a Redis of its own (REFRESHER_TEST_REDIS):
//
//	go test ./redisio -run '^$' -bench NativeMoveCopyOrSort -benchtime 40x
func BenchmarkNativeMoveCopyOrSort(b *testing.B) {
	const k = 1000
	rdb, prefix := testenv.Redis(b)
	ctx := context.Background()
	out, dst := prefix+"o", prefix+"d"
	usec := func(names ...string) int64 {
		info, _ := rdb.Info(ctx, "commandstats").Result()
		var n int64
		for _, name := range names {
			if _, rest, ok := strings.Cut(info, "cmdstat_"+name+":"); ok {
				_, rest, _ = strings.Cut(rest, "usec=")
				v, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
				n += v
			}
		}
		return n
	}
	for _, pad := range []int{0, 900} {
		for _, total := range []int{2 * k, 4 * k, 8 * k, 12 * k, 16 * k, 32 * k} {
			vals := make([]any, total)
			for i := range vals {
				vals[i] = `{"uid":"` + strconv.Itoa(100000+i) + `","attempt_uid":"d4mc0r8k6bqs73e1q2` + strconv.Itoa(i%10) + `g","type":"success","status":"` + strings.Repeat("x", pad) + `"}`
			}
			for _, move := range []string{"copy", "sort"} {
				b.Run(fmt.Sprintf("result-%dB/list-%d/%s", len(vals[0].(string)), total, move), func(b *testing.B) {
					var us int64
					for b.Loop() {
						b.StopTimer()
						rdb.Del(ctx, out, dst)
						rdb.RPush(ctx, out, vals...)
						b.StartTimer()
						before := usec("copy", "sort", "ltrim", "persist")
						if move == "copy" {
							rdb.Copy(ctx, out, dst, 0, false)
							rdb.Persist(ctx, dst)
							rdb.LTrim(ctx, dst, 0, k-1)
						} else {
							rdb.Do(ctx, "SORT", out, "BY", "nosort", "LIMIT", 0, k, "STORE", dst)
						}
						rdb.LTrim(ctx, out, k, -1)
						us += usec("copy", "sort", "ltrim", "persist") - before
					}
					b.ReportMetric(float64(us)/float64(b.N), "redis-µs/batch")
				})
			}
		}
	}
}
