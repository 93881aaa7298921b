package refresher

import (
	"log/slog"
	"os"
	"testing"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/redisio"
)

// TestMain runs 8 tests at once: each has its own database and Redis keys
// (internal/testenv), and they mostly wait on the servers and on the
// service's loops. go-redis's own lines (the Sentinel tests' failovers)
// go to stderr through slog, warnings and errors only, as the commands
// log them (redisio.LogTo).
func TestMain(m *testing.M) {
	redisio.LogTo(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	os.Exit(testenv.RunParallel(m, 8))
}
