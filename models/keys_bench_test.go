package models

import (
	"strconv"
	"testing"

	"github.com/refresher/refresher/policy"
)

// BenchmarkBatchKeys measures the per-batch key checks of the save paths
// on a batch of MaxSaveBatch rows with distinct integer keys: LastWins (the
// dispatcher's Save) and SuccessRows (the poller's plain successes).
func BenchmarkBatchKeys(b *testing.B) {
	rows := make([]Row, MaxSaveBatch)
	succ := make([]Success, MaxSaveBatch)
	for i := range rows {
		k := strconv.Itoa(100000 + i*7919%99991)
		rows[i].Key = k
		succ[i] = Success{Key: k, AttemptUID: "d4n0q4a5n1p0bb6b6h20", State: policy.State{AttemptNo: 1}}
	}
	b.Run("LastWins", func(b *testing.B) {
		for b.Loop() {
			if out, _ := LastWins(rows, nil); len(out) != len(rows) {
				b.Fatal(len(out))
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(rows)), "ns/row")
	})
	b.Run("SuccessRows", func(b *testing.B) {
		for b.Loop() {
			out, _, err := SuccessRows(Table{Name: "t"}, succ)
			if err != nil || len(out) != len(succ) {
				b.Fatal(err)
			}
			ReleaseRows(out)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(succ)), "ns/row")
	})
}
