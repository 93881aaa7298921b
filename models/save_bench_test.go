package models

import (
	"strconv"
	"testing"
	"time"

	"github.com/refresher/refresher/policy"
)

// BenchmarkSaveColumns measures what a save works out before its
// statement, per 1000 rows: "group" is GroupByID over a claim's rows with
// an attempt started (the dispatcher's Save: which columns changed), and
// "uniform" is Uniform over a batch of plain successes that all hold the
// same state (SaveSuccesses: which columns travel as one value).
//
//	go test ./models -run '^$' -bench SaveColumns
func BenchmarkSaveColumns(b *testing.B) {
	now := time.Date(2026, 3, 4, 5, 6, 7, 123456000, time.UTC)
	claimed := make([]Row, 1000)
	for i := range claimed {
		read := policy.State{RefreshAt: now.Add(-time.Minute)}
		r := Row{Key: strconv.Itoa(i + 1), State: read, Loaded: Loaded{State: read, OK: true, Unread: ClaimRest}}
		r.State.AttemptUID = "d1v5bqh6n88c" + strconv.Itoa(10000000+i)
		r.State.AttemptAt, r.State.AttemptNo, r.State.TimeoutAt, r.State.RefreshAt = now, 1, now.Add(time.Hour), now.Add(time.Hour)
		claimed[i] = r
	}
	b.Run("group", func(b *testing.B) {
		for b.Loop() {
			GroupByID(claimed, nil, false, false, nil)
		}
	})
	succeeded := make([]*Row, 1000)
	for i := range succeeded {
		succeeded[i] = &Row{Key: strconv.Itoa(i + 1), State: policy.State{RefreshAt: now.Add(time.Hour), LastSuccessAt: now}}
	}
	b.Run("uniform", func(b *testing.B) {
		for b.Loop() {
			Uniform(SuccessColumns, succeeded)
		}
	})
}
