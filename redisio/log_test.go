package redisio

import (
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
)

func TestGoRedisLevel(t *testing.T) {
	t.Parallel()
	for format, want := range map[string]slog.Level{
		"sentinel: new master=%q addr=%q":                              slog.LevelInfo,
		"sentinel: discovered new sentinel=%q for master=%q":           slog.LevelInfo,
		"sentinel: GetMasterAddrByName addr=%s, master=%q failed: %s":  slog.LevelWarn,
		"redis: pings to all nodes are failing, picking a random node": slog.LevelWarn,
		"redis: connection pool: failed to dial after %d attempts: %v": slog.LevelDebug,
		"addIdleConn panic: %+v":                                       slog.LevelError,
		"push: error reading push notification: %v":                    slog.LevelWarn,
	} {
		require.Equal(t, want, goRedisLevel(format), format)
	}
}

// TestLogToRoutesSentinelLines: a failover client whose only sentinel
// does not answer logs through the logger LogTo was given, at WARN, with
// component=go-redis, not on stderr. Not parallel: go-redis's logger is
// the process's.
func TestLogToRoutesSentinelLines(t *testing.T) {
	var out testenv.SyncBuffer
	LogTo(slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(logForTests)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing answers there now
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName: "chores-master", SentinelAddrs: []string{addr},
		DialTimeout: time.Second, MaxRetries: -1,
	})
	t.Cleanup(func() { _ = rdb.Close() })
	require.Error(t, rdb.Ping(t.Context()).Err())

	var line string
	for l := range strings.Lines(out.String()) {
		if strings.Contains(l, "sentinel: GetMasterAddrByName") && strings.Contains(l, "chores-master") {
			line = l
		}
	}
	require.NotEmpty(t, line, "no sentinel line through the logger:\n%s", out.String())
	require.Contains(t, line, "level=WARN")
	require.Contains(t, line, "component=go-redis")
	require.Contains(t, line, addr)
}
