package mysqlstore

import (
	"os"
	"testing"

	"github.com/refresher/refresher/internal/testenv"
)

// TestMain runs 8 tests at once: each has its own database, and they
// mostly wait on the server.
func TestMain(m *testing.M) {
	os.Exit(testenv.RunParallel(m, 8))
}
