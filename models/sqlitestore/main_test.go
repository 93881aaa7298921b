package sqlitestore

import (
	"os"
	"testing"

	"github.com/refresher/refresher/internal/testenv"
)

// TestMain runs 8 tests at once: each has its own database (a file or
// memory), and much of their time is the files' writes.
func TestMain(m *testing.M) {
	os.Exit(testenv.RunParallel(m, 8))
}
