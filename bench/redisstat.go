package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// redisProcess returns the pid of the Redis server rdb talks to, from its
// INFO, when that process runs on this machine; otherwise the oldest local
// redis-server (a server in a container reports its own pid namespace's),
// or 0.
func redisProcess(ctx context.Context, rdb *redis.Client) int {
	if info, err := rdb.Info(ctx, "server").Result(); err == nil {
		if pid, _ := strconv.Atoi(infoField(info, "process_id")); pid > 0 {
			if b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm")); err == nil &&
				strings.TrimSpace(string(b)) == "redis-server" {
				return pid
			}
		}
	}
	return findPID("redis-server")
}

// infoField returns the value of field in an INFO reply, or "".
func infoField(info, field string) string {
	for l := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), field+":"); ok {
			return v
		}
	}
	return ""
}

// commandStat is one command's line of INFO commandstats.
type commandStat struct{ calls, usec int64 }

// commandStats reads INFO commandstats (--redis-stats): the calls and the
// microseconds of the main thread per command since the server started, of
// every client of the server.
func (e *env) commandStats(ctx context.Context) map[string]commandStat {
	if !e.o.redisStats {
		return nil
	}
	info, err := e.rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil
	}
	out := map[string]commandStat{}
	for l := range strings.SplitSeq(info, "\n") {
		// cmdstat_lpop:calls=2,usec=6,usec_per_call=3.00,rejected_calls=0,failed_calls=0
		name, rest, ok := strings.Cut(strings.TrimSpace(l), ":")
		name, found := strings.CutPrefix(name, "cmdstat_")
		if !ok || !found {
			continue
		}
		var s commandStat
		for kv := range strings.SplitSeq(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "calls":
				s.calls, _ = strconv.ParseInt(v, 10, 64)
			case "usec":
				s.usec, _ = strconv.ParseInt(v, 10, 64)
			}
		}
		out[name] = s
	}
	return out
}

// printCommandStats prints the commands' change between before and after,
// per model of a run of n models: calls per 1000 models and µs of the main
// thread per model, busiest first. The workers' commands are in it (LPOP,
// RPUSH of the results), the same for every implementation, and so are the
// commands a script calls, which its EVALSHA's time includes too (so the
// lines do not add up to the server's time).
func printCommandStats(before, after map[string]commandStat, n int64) {
	if before == nil || after == nil || n <= 0 {
		return
	}
	type row struct {
		name string
		d    commandStat
	}
	var rows []row
	for name, a := range after {
		d := commandStat{a.calls - before[name].calls, a.usec - before[name].usec}
		if d.calls != 0 {
			rows = append(rows, row{name, d})
		}
	}
	slices.SortFunc(rows, func(a, b row) int { return int(b.d.usec - a.d.usec) })
	fmt.Println("    redis commands (calls per 1000 models, µs per model):")
	for _, r := range rows {
		fmt.Printf("      %-14s %8.1f %7.3f\n", r.name, float64(r.d.calls)*1000/float64(n), float64(r.d.usec)/float64(n))
	}
}
