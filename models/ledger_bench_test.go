package models

import (
	"strconv"
	"testing"
	"time"

	"github.com/refresher/refresher/policy"
)

// BenchmarkLedgerInsert is the service's CPU for one batch's ledger
// entries (a dispatcher's pass: 1000 dispatched entries), up to the
// statement the driver gets.
func BenchmarkLedgerInsert(b *testing.B) {
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	es := make([]policy.Entry, 1000)
	for i := range es {
		es[i] = policy.Entry{At: now, Kind: "big_tables", Key: strconv.Itoa(100000 + i), Event: policy.EventDispatched,
			Attempt: "d4ks0m2h7ctg01q7vb1g", Planned: now}
	}
	b.ReportAllocs()
	var rows LedgerRows
	for b.Loop() {
		_, _ = LedgerValuesSQL("`refresher_ledger`", es, &rows)
	}
}
