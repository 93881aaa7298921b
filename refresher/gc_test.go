package refresher

import (
	"os"
	"runtime/debug"
	"testing"
)

// The service collects at DefaultGCPercent unless GOGC says otherwise.
func TestSetGCPercent(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })

	t.Setenv("GOGC", "")
	debug.SetGCPercent(150) // as GOGC=150 would have set it at start
	if got := SetGCPercent(); got != 150 {
		t.Errorf("with GOGC set: SetGCPercent() = %d, want 150 (left alone)", got)
	}
	if got := debug.SetGCPercent(100); got != 150 {
		t.Errorf("with GOGC set: GC percent %d, want 150", got)
	}

	// t.Setenv restores GOGC afterwards; unset it for this part.
	unsetenv(t, "GOGC")
	if got := SetGCPercent(); got != DefaultGCPercent {
		t.Errorf("without GOGC: SetGCPercent() = %d, want %d", got, DefaultGCPercent)
	}
	if got := debug.SetGCPercent(100); got != DefaultGCPercent {
		t.Errorf("without GOGC: GC percent %d, want %d", got, DefaultGCPercent)
	}
}

// unsetenv unsets key for the rest of the test (t.Setenv first, so that
// the test restores it).
func unsetenv(t *testing.T, key string) {
	t.Helper()
	t.Setenv(key, "")
	if err := os.Unsetenv(key); err != nil {
		t.Fatal(err)
	}
}
