package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/models/mysqlstore"
	"github.com/refresher/refresher/models/stores"
)

// mysqlStore is --store mysql: MariaDB or MySQL at --mysql, database
// --database.
type mysqlStore struct {
	o     options
	admin *sql.DB // without a database, to create and drop it
	db    *sql.DB // the benchmark's database
	pid   int
}

func dsnWithDB(dsn, db string) string {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return dsn
	}
	cfg.DBName = db
	return cfg.FormatDSN()
}

func openMySQL(ctx context.Context, o options, create bool) (*mysqlStore, error) {
	s := &mysqlStore{o: o}
	if !create {
		return s, nil
	}
	admin, err := sql.Open("mysql", o.mysqlDSN)
	if err != nil {
		return nil, err
	}
	s.admin = admin
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS `"+o.database+"`"); err != nil {
		admin.Close()
		return nil, fmt.Errorf("create database %s: %w", o.database, err)
	}
	dcfg, _ := mysql.ParseDSN(dsnWithDB(o.mysqlDSN, o.database))
	// As mysqlstore.Open: the claim query is sent with its values inlined,
	// which is what EXPLAIN must see.
	dcfg.ParseTime, dcfg.Loc, dcfg.InterpolateParams = true, time.UTC, true
	dcfg.Params = map[string]string{"time_zone": "'+00:00'"}
	conn, err := mysql.NewConnector(dcfg)
	if err != nil {
		admin.Close()
		return nil, err
	}
	s.db = sql.OpenDB(conn)
	if s.pid = findPID("mariadbd"); s.pid == 0 {
		s.pid = findPID("mysqld")
	}
	return s, nil
}

func (s *mysqlStore) close(keep bool) {
	if s.db != nil {
		s.db.Close()
	}
	if s.admin != nil {
		if !keep {
			_, _ = s.admin.Exec("DROP DATABASE IF EXISTS `" + s.o.database + "`")
		}
		s.admin.Close()
	}
}

func (s *mysqlStore) childArgs() []string {
	return []string{"--mysql", s.o.mysqlDSN, "--database", s.o.database}
}

func (s *mysqlStore) serverPIDs() []int {
	if s.pid == 0 {
		return nil
	}
	return []int{s.pid}
}

func (s *mysqlStore) describe(ctx context.Context) string {
	var version, bp, flush string
	_ = s.db.QueryRowContext(ctx, "SELECT VERSION(), @@innodb_buffer_pool_size, @@innodb_flush_log_at_trx_commit").Scan(&version, &bp, &flush)
	bpMB, _ := strconv.ParseInt(bp, 10, 64)
	return fmt.Sprintf("MariaDB/MySQL %s (buffer pool %d MB, flush_log_at_trx_commit=%s)", version, bpMB>>20, flush)
}

// seed fills the table with INSERT ... SELECT from MariaDB's seq_1_to_N.
func (s *mysqlStore) seed(ctx context.Context, rows int64) error {
	stmts := []string{
		"DROP TABLE IF EXISTS " + benchTable,
		"DROP TABLE IF EXISTS " + mysqlstore.MigrationsTable,
		"CREATE TABLE " + benchTable + ` (
			id BIGINT NOT NULL PRIMARY KEY,
			input_url VARCHAR(255) NOT NULL,
			name VARCHAR(64) NULL,
			updated_at DATETIME(6) NULL)`,
	}
	for _, q := range stmts {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("seed: %s: %w", firstLine(q), err)
		}
	}
	if _, err := mysqlstore.Migrate(ctx, s.db, []string{benchTable}, io.Discard, false); err != nil {
		return fmt.Errorf("seed: migrate: %w", err)
	}
	const chunk = 250_000
	for lo := int64(1); lo <= rows; lo += chunk {
		hi := min(lo+chunk-1, rows)
		q := fmt.Sprintf(`INSERT INTO %s (id, input_url, name, updated_at, refresh_at)
			SELECT seq, CONCAT('https://example.com/exports/', seq, '.csv'), CONCAT('model ', seq),
			       '2026-01-01', ? + INTERVAL seq SECOND
			FROM seq_1_to_%d WHERE seq BETWEEN %d AND %d`, benchTable, rows, lo, hi)
		if _, err := s.db.ExecContext(ctx, q, farFuture); err != nil {
			return fmt.Errorf("seed rows %d-%d: %w", lo, hi, err)
		}
	}
	if _, err := s.db.ExecContext(ctx, "ANALYZE TABLE "+benchTable); err != nil {
		return fmt.Errorf("seed: analyze: %w", err)
	}
	return nil
}

func (s *mysqlStore) applyPlan(ctx context.Context, p *plan) error {
	rank := fmt.Sprintf("(id * %d DIV %d)", p.due, p.rows)
	q := fmt.Sprintf(`UPDATE %s SET
		refresh_at = IF(%s <= %d, ? + INTERVAL (%s * %d) MICROSECOND, ?),
		%s
		WHERE %s > ((id - 1) * %d DIV %d)`,
		benchTable, rank, p.active, rank, p.step.Microseconds(), resetState, rank, p.due, p.rows)
	if _, err := s.db.ExecContext(ctx, q, p.base, farFuture); err != nil {
		return fmt.Errorf("reset due rows: %w", err)
	}
	return checkPlan(ctx, p, func(before time.Time) (n int64, err error) {
		err = s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+benchTable+" WHERE refresh_at <= ?", before).Scan(&n)
		return n, err
	})
}

func (s *mysqlStore) applied(ctx context.Context, since time.Time) (n int64, err error) {
	err = s.db.QueryRowContext(ctx, appliedQuery("?"), since).Scan(&n)
	return n, err
}

// settle waits (up to 20s) until InnoDB has purged the history that the
// previous run and the plan left, then writes the table's dirty pages out
// (FLUSH TABLES ... FOR EXPORT) and waits (up to 10s) for the checkpoint
// to follow, so that every run starts with an empty redo log: a run writes
// more redo than the default log holds, and one that starts with its
// predecessor's pages still to flush would stall earlier than one that
// does not (the same binary's ratio moved by a fifth).
func (s *mysqlStore) settle(ctx context.Context) {
	deadline := time.Now().Add(20 * time.Second)
	for {
		var n int64
		err := s.db.QueryRowContext(ctx,
			"SELECT `COUNT` FROM information_schema.INNODB_METRICS WHERE NAME = 'trx_rseg_history_len'").Scan(&n)
		if err != nil || n < 1000 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "FLUSH TABLES "+benchTable+" FOR EXPORT"); err != nil {
		return
	}
	if _, err := conn.ExecContext(ctx, "UNLOCK TABLES"); err != nil {
		return
	}
	deadline = time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var age, limit int64
		err := conn.QueryRowContext(ctx, "SELECT"+
			" (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'INNODB_CHECKPOINT_AGE'),"+
			" (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'INNODB_CHECKPOINT_MAX_AGE')").Scan(&age, &limit)
		if err != nil || age < limit/10 {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (s *mysqlStore) openService(ctx context.Context) (models.Store, error) {
	return stores.Open(ctx, dsnWithDB(s.o.mysqlDSN, s.o.database), stores.Options{})
}

// mysqlBaseline's bulk UPDATEs are the fastest form found for MariaDB: the
// per-row values (id and attempt UID) travel as one JSON array joined with
// JSON_TABLE, everything else is a constant argument. (UPDATE ... CASE id
// WHEN ... END compares every row with every WHEN: 1.5-2x slower at 1000
// rows.)
type mysqlBaseline struct{ db *sql.DB }

func (s *mysqlStore) openBaseline(ctx context.Context) (baselineDB, error) {
	db, err := mysqlstore.Open(ctx, dsnWithDB(s.o.mysqlDSN, s.o.database))
	if err != nil {
		return nil, err
	}
	return &mysqlBaseline{db: db}, nil
}

func (b *mysqlBaseline) close() { b.db.Close() }

func (b *mysqlBaseline) claim(ctx context.Context, now, cursor, timeoutAt time.Time, limit int) ([]claimed, time.Time, error) {
	tx, err := b.db.BeginTx(ctx, nil) // READ COMMITTED per connection (mysqlstore.Open), as the service's
	if err != nil {
		return nil, time.Time{}, err
	}
	defer tx.Rollback()
	q := "SELECT id, input_url, refresh_attempt_no, refresh_at FROM " + benchTable + " FORCE INDEX (idx_refresh_at) WHERE refresh_at <= ?"
	args := []any{now}
	if !cursor.IsZero() {
		q += " AND refresh_at >= ?"
		args = append(args, cursor)
	}
	q += " ORDER BY refresh_at LIMIT " + strconv.Itoa(limit) + " FOR UPDATE SKIP LOCKED"
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, time.Time{}, err
	}
	out := make([]claimed, 0, limit)
	var last time.Time
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
	if len(out) > 0 {
		doc := append(make([]byte, 0, 40*len(out)), '[')
		for i, c := range out {
			if i > 0 {
				doc = append(doc, ',')
			}
			doc = fmt.Appendf(doc, `[%d,"%s"]`, c.id, c.uid)
		}
		doc = append(doc, ']')
		const upd = "UPDATE " + benchTable + " AS t JOIN JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT PATH '$[0]', u CHAR(20) PATH '$[1]')) AS j" +
			" ON t.id = j.id SET t.refresh_attempt_uid = j.u, t.refresh_attempt_no = t.refresh_attempt_no + 1," +
			" t.refresh_attempt_at = ?, t.refresh_timeout_at = ?, t.refresh_at = ?, t.refresh_status = NULL"
		if _, err := tx.ExecContext(ctx, upd, string(doc), now, timeoutAt, timeoutAt); err != nil {
			return nil, time.Time{}, err
		}
	}
	return out, last.UTC(), tx.Commit()
}

func (b *mysqlBaseline) finish(ctx context.Context, now, next time.Time, done []finished) error {
	doc := append(make([]byte, 0, 48*len(done)), '[')
	for i, f := range done {
		if i > 0 {
			doc = append(doc, ',')
		}
		doc = fmt.Appendf(doc, `[%d,%q]`, f.id, f.uid)
	}
	doc = append(doc, ']')
	const q = "UPDATE " + benchTable + " AS t JOIN JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT PATH '$[0]', g CHAR(20) PATH '$[1]')) AS j" +
		" ON t.id = j.id AND t.refresh_attempt_uid = j.g SET t.refresh_attempt_uid = NULL, t.refresh_timeout_at = NULL," +
		" t.refresh_attempt_no = 0, t.refresh_failing_since = NULL, t.refresh_last_error = NULL," +
		" t.refresh_last_success_at = ?, t.refresh_at = ?"
	_, err := b.db.ExecContext(ctx, q, string(doc), now, next)
	return err
}

func (b *mysqlBaseline) nextDue(ctx context.Context) (time.Time, bool, error) {
	var next sql.NullTime
	err := b.db.QueryRowContext(ctx, "SELECT MIN(refresh_at) FROM "+benchTable).Scan(&next)
	return next.Time, next.Valid, err
}
