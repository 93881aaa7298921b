package models_test

import (
	"runtime"
	"testing"

	"github.com/refresher/refresher/internal/payload"
	. "github.com/refresher/refresher/models"
)

// TestClaimRowsReusesReleased: a released batch comes back cleared for the
// next claim of its size, across garbage collections, and a small claim
// never takes one.
func TestClaimRowsReusesReleased(t *testing.T) {
	rows := ClaimRows(1000)
	rows = append(rows, Row{Key: "a", Payload: payload.Fields{{Name: "x", Value: 1}}}, Row{Key: "b"})
	ReleaseRows(rows)
	runtime.GC() // a sync.Pool dropped what it held at the second
	runtime.GC()
	small := ClaimRows(1)
	eq(t, cap(small), 1, "a small claim allocates its own")
	again := ClaimRows(1000)
	eq(t, len(again), 0, "empty")
	eq(t, &again[:1][0] == &rows[0], true, "the released batch")
	eq(t, again[:2], []Row{{}, {}}, "cleared")
	other := ClaimRows(1000)
	eq(t, &other[:1][0] == &rows[0], false, "handed out once")
}
