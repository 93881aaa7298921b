package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/refresher/refresher/models/mysqlstore"

	"github.com/refresher/refresher/models"
)

// benchTable is the kind's table in the benchmark's own database.
const benchTable = "bench_models"

// farFuture is refresh_at of rows that are not due in a run.
var farFuture = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// plan says which rows are due in a run and when. The due set is spread
// evenly over the table's ids: id is due when id*due/rows (integer
// division) grows at id, and that value is its rank, 1..due. Rows with
// rank <= active are due at base + rank*step; the other due rows and all
// the rest of the table are not due (2030).
type plan struct {
	rows, due, active int64
	base              time.Time
	step              time.Duration
}

func (p *plan) rank(id int64) (int64, bool) {
	if id < 1 || id > p.rows {
		return 0, false
	}
	r := id * p.due / p.rows
	return r, r > (id-1)*p.due/p.rows
}

// refreshAt returns the refresh_at the plan gave row id, if it is active.
func (p *plan) refreshAt(id int64) (time.Time, bool) {
	r, ok := p.rank(id)
	if !ok || r > p.active {
		return time.Time{}, false
	}
	return p.base.Add(time.Duration(r) * p.step), true
}

// seed (re)creates the table with rows models, none of them due.
func seed(ctx context.Context, db *sql.DB, rows int64) error {
	stmts := []string{
		"DROP TABLE IF EXISTS " + benchTable,
		"DROP TABLE IF EXISTS " + mysqlstore.MigrationsTable,
		"CREATE TABLE " + benchTable + ` (
			id BIGINT NOT NULL PRIMARY KEY,
			input_url VARCHAR(255) NOT NULL,
			name VARCHAR(64) NULL,
			updated_at DATETIME(6) NULL)`,
	}
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("seed: %s: %w", firstLine(s), err)
		}
	}
	if _, err := mysqlstore.Migrate(ctx, db, []string{benchTable}, io.Discard, false); err != nil {
		return fmt.Errorf("seed: migrate: %w", err)
	}
	const chunk = 250_000
	for lo := int64(1); lo <= rows; lo += chunk {
		hi := min(lo+chunk-1, rows)
		q := fmt.Sprintf(`INSERT INTO %s (id, input_url, name, updated_at, refresh_at)
			SELECT seq, CONCAT('https://example.com/exports/', seq, '.csv'), CONCAT('model ', seq),
			       '2026-01-01', ? + INTERVAL seq SECOND
			FROM seq_1_to_%d WHERE seq BETWEEN %d AND %d`, benchTable, rows, lo, hi)
		if _, err := db.ExecContext(ctx, q, farFuture); err != nil {
			return fmt.Errorf("seed rows %d-%d: %w", lo, hi, err)
		}
	}
	if _, err := db.ExecContext(ctx, "ANALYZE TABLE "+benchTable); err != nil {
		return fmt.Errorf("seed: analyze: %w", err)
	}
	return nil
}

// apply resets the due set of p: rows of rank <= active get their planned
// refresh_at and a fresh state (never refreshed), the other due rows are
// moved out of the way. Rows outside the due set are left as seeded.
func (p *plan) apply(ctx context.Context, db *sql.DB) error {
	rank := fmt.Sprintf("(id * %d DIV %d)", p.due, p.rows)
	q := fmt.Sprintf(`UPDATE %s SET
		refresh_at = IF(%s <= %d, ? + INTERVAL (%s * %d) MICROSECOND, ?),
		refresh_attempt_uid = NULL, refresh_attempt_at = NULL, refresh_attempt_no = 0,
		refresh_timeout_at = NULL, refresh_disabled_until_update = NULL,
		refresh_disabled_user_friendly_reason = NULL, refresh_failing_since = NULL,
		refresh_last_success_at = NULL, refresh_last_error = NULL, refresh_status = NULL
		WHERE %s > ((id - 1) * %d DIV %d)`,
		benchTable, rank, p.active, rank, p.step.Microseconds(), rank, p.due, p.rows)
	res, err := db.ExecContext(ctx, q, p.base, farFuture)
	if err != nil {
		return fmt.Errorf("reset due rows: %w", err)
	}
	if n, _ := res.RowsAffected(); n != p.due {
		// Affected rows omits rows already in the wanted state; count instead.
		var c int64
		if err := db.QueryRowContext(ctx, fmt.Sprintf("SELECT COUNT(*) FROM %s WHERE refresh_at <= ?", benchTable),
			p.base.Add(time.Duration(p.active+1)*p.step)).Scan(&c); err != nil {
			return err
		}
		if c != p.active {
			return fmt.Errorf("reset due rows: %d rows planned, want %d", c, p.active)
		}
	}
	return nil
}

// applied counts the rows whose result was applied since t.
func applied(ctx context.Context, db *sql.DB, since time.Time) (int64, error) {
	var n int64
	err := db.QueryRowContext(ctx, fmt.Sprintf(
		"SELECT COUNT(*) FROM %s WHERE refresh_last_success_at >= ? AND refresh_attempt_uid IS NULL AND refresh_attempt_no = 0", benchTable),
		since).Scan(&n)
	return n, err
}

// explainClaim returns EXPLAIN of the dispatcher's claim query, without and
// with the cursor, in the form models.Tx.ClaimDue sends it.
func explainClaim(ctx context.Context, db *sql.DB, batch int) (string, error) {
	cols := append([]string{"`id`", "`refresh_rrule`"}, quoteAll(stateColumnsForExplain)...)
	cols = append(cols, "`input_url`")
	base := "SELECT " + strings.Join(cols, ", ") + " FROM `" + benchTable + "` FORCE INDEX (`idx_refresh_at`) WHERE `refresh_at` <= ?"
	tail := fmt.Sprintf(" AND `id` IS NOT NULL ORDER BY `refresh_at` LIMIT %d FOR UPDATE SKIP LOCKED", batch)
	now := time.Now().UTC()
	var out strings.Builder
	for _, q := range []struct {
		label string
		sql   string
		args  []any
	}{
		{"claim", base + tail, []any{now}},
		{"claim from cursor", base + " AND `refresh_at` >= ?" + tail, []any{now, now.Add(-time.Minute)}},
	} {
		fmt.Fprintf(&out, "EXPLAIN %s\n  %s\n", q.label, strings.ReplaceAll(q.sql, strings.Join(cols, ", "), "<key, rrule, 11 state columns, payload>"))
		rows, err := db.QueryContext(ctx, "EXPLAIN "+q.sql, q.args...)
		if err != nil {
			return "", fmt.Errorf("explain: %w", err)
		}
		names, _ := rows.Columns()
		vals := make([]sql.NullString, len(names))
		ptrs := make([]any, len(names))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				rows.Close()
				return "", err
			}
			var parts []string
			for i, n := range names {
				if n == "id" || n == "select_type" || !vals[i].Valid {
					continue
				}
				parts = append(parts, n+"="+vals[i].String)
			}
			fmt.Fprintf(&out, "  -> %s\n", strings.Join(parts, " "))
		}
		rows.Close()
	}
	return out.String(), nil
}

var stateColumnsForExplain = []string{
	models.ColRefreshAt, models.ColAttemptUID, models.ColAttemptAt, models.ColAttemptNo, models.ColTimeoutAt,
	models.ColDisabledUntil, models.ColDisabledReason, models.ColFailingSince,
	models.ColLastSuccessAt, models.ColLastError, models.ColStatus,
}

func quoteAll(cols []string) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = "`" + c + "`"
	}
	return out
}

// waitPurge waits (up to max) until InnoDB has purged the history that the
// previous run left, so that one run does not pay for its predecessor's
// delete-marked index entries. It returns the history length it ended at.
func waitPurge(ctx context.Context, db *sql.DB, max time.Duration) int64 {
	deadline := time.Now().Add(max)
	var n int64 = -1
	for {
		err := db.QueryRowContext(ctx,
			"SELECT `COUNT` FROM information_schema.INNODB_METRICS WHERE NAME = 'trx_rseg_history_len'").Scan(&n)
		if err != nil || n < 1000 || time.Now().After(deadline) {
			return n
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
