package redisio

import (
	"log/slog"
	"os"
	"testing"

	"github.com/refresher/refresher/internal/testenv"
)

// TestMain runs 8 tests at once: each has its own Redis keys (or its own
// server), and they mostly wait on Redis. go-redis's own lines (the
// Sentinel and Cluster tests' failovers) go through logForTests.
func TestMain(m *testing.M) {
	logForTests()
	os.Exit(testenv.RunParallel(m, 8))
}

// logForTests routes go-redis's lines to stderr through slog, warnings
// and errors only: leveled and attributed, as the commands log them.
func logForTests() {
	LogTo(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
}
