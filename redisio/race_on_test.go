//go:build race

package redisio

// raceEnabled: the race detector is on; a sync.Pool then drops a quarter
// of what it is given, so allocation counts are not the program's.
const raceEnabled = true
