package sqlitestore

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
)

// TestSaveSuccessesAcrossBatches checks which rows SaveSuccesses says it
// wrote when its successes take more than one UPDATE: every row of a
// batch written whole (counted, not returned), and of a batch with a row
// that does not match (rolled back to its savepoint and written again,
// returning the keys), before and after each other.
func TestSaveSuccessesAcrossBatches(t *testing.T) {
	ctx := context.Background()
	now := base.Add(time.Hour)
	for _, miss := range []int{-1, 10, 1500, 2400} { // -1: none misses
		t.Run(fmt.Sprint("miss ", miss), func(t *testing.T) {
			s, err := Open(ctx, filepath.Join(t.TempDir(), "app.db"))
			must(t, err)
			defer s.Close()
			tbl := itemsTable(t, s, "INTEGER")
			const n = 2500 // three UPDATEs: 1000, 1000, 500
			insertItems(t, s, n)
			rows := make([]models.Row, n)
			succ := make([]models.Success, n)
			w, err := policy.Succeeded(policy.Result{Type: policy.ResultSuccess}, now, everyHour{})
			must(t, err)
			for i := range rows {
				key, uid := fmt.Sprint(i+1), fmt.Sprintf("d1v5bqh6n88c7%07d", i)
				rows[i] = models.Row{Key: key, State: policy.State{AttemptUID: uid, TimeoutAt: now.Add(time.Hour)}}
				succ[i] = models.Success{Key: key, AttemptUID: uid, State: w}
			}
			if miss >= 0 {
				succ[miss].AttemptUID = "d1v5bqh6n88c7zzzzzzz" // another attempt's answer
			}
			must(t, s.Tx(ctx, func(tx models.Tx) error { return tx.Save(ctx, tbl, rows) }))
			var written []bool
			must(t, s.Tx(ctx, func(tx models.Tx) error {
				written, err = tx.SaveSuccesses(ctx, tbl, now, succ)
				return err
			}))
			eq(t, len(written), n, "one answer per success")
			for i, ok := range written {
				if ok != (i != miss) {
					t.Fatalf("success %d (miss %d): written %v", i, miss, ok)
				}
			}
			var left int
			must(t, s.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM items WHERE refresh_attempt_uid IS NOT NULL").Scan(&left))
			eq(t, left, n-countTrue(written), "rows still running")
		})
	}
}

type everyHour struct{}

func (everyHour) Next(after time.Time) time.Time { return after.Truncate(time.Hour).Add(time.Hour) }

func countTrue(b []bool) int {
	n := 0
	for _, v := range b {
		if v {
			n++
		}
	}
	return n
}
