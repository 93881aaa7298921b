package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/models/sqlitestore"
	"github.com/refresher/refresher/models/stores"
)

// sqliteStore is --store sqlite: a database file in a new temporary
// directory (or --sqlite-file), removed afterwards unless --keep. SQLite
// runs inside each child, so its CPU is the child's.
type sqliteStore struct {
	o   options
	dir string // the temporary directory the parent made, if any
	db  *sql.DB
}

func openSQLite(ctx context.Context, o options, create bool) (*sqliteStore, error) {
	s := &sqliteStore{o: o}
	if !create {
		return s, nil
	}
	if s.o.sqliteFile == "" {
		dir, err := os.MkdirTemp("", "refresher-bench-")
		if err != nil {
			return nil, err
		}
		s.dir, s.o.sqliteFile = dir, filepath.Join(dir, o.database+".db")
	}
	db, err := openSQLiteDB(s.o.sqliteFile)
	if err != nil {
		return nil, err
	}
	s.db = db
	return s, db.PingContext(ctx)
}

// openSQLiteDB opens path as sqlitestore.Open does (WAL, synchronous=NORMAL,
// a busy timeout, temp_store=MEMORY, BEGIN IMMEDIATE), without its
// one-instance lock.
func openSQLiteDB(path string) (*sql.DB, error) {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", sqlitestore.BusyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "temp_store(MEMORY)")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(sqlitestore.DefaultMaxConnections)
	db.SetMaxIdleConns(sqlitestore.DefaultMaxConnections)
	return db, nil
}

func (s *sqliteStore) close(keep bool) {
	if s.db != nil {
		s.db.Close()
	}
	if s.dir != "" && !keep {
		os.RemoveAll(s.dir)
	}
}

func (s *sqliteStore) childArgs() []string {
	return []string{"--sqlite-file", s.o.sqliteFile, "--database", s.o.database}
}

func (s *sqliteStore) serverPIDs() []int { return nil }

func (s *sqliteStore) describe(ctx context.Context) string {
	var version string
	_ = s.db.QueryRowContext(ctx, "SELECT sqlite_version()").Scan(&version)
	return fmt.Sprintf("SQLite %s (pure Go, WAL, synchronous=NORMAL, file %s)", version, s.o.sqliteFile)
}

// sqliteTime is t as the SQLite store writes times.
func sqliteTime(t time.Time) string {
	return t.UTC().Truncate(time.Microsecond).Format(sqlitestore.TimeFormat)
}

// sqliteTimeExpr is the SQL text of unix microseconds us in
// sqlitestore.TimeFormat.
func sqliteTimeExpr(us string) string {
	return fmt.Sprintf("strftime('%%Y-%%m-%%d %%H:%%M:%%S', (%s) / 1000000, 'unixepoch') || printf('.%%06d+00:00', (%s) %% 1000000)", us, us)
}

// seed fills the table with INSERT ... SELECT from a recursive CTE.
func (s *sqliteStore) seed(ctx context.Context, rows int64) error {
	stmts := []string{
		"DROP TABLE IF EXISTS " + benchTable,
		"DROP TABLE IF EXISTS " + sqlitestore.MigrationsTable,
		"CREATE TABLE " + benchTable + ` (
			id INTEGER NOT NULL PRIMARY KEY,
			input_url VARCHAR(255) NOT NULL,
			name VARCHAR(64) NULL,
			updated_at DATETIME NULL)`,
	}
	for _, q := range stmts {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("seed: %s: %w", firstLine(q), err)
		}
	}
	if _, err := sqlitestore.Migrate(ctx, s.db, []string{benchTable}, io.Discard, false); err != nil {
		return fmt.Errorf("seed: migrate: %w", err)
	}
	q := `WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < ?1)
		INSERT INTO ` + benchTable + ` (id, input_url, name, updated_at, refresh_at)
		SELECT n, 'https://example.com/exports/' || n || '.csv', 'model ' || n,
		       '2026-01-01 00:00:00.000000+00:00', ` + sqliteTimeExpr("?2 + n * 1000000") + ` FROM seq`
	if _, err := s.db.ExecContext(ctx, q, rows, farFuture.UnixMicro()); err != nil {
		return fmt.Errorf("seed rows: %w", err)
	}
	if _, err := s.db.ExecContext(ctx, "ANALYZE"); err != nil {
		return fmt.Errorf("seed: analyze: %w", err)
	}
	return nil
}

func (s *sqliteStore) applyPlan(ctx context.Context, p *plan) error {
	rank := fmt.Sprintf("(id * %d / %d)", p.due, p.rows)
	q := fmt.Sprintf(`UPDATE %s SET
		refresh_at = CASE WHEN %s <= %d THEN %s ELSE ? END,
		%s
		WHERE %s > ((id - 1) * %d / %d)`,
		benchTable, rank, p.active, sqliteTimeExpr(fmt.Sprintf("%d + %s * %d", p.base.UnixMicro(), rank, p.step.Microseconds())),
		resetState, rank, p.due, p.rows)
	if _, err := s.db.ExecContext(ctx, q, sqliteTime(farFuture)); err != nil {
		return fmt.Errorf("reset due rows: %w", err)
	}
	return checkPlan(ctx, p, func(before time.Time) (n int64, err error) {
		err = s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+benchTable+" WHERE refresh_at <= ?", sqliteTime(before)).Scan(&n)
		return n, err
	})
}

func (s *sqliteStore) applied(ctx context.Context, since time.Time) (n int64, err error) {
	err = s.db.QueryRowContext(ctx, appliedQuery("?"), sqliteTime(since)).Scan(&n)
	return n, err
}

// explain returns EXPLAIN QUERY PLAN of the claim query, without and with
// the cursor, in the form sqlitestore sends it.
func (s *sqliteStore) explain(ctx context.Context, batch int) (string, error) {
	cols := `"id", "refresh_rrule", ` + strings.Join(quoteAll(stateColumnsForExplain, `"`), ", ") + `, "input_url"`
	base := "SELECT " + cols + ` FROM "` + benchTable + `" INDEXED BY "idx_refresh_at" WHERE "refresh_at" <= ?`
	tail := fmt.Sprintf(` AND "id" IS NOT NULL ORDER BY "refresh_at" LIMIT %d`, batch)
	now := time.Now().UTC()
	var out strings.Builder
	for _, q := range []struct {
		label, sql string
		args       []any
	}{
		{"claim", base + tail, []any{sqliteTime(now)}},
		{"claim from cursor", base + ` AND "refresh_at" >= ?` + tail, []any{sqliteTime(now), sqliteTime(now.Add(-time.Minute))}},
	} {
		fmt.Fprintf(&out, "EXPLAIN QUERY PLAN %s\n  %s\n", q.label, strings.ReplaceAll(q.sql, cols, "<key, rrule, 11 state columns, payload>"))
		rows, err := s.db.QueryContext(ctx, "EXPLAIN QUERY PLAN "+q.sql, q.args...)
		if err != nil {
			return "", fmt.Errorf("explain: %w", err)
		}
		for rows.Next() {
			var id, parent, notused int
			var detail string
			if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
				rows.Close()
				return "", err
			}
			fmt.Fprintf(&out, "  -> %s\n", detail)
		}
		rows.Close()
	}
	return out.String(), nil
}

// settle checkpoints the WAL, so a run does not start with its
// predecessor's checkpoint to do.
func (s *sqliteStore) settle(ctx context.Context) {
	_, _ = s.db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)")
}

func (s *sqliteStore) openService(ctx context.Context) (models.Store, error) {
	return stores.Open(ctx, "sqlite://"+s.o.sqliteFile, stores.Options{})
}

// sqliteBaseline's transactions start with BEGIN IMMEDIATE (SQLite's one
// write lock stands for SKIP LOCKED); its bulk UPDATEs take the per-row
// values (id, attempt UID) from one JSON array through json_each. Its
// claim and its UPDATE of results take turns through write, as the
// service's writers do (sqlitestore's write lock): without it the second
// of two writers waits in SQLite's busy handler, which sleeps milliseconds
// between its tries, and the comparison would measure that.
type sqliteBaseline struct {
	db    *sql.DB
	write sqliteWriter
}

// sqliteWriter is a mutex that, like sqlitestore's, leaves SQLite's write
// lock free for sqlitestore.TurnGap after every sqlitestore.TurnRun of
// handovers, so that the loop does not starve other writers of its file.
type sqliteWriter struct {
	mu              sync.Mutex
	runStart, freed time.Time
}

func (w *sqliteWriter) lock() {
	w.mu.Lock()
	now := time.Now()
	switch {
	case w.freed.IsZero() || now.Sub(w.freed) >= sqlitestore.TurnGap:
		w.runStart = now
	case now.Sub(w.runStart) >= sqlitestore.TurnRun:
		time.Sleep(sqlitestore.TurnGap - now.Sub(w.freed))
		w.runStart = time.Now()
	}
}

func (w *sqliteWriter) unlock() {
	w.freed = time.Now()
	w.mu.Unlock()
}

func (s *sqliteStore) openBaseline(ctx context.Context) (baselineDB, error) {
	db, err := openSQLiteDB(s.o.sqliteFile)
	if err != nil {
		return nil, err
	}
	return &sqliteBaseline{db: db}, db.PingContext(ctx)
}

func (b *sqliteBaseline) close() { b.db.Close() }

func (b *sqliteBaseline) claim(ctx context.Context, now, cursor, timeoutAt time.Time, limit int) ([]claimed, time.Time, error) {
	b.write.lock()
	defer b.write.unlock()
	tx, err := b.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE (_txlock)
	if err != nil {
		return nil, time.Time{}, err
	}
	defer tx.Rollback()
	q := "SELECT id, input_url, refresh_attempt_no, refresh_at FROM " + benchTable + " INDEXED BY idx_refresh_at WHERE refresh_at <= ?"
	args := []any{sqliteTime(now)}
	if !cursor.IsZero() {
		q += " AND refresh_at >= ?"
		args = append(args, sqliteTime(cursor))
	}
	q += " ORDER BY refresh_at LIMIT " + strconv.Itoa(limit)
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, time.Time{}, err
	}
	out := make([]claimed, 0, limit)
	var last any
	for rows.Next() {
		var c claimed
		if err := rows.Scan(&c.id, &c.url, &c.attemptNo, &last); err != nil {
			rows.Close()
			return nil, time.Time{}, err
		}
		c.attemptNo++
		c.uid = newAttemptUID(now)
		out = append(out, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, time.Time{}, err
	}
	var lastAt time.Time
	if len(out) > 0 {
		if lastAt, err = sqliteParse(last); err != nil {
			return nil, time.Time{}, err
		}
		const upd = "UPDATE " + benchTable + " AS t SET refresh_attempt_uid = j.u, refresh_attempt_no = t.refresh_attempt_no + 1," +
			" refresh_attempt_at = ?, refresh_timeout_at = ?, refresh_at = ?, refresh_status = NULL" +
			" FROM (SELECT value ->> 0 AS id, value ->> 1 AS u FROM json_each(?)) AS j WHERE t.id = j.id"
		if _, err := tx.ExecContext(ctx, upd, sqliteTime(now), sqliteTime(timeoutAt), sqliteTime(timeoutAt),
			pairsJSON(len(out), func(i int) (int64, string) { return out[i].id, out[i].uid })); err != nil {
			return nil, time.Time{}, err
		}
	}
	return out, lastAt.UTC(), tx.Commit()
}

// pairsJSON is [[id,"uid"],...] of n rows; pair returns row i's.
func pairsJSON(n int, pair func(i int) (int64, string)) string {
	doc := append(make([]byte, 0, 40*n), '[')
	for i := range n {
		id, uid := pair(i)
		if i > 0 {
			doc = append(doc, ',')
		}
		doc = fmt.Appendf(doc, `[%d,%q]`, id, uid)
	}
	return string(append(doc, ']'))
}

func (b *sqliteBaseline) finish(ctx context.Context, now, next time.Time, done []finished) error {
	const q = "UPDATE " + benchTable + " AS t SET refresh_attempt_uid = NULL, refresh_timeout_at = NULL," +
		" refresh_attempt_no = 0, refresh_failing_since = NULL, refresh_last_error = NULL," +
		" refresh_last_success_at = ?, refresh_at = ?" +
		" FROM (SELECT value ->> 0 AS id, value ->> 1 AS g FROM json_each(?)) AS j WHERE t.id = j.id AND t.refresh_attempt_uid = j.g"
	b.write.lock()
	defer b.write.unlock()
	_, err := b.db.ExecContext(ctx, q, sqliteTime(now), sqliteTime(next),
		pairsJSON(len(done), func(i int) (int64, string) { return done[i].id, done[i].uid }))
	return err
}

func (b *sqliteBaseline) nextDue(ctx context.Context) (time.Time, bool, error) {
	var next any
	if err := b.db.QueryRowContext(ctx, "SELECT MIN(refresh_at) FROM "+benchTable).Scan(&next); err != nil || next == nil {
		return time.Time{}, false, err
	}
	t, err := sqliteParse(next)
	return t, err == nil, err
}

// sqliteParse reads a time column: the driver returns a time.Time for
// columns declared DATETIME, the text as written otherwise.
func sqliteParse(v any) (time.Time, error) {
	switch v := v.(type) {
	case time.Time:
		return v.UTC(), nil
	case string:
		return time.Parse(sqlitestore.TimeFormat, v)
	case []byte:
		return time.Parse(sqlitestore.TimeFormat, string(v))
	}
	return time.Time{}, fmt.Errorf("refresh_at %v (%T) is not a time", v, v)
}
