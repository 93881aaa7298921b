package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
)

// BenchApplySuccesses applies a batch of success results to the rows
// with the given keys of tbl (all of them, each running an attempt
// started afresh, untimed, before each try) in one transaction, the two
// ways a poller can, alternated within each iteration (each first every
// other time) so that a busy machine weighs on both alike: "read-decide-save" locks and reads the
// rows (LockByKeys), decides each with policy.Apply and saves them (Save),
// as the poller does for the results it must read; "save-successes"
// writes them unread (SaveSuccesses), as it does for plain successes. It
// reports each one's milliseconds per batch and their ratio (read over
// unread: how many times faster the unread write is). The drivers'
// benchmarks call it:
//
//	go test ./models/mysqlstore -run '^$' -bench ApplySuccesses -benchtime 20x
func BenchApplySuccesses(b *testing.B, s models.Store, tbl models.Table, keys []string) {
	ctx := context.Background()
	pol := policy.Policy{}
	now := Base.Add(30 * time.Minute) // before the attempts time out (1h)
	var took [2]time.Duration         // read-decide-save, save-successes
	b.ResetTimer()
	for it := 0; b.Loop(); it++ {
		for j := range 2 {
			how := (j + it) % 2 // each way goes first every other iteration
			uids := make([]string, len(keys))
			started := make([]models.Row, len(keys))
			for i, k := range keys {
				uids[i] = fmt.Sprintf("d1v5bqh6%d%05d%06d", how, it%100000, i)
				started[i] = models.Row{Key: k, State: pol.Start(policy.State{RefreshAt: Base}, Base, uids[i])}
			}
			if err := s.Tx(ctx, func(tx models.Tx) error { return tx.Save(ctx, tbl, started) }); err != nil {
				b.Fatal(err)
			}
			t0 := time.Now()
			err := s.Tx(ctx, func(tx models.Tx) error {
				if how == 1 {
					return saveSuccessesUnread(ctx, tx, tbl, keys, uids, now)
				}
				return readDecideSave(ctx, tx, tbl, keys, uids, now, pol)
			})
			took[how] += time.Since(t0)
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	n := float64(b.N)
	b.ReportMetric(took[0].Seconds()*1000/n, "read-decide-save-ms/batch")
	b.ReportMetric(took[1].Seconds()*1000/n, "save-successes-ms/batch")
	b.ReportMetric(took[0].Seconds()/took[1].Seconds(), "read/unread")
}

// readDecideSave applies a success to each row of keys after reading it.
func readDecideSave(ctx context.Context, tx models.Tx, tbl models.Table, keys, uids []string, now time.Time, pol policy.Policy) error {
	rows, err := tx.LockByKeys(ctx, tbl, keys)
	if err != nil {
		return err
	}
	save := make([]models.Row, 0, len(rows))
	for i, k := range keys {
		r := rows[k]
		r.State, _ = pol.Apply(r.State, policy.Result{AttemptUID: uids[i], Type: policy.ResultSuccess}, now, everyMinute{}, nil, 0)
		save = append(save, r)
	}
	return tx.Save(ctx, tbl, save)
}

// saveSuccessesUnread applies a success to each row of keys unread.
func saveSuccessesUnread(ctx context.Context, tx models.Tx, tbl models.Table, keys, uids []string, now time.Time) error {
	succ := make([]models.Success, len(keys))
	for i, k := range keys {
		w, err := policy.Succeeded(policy.Result{AttemptUID: uids[i], Type: policy.ResultSuccess}, now, everyMinute{})
		if err != nil {
			return err
		}
		succ[i] = models.Success{Key: k, AttemptUID: uids[i], State: w}
	}
	written, err := tx.SaveSuccesses(ctx, tbl, now, succ)
	for i := range written {
		if !written[i] {
			return fmt.Errorf("row %s not written", keys[i])
		}
	}
	return err
}
