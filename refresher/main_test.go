package refresher

import (
	"os"
	"testing"

	"github.com/refresher/refresher/internal/testenv"
)

// TestMain runs 8 tests at once: each has its own database and Redis keys
// (internal/testenv), and they mostly wait on the servers and on the
// service's loops.
func TestMain(m *testing.M) {
	os.Exit(testenv.RunParallel(m, 8))
}
