package pgstore

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
)

// BenchmarkSuccessesVsBaseline applies 1000 successes to a table shaped
// like the bench's (a bigint primary key id, migrated, 50,000 rows), three
// ways alternated within each iteration: "service" is SaveSuccesses in a
// transaction of its own (BEGIN, the UPDATE, COMMIT), as the poller runs it
// for a batch of plain successes, the statement built in the timed part;
// "baseline" is the bench's hand-written PostgreSQL baseline's UPDATE
// (bench/postgres.go, finish) in autocommit; "baseline-tx" is that UPDATE
// in a transaction, which separates the statement's cost from the
// transaction's round trips. Each reports the wall time and the CPU of the
// database's backends (from /proc, when the server runs on this machine)
// per batch.
//
//	go test ./models/pgstore -run '^$' -bench SuccessesVsBaseline -benchtime 100x
func BenchmarkSuccessesVsBaseline(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, testenv.PostgresURL(b), 2)
	must(b, err)
	defer s.Close()
	exec(b, s, "CREATE TABLE bm (id bigint NOT NULL PRIMARY KEY, input_url varchar(255) NOT NULL)")
	_, err = s.Migrate(ctx, []string{"bm"}, nil, false)
	must(b, err)
	const total, n = 50000, 1000
	exec(b, s, "INSERT INTO bm (id, input_url, refresh_at) SELECT g, 'https://example.com/exports/' || g || '.csv', $1 FROM generate_series(1, $2::int) g", base, total)
	exec(b, s, "ANALYZE bm")
	tbl := models.Table{Name: "bm", Key: "id", Payload: []string{"input_url"}}
	const baselineUpdate = "UPDATE bm AS t SET refresh_attempt_uid = NULL, refresh_timeout_at = NULL," +
		" refresh_attempt_no = 0, refresh_failing_since = NULL, refresh_last_error = NULL," +
		" refresh_last_success_at = $3, refresh_at = $4" +
		" FROM unnest($1::bigint[], $2::text[]) AS v(id, g) WHERE t.id = v.id AND t.refresh_attempt_uid = v.g"
	now := base.Add(30 * time.Minute)
	w, err := policy.Succeeded(policy.Result{Type: policy.ResultSuccess}, now, everyMinute{})
	must(b, err)
	backend := backendCPU(b, s)
	ways := []string{"service", "baseline", "baseline-tx"}
	var wall, cpu [3]time.Duration
	b.ResetTimer()
	for it := 0; b.Loop(); it++ {
		for j := range ways {
			how := (j + it) % len(ways) // each way goes first in turn
			lo := ((it*len(ways) + j) * n) % total
			uid := fmt.Sprintf("d1v5bqh6%d%05d", how, it%100000)
			// Untimed: rows lo+1..lo+n run an attempt (uid || id).
			exec(b, s, "UPDATE bm SET refresh_attempt_uid = $1 || lpad(id::text, 6, '0'), refresh_attempt_no = 1,"+
				" refresh_attempt_at = $2, refresh_timeout_at = $3, refresh_at = $3 WHERE id > $4 AND id <= $5",
				uid, base, base.Add(time.Hour), lo, lo+n)
			succ := make([]models.Success, n)
			ids, uids := make([]int64, n), make([]string, n)
			for i := range succ {
				id := lo + i + 1
				succ[i] = models.Success{Key: strconv.Itoa(id), AttemptUID: fmt.Sprintf("%s%06d", uid, id), State: w}
				ids[i], uids[i] = int64(id), succ[i].AttemptUID
			}
			c0, t0 := backend(), time.Now()
			changed := 0
			switch how {
			case 0:
				err = s.Tx(ctx, func(tx models.Tx) error {
					written, err := tx.SaveSuccesses(ctx, tbl, now, succ)
					for _, ok := range written {
						if ok {
							changed++
						}
					}
					return err
				})
			case 1:
				tag, e := s.Pool().Exec(ctx, baselineUpdate, ids, uids, now, w.RefreshAt)
				changed, err = int(tag.RowsAffected()), e
			default:
				tx, e := s.Pool().Begin(ctx)
				must(b, e)
				tag, e := tx.Exec(ctx, baselineUpdate, ids, uids, now, w.RefreshAt)
				changed, err = int(tag.RowsAffected()), e
				must(b, tx.Commit(ctx))
			}
			wall[how] += time.Since(t0)
			cpu[how] += backend() - c0
			if err != nil || changed != n {
				b.Fatalf("%s: %d of %d rows written: %v", ways[how], changed, n, err)
			}
		}
	}
	perBatch := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(b.N) }
	for i, way := range ways {
		b.ReportMetric(perBatch(wall[i]), way+"-ms/batch")
		b.ReportMetric(perBatch(cpu[i]), way+"-server-cpu-ms/batch")
	}
}

// backendCPU returns a function reading the CPU time the backends of s's
// database (the test's own) have used (0 when their /proc is not
// readable).
func backendCPU(b *testing.B, s *Store) func() time.Duration {
	return func() time.Duration {
		rows, err := s.Pool().Query(context.Background(), "SELECT pid FROM pg_stat_activity WHERE datname = current_database()")
		must(b, err)
		defer rows.Close()
		var sum time.Duration
		for rows.Next() {
			var pid int
			must(b, rows.Scan(&pid))
			raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/schedstat")
			if err != nil {
				continue
			}
			ns, _ := strconv.ParseInt(strings.Fields(string(raw))[0], 10, 64)
			sum += time.Duration(ns)
		}
		return sum
	}
}

// everyMinute is a schedule for BenchmarkSuccessesVsBaseline's successes.
type everyMinute struct{}

func (everyMinute) Next(after time.Time) time.Time {
	return after.Truncate(time.Minute).Add(time.Minute)
}
