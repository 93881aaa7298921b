package models

import "time"

// DefaultLateAfter is the late threshold's default: a row due for longer
// than this is late (see Counts.Late).
const DefaultLateAfter = time.Minute
