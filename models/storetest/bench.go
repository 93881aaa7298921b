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
// with the given keys of tbl (all of them, each running an attempt that
// every iteration starts afresh, untimed) in one transaction, the two ways
// a poller can: "read-decide-save" locks and reads the rows (LockByKeys),
// decides each with policy.Apply and saves them (Save), as the poller
// does for results it must read; "save-successes" writes them unread
// (SaveSuccesses), as it does for plain successes. The drivers' benchmarks
// call it, so that the two compare on one server in one run:
//
//	go test ./models/mysqlstore -run '^$' -bench ApplySuccesses -benchtime 20x
func BenchApplySuccesses(b *testing.B, s models.Store, tbl models.Table, keys []string) {
	ctx := context.Background()
	pol := policy.Policy{}
	now := Base.Add(30 * time.Minute) // before the attempts time out (1h)
	for _, how := range []string{"read-decide-save", "save-successes"} {
		b.Run(fmt.Sprintf("%s/%d", how, len(keys)), func(b *testing.B) {
			for it := 0; b.Loop(); it++ {
				b.StopTimer()
				started := make([]models.Row, len(keys))
				uids := make([]string, len(keys))
				for i, k := range keys {
					uids[i] = fmt.Sprintf("d1v5bqh6n%05d%06d", it%100000, i)
					started[i] = models.Row{Key: k, State: pol.Start(policy.State{RefreshAt: Base}, Base, uids[i])}
				}
				if err := s.Tx(ctx, func(tx models.Tx) error { return tx.Save(ctx, tbl, started) }); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				err := s.Tx(ctx, func(tx models.Tx) error {
					if how == "save-successes" {
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
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
