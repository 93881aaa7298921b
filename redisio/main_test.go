package redisio

import (
	"os"
	"testing"

	"github.com/refresher/refresher/internal/testenv"
)

// TestMain runs 8 tests at once: each has its own Redis keys (or its own
// server), and they mostly wait on Redis.
func TestMain(m *testing.M) {
	os.Exit(testenv.RunParallel(m, 8))
}
