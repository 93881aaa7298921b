package redisio

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/redis/go-redis/v9"
)

// LogTo routes go-redis's own log lines to l, leveled (see goRedisLevel)
// and attributed (component=go-redis), instead of its bare lines on
// stderr: a Sentinel failover ("sentinel: new master ..."), a sentinel
// that does not answer, a cluster with every node failing. go-redis has
// one logger per process, so the last call wins; the commands that run
// for long (run, worker) call it with their logger. A nil l is
// slog.Default().
func LogTo(l *slog.Logger) {
	if l == nil {
		l = slog.Default()
	}
	redis.SetLogger(goRedisLog{l})
}

// goRedisLog is go-redis's Logging interface over a slog.Logger.
type goRedisLog struct{ l *slog.Logger }

func (g goRedisLog) Printf(ctx context.Context, format string, v ...any) {
	msg := strings.TrimSpace(fmt.Sprintf(format, v...))
	msg = strings.TrimPrefix(msg, "redis: ")
	g.l.Log(ctx, goRedisLevel(format), msg, "component", "go-redis")
}

// goRedisLevel gives a go-redis line, which has none, a level from its
// format: a recovered panic is an error; a failed dial of the pool is
// debug, since the call that needed the connection returns the same error
// to its caller, which reports it once; any other failure is a warning
// (go-redis tries the next sentinel or node); the rest (a new master, a
// sentinel discovered) is information.
func goRedisLevel(format string) slog.Level {
	f := strings.ToLower(format)
	switch {
	case strings.Contains(f, "panic"):
		return slog.LevelError
	case strings.Contains(f, "failed to dial"):
		return slog.LevelDebug
	case strings.Contains(f, "fail"), strings.Contains(f, "error"), strings.Contains(f, "invalid"), strings.Contains(f, "cannot"):
		return slog.LevelWarn
	}
	return slog.LevelInfo
}
