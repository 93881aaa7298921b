package models

import "sync"

// The rows of a claim are the largest allocation of a dispatcher's pass: a
// Row holds its state twice (as read, and as changed since), about half a
// kilobyte, so a pass of 1000 rows allocated and zeroed half a megabyte, a
// third of its bytes, for the garbage collector to reclaim. The drivers'
// claims take their slice from ClaimRows, and the dispatcher hands each
// batch back with ReleaseRows once the claim's transaction is over, for the
// next claim.
//
// A free list, not a sync.Pool: a pool keeps what a goroutine puts back on
// its processor's private slot, where the next claim, on another processor
// after its network waits, does not look; half the claims missed it.

// freeRows holds at most maxFreeRows cleared slices of at least
// minPooledRows rows: as many as dispatchers claim at once, about; the
// rest are left to the garbage collector.
var freeRows struct {
	sync.Mutex
	list [][]Row
}

const (
	// minPooledRows is the smallest slice ClaimRows takes from the list
	// (and ReleaseRows keeps): a small claim allocates its own.
	minPooledRows = 64
	// maxFreeRows bounds the list: 8 slices of 1000 rows are 4 MB.
	maxFreeRows = 8
)

// ClaimRows returns an empty slice with room for n rows, reused from a
// released batch when one is large enough.
func ClaimRows(n int) []Row {
	if n >= minPooledRows {
		freeRows.Lock()
		for i := len(freeRows.list) - 1; i >= 0; i-- {
			if rows := freeRows.list[i]; cap(rows) >= n {
				last := len(freeRows.list) - 1
				freeRows.list[i] = freeRows.list[last]
				freeRows.list[last] = nil
				freeRows.list = freeRows.list[:last]
				freeRows.Unlock()
				return rows
			}
		}
		freeRows.Unlock()
	}
	return make([]Row, 0, n)
}

// ReleaseRows hands back the slice of a claim (or of SuccessRows) that
// nothing refers to any more (copies of its rows, their payload maps and texts may live on): the
// next ClaimRows may reuse it. The rows are cleared, so that the slice
// keeps nothing they referred to alive.
func ReleaseRows(rows []Row) {
	if cap(rows) < minPooledRows {
		return
	}
	rows = rows[:cap(rows)]
	clear(rows)
	freeRows.Lock()
	if len(freeRows.list) < maxFreeRows {
		freeRows.list = append(freeRows.list, rows[:0])
	}
	freeRows.Unlock()
}
