package sqlitestore

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
)

// BenchmarkSuccessesVsBaseline applies 1000 successes to a table shaped
// like the bench's (an INTEGER PRIMARY KEY id, migrated, 50,000 rows), the
// two ways alternated within each iteration: "service" is SaveSuccesses in
// a transaction of its own, as the poller runs it for a batch of plain
// successes (the statement and its JSON built in the timed part);
// "baseline" is the bench's hand-written SQLite baseline's UPDATE
// (bench/sqlite.go, finish) in autocommit. Each reports the process's CPU
// (user + system) per batch, SQLite's included, and their ratio.
//
//	go test ./models/sqlitestore -run '^$' -bench SuccessesVsBaseline -benchtime 100x
func BenchmarkSuccessesVsBaseline(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "app.db"))
	must(b, err)
	defer s.Close()
	exec(b, s, "CREATE TABLE bm (id INTEGER NOT NULL PRIMARY KEY, input_url VARCHAR(255) NOT NULL)")
	_, err = s.Migrate(ctx, []string{"bm"}, io.Discard, false)
	must(b, err)
	const total, n = 50000, 1000
	exec(b, s, "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM c WHERE i < ?) "+
		"INSERT INTO bm (id, input_url, refresh_at) SELECT i, 'https://example.com/exports/' || i || '.csv', ? FROM c", total, dbTime(base))
	exec(b, s, "ANALYZE")
	tbl := models.Table{Name: "bm", Key: "id", Payload: []string{"input_url"}}
	const baselineUpdate = "UPDATE bm AS t SET refresh_attempt_uid = NULL, refresh_timeout_at = NULL," +
		" refresh_attempt_no = 0, refresh_failing_since = NULL, refresh_last_error = NULL," +
		" refresh_last_success_at = ?, refresh_at = ?" +
		" FROM (SELECT value ->> 0 AS id, value ->> 1 AS g FROM json_each(?)) AS j WHERE t.id = j.id AND t.refresh_attempt_uid = j.g"
	now := base.Add(30 * time.Minute)
	w, err := policy.Succeeded(policy.Result{Type: policy.ResultSuccess}, now, everyMinuteSchedule{})
	must(b, err)
	ways := []string{"service", "baseline"}
	var took [2]time.Duration
	b.ResetTimer()
	for it := 0; b.Loop(); it++ {
		for j := range ways {
			how := (j + it) % 2 // each way goes first every other iteration
			lo := ((it*2 + j) * n) % total
			uid := fmt.Sprintf("d1v5bqh6%d%05d", how, it%100000)
			// Untimed: rows lo+1..lo+n run an attempt (uid || id).
			exec(b, s, "UPDATE bm SET refresh_attempt_uid = ? || substr('000000' || id, -6), refresh_attempt_no = 1,"+
				" refresh_attempt_at = ?, refresh_timeout_at = ?, refresh_at = ? WHERE id > ? AND id <= ?",
				uid, dbTime(base), dbTime(base.Add(time.Hour)), dbTime(base.Add(time.Hour)), lo, lo+n)
			succ := make([]models.Success, n)
			for i := range succ {
				id := lo + i + 1
				succ[i] = models.Success{Key: fmt.Sprint(id), AttemptUID: fmt.Sprintf("%s%06d", uid, id), State: w}
			}
			c0 := processCPU()
			changed := 0
			if how == 0 {
				err = s.Tx(ctx, func(tx models.Tx) error {
					written, err := tx.SaveSuccesses(ctx, tbl, now, succ)
					for _, ok := range written {
						if ok {
							changed++
						}
					}
					return err
				})
			} else {
				var pairs strings.Builder
				pairs.WriteByte('[')
				for i, sc := range succ {
					if i > 0 {
						pairs.WriteByte(',')
					}
					fmt.Fprintf(&pairs, `[%s,%q]`, sc.Key, sc.AttemptUID)
				}
				pairs.WriteByte(']')
				changed, err = models.RowsAffected(s.DB().ExecContext(ctx, baselineUpdate, dbTime(now), dbTime(w.RefreshAt), pairs.String()))
			}
			took[how] += processCPU() - c0
			if err != nil || changed != n {
				b.Fatalf("%s: %d of %d rows written: %v", ways[how], changed, n, err)
			}
		}
	}
	perBatch := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(b.N) }
	b.ReportMetric(perBatch(took[0]), "service-cpu-ms/batch")
	b.ReportMetric(perBatch(took[1]), "baseline-cpu-ms/batch")
	b.ReportMetric(took[0].Seconds()/took[1].Seconds(), "service/baseline")
}

// processCPU is the CPU time (user and system) the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
