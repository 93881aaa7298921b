package refresher

import (
	"os"
	"runtime/debug"
)

// DefaultGCPercent is the garbage collector's target percent (GOGC) the
// service runs with when the GOGC environment variable is unset: the heap
// may grow to three times what is live after a collection, not two.
//
// The service's live heap is small (a few batches of rows and results),
// so at Go's default of 100 it collects several times per batch and the
// collector took about a fifth of its CPU in the full-cycle bench. At 200
// the process CPU per model was about 20% lower and the peak RSS about
// 7 MB higher (42 -> 49 MB; docs/performance.md); 400 saved little more
// and cost 18 MB.
const DefaultGCPercent = 200

// SetGCPercent sets the garbage collector's percent to DefaultGCPercent
// unless GOGC is set (the operator's choice wins, "off" included), for
// the process that runs the Service (`refresher run`), and returns the
// percent in effect.
func SetGCPercent() int {
	if _, set := os.LookupEnv("GOGC"); set {
		p := debug.SetGCPercent(100)
		debug.SetGCPercent(p)
		return p
	}
	debug.SetGCPercent(DefaultGCPercent)
	return DefaultGCPercent
}
