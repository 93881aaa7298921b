package mysqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"io"
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
// like the bench's (a BIGINT primary key id, migrated, 50,000 rows), three
// ways alternated within each iteration: "service" is SaveSuccesses in a
// transaction of its own (START TRANSACTION, the UPDATE, COMMIT), as the
// poller runs it for a batch of plain successes, the statement built in
// the timed part; "baseline" is the bench's hand-written MariaDB
// baseline's UPDATE (bench/mysql.go, finish) in autocommit; "baseline-tx"
// is that UPDATE in a transaction, which separates the statement's cost
// from the transaction's round trips. Each reports the wall time and the
// CPU of the connection's server thread (from /proc, when the server runs
// on this machine) per batch.
//
//	go test ./models/mysqlstore -run '^$' -bench SuccessesVsBaseline -benchtime 100x
func BenchmarkSuccessesVsBaseline(b *testing.B) {
	ctx := context.Background()
	db, err := Open(ctx, testenv.MySQLDSN(b))
	must(b, err)
	defer db.Close()
	db.SetMaxOpenConns(1) // one connection, one server thread to read
	s := New(db)
	exec(b, db, "CREATE TABLE bm (id BIGINT NOT NULL PRIMARY KEY, input_url VARCHAR(255) NOT NULL)")
	_, err = Migrate(ctx, db, []string{"bm"}, io.Discard, false)
	must(b, err)
	const total, n = 50000, 1000
	exec(b, db, "INSERT INTO bm (id, input_url, refresh_at) SELECT seq, CONCAT('https://example.com/exports/', seq, '.csv'), ? FROM seq_1_to_50000", dbTime(base))
	exec(b, db, "ANALYZE TABLE bm")
	tbl := models.Table{Name: "bm", Key: "id", Payload: []string{"input_url"}}
	const baselineUpdate = "UPDATE bm AS t JOIN JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT PATH '$[0]', g CHAR(20) PATH '$[1]')) AS j" +
		" ON t.id = j.id AND t.refresh_attempt_uid = j.g SET t.refresh_attempt_uid = NULL, t.refresh_timeout_at = NULL," +
		" t.refresh_attempt_no = 0, t.refresh_failing_since = NULL, t.refresh_last_error = NULL," +
		" t.refresh_last_success_at = ?, t.refresh_at = ?"
	now := base.Add(30 * time.Minute)
	w, err := policy.Succeeded(policy.Result{Type: policy.ResultSuccess}, now, everyMinute{})
	must(b, err)
	thread := serverThread(b, db)
	ways := []string{"service", "baseline", "baseline-tx"}
	var wall, cpu [3]time.Duration
	b.ResetTimer()
	for it := 0; b.Loop(); it++ {
		for j := range ways {
			how := (j + it) % len(ways) // each way goes first in turn
			lo := ((it*len(ways) + j) * n) % total
			uid := fmt.Sprintf("d1v5bqh6%d%05d", how, it%100000)
			// Untimed: rows lo+1..lo+n run an attempt (uid || id).
			exec(b, db, "UPDATE bm SET refresh_attempt_uid = CONCAT(?, LPAD(id, 6, '0')), refresh_attempt_no = 1,"+
				" refresh_attempt_at = ?, refresh_timeout_at = ?, refresh_at = ? WHERE id > ? AND id <= ?",
				uid, dbTime(base), dbTime(base.Add(time.Hour)), dbTime(base.Add(time.Hour)), lo, lo+n)
			succ := make([]models.Success, n)
			for i := range succ {
				id := lo + i + 1
				succ[i] = models.Success{Key: strconv.Itoa(id), AttemptUID: fmt.Sprintf("%s%06d", uid, id), State: w}
			}
			c0, t0 := thread(), time.Now()
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
				args := []any{pairs.String(), dbTime(now), dbTime(w.RefreshAt)}
				if how == 1 {
					changed, err = models.RowsAffected(db.ExecContext(ctx, baselineUpdate, args...))
				} else {
					err = s.Tx(ctx, func(tx models.Tx) error {
						var err error
						changed, err = models.RowsAffected(tx.(*Tx).tx.ExecContext(ctx, baselineUpdate, args...))
						return err
					})
				}
			}
			wall[how] += time.Since(t0)
			cpu[how] += thread() - c0
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

// serverThread returns a function reading the CPU time the server thread
// of db's one connection has used (0 when the server's /proc is not
// readable: another machine, or MySQL without a TID column).
func serverThread(b *testing.B, db *sql.DB) func() time.Duration {
	var tid int64
	if err := db.QueryRow("SELECT TID FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()").Scan(&tid); err != nil {
		return func() time.Duration { return 0 }
	}
	pids, _ := os.ReadDir("/proc")
	for _, p := range pids {
		path := "/proc/" + p.Name() + "/task/" + strconv.FormatInt(tid, 10) + "/schedstat"
		if _, err := os.Stat(path); err != nil {
			continue
		}
		return func() time.Duration {
			raw, err := os.ReadFile(path)
			if err != nil {
				return 0
			}
			ns, _ := strconv.ParseInt(strings.Fields(string(raw))[0], 10, 64)
			return time.Duration(ns)
		}
	}
	return func() time.Duration { return 0 }
}

// everyMinute is a schedule for BenchmarkSuccessesVsBaseline's successes.
type everyMinute struct{}

func (everyMinute) Next(after time.Time) time.Time {
	return after.Truncate(time.Minute).Add(time.Minute)
}
