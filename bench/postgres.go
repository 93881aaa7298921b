package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/models/pgstore"
	"github.com/refresher/refresher/models/stores"
)

// pgStore is --store postgres: PostgreSQL at --postgres, database
// --database.
type pgStore struct {
	o     options
	admin *pgxpool.Pool // on the URL's own database, to create and drop ours
	pool  *pgxpool.Pool
}

// pgURL is --postgres with the benchmark's database.
func (o options) pgURL() string {
	u, err := url.Parse(o.postgresURL)
	if err != nil {
		return o.postgresURL
	}
	u.Path = "/" + o.database
	return u.String()
}

func openPostgres(ctx context.Context, o options, create bool) (*pgStore, error) {
	s := &pgStore{o: o}
	if !create {
		return s, nil
	}
	admin, err := pgxpool.New(ctx, o.postgresURL)
	if err == nil {
		err = admin.Ping(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("connect to PostgreSQL at --postgres: %w", err)
	}
	s.admin = admin
	quoted := pgx.Identifier{o.database}.Sanitize()
	if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+quoted+" WITH (FORCE)"); err != nil {
		admin.Close()
		return nil, fmt.Errorf("drop database %s: %w", o.database, err)
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+quoted); err != nil {
		admin.Close()
		return nil, fmt.Errorf("create database %s: %w", o.database, err)
	}
	cfg, err := pgxpool.ParseConfig(o.pgURL())
	if err != nil {
		admin.Close()
		return nil, err
	}
	cfg.ConnConfig.RuntimeParams["timezone"] = "UTC"
	cfg.ConnConfig.RuntimeParams["application_name"] = benchApplication
	if s.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		admin.Close()
		return nil, err
	}
	return s, nil
}

func (s *pgStore) close(keep bool) {
	if s.pool != nil {
		s.pool.Close()
	}
	if s.admin != nil {
		if !keep {
			_, _ = s.admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{s.o.database}.Sanitize()+" WITH (FORCE)")
		}
		s.admin.Close()
	}
}

func (s *pgStore) childArgs() []string {
	return []string{"--postgres", s.o.postgresURL, "--database", s.o.database}
}

// benchApplication is the application_name of the bench's own connections
// (seeding, planning, checking), which serverPIDs leaves out.
const benchApplication = "refresher-bench"

// serverPIDs are the server's processes that work for the bench: the
// bench database's backends (the children's connections; the bench's own
// left out) and the server's background processes (checkpointer,
// WAL writer, ...). Other databases' backends and other servers on the
// machine are left out: every postgres process, as counted before, put
// other users' work on a shared machine into a run's figure (a service run
// on the shared server read 51 µs of database CPU per model, of which its
// database's backends spent 33 µs).
func (s *pgStore) serverPIDs() []int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT pid FROM pg_stat_activity
		WHERE (datname = current_database() OR datname IS NULL) AND application_name <> $1`, benchApplication)
	if err != nil {
		return nil
	}
	defer rows.Close()
	var pids []int
	for rows.Next() {
		var pid int
		if rows.Scan(&pid) == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

func (s *pgStore) describe(ctx context.Context) string {
	var version, sb, sc string
	_ = s.pool.QueryRow(ctx, "SELECT current_setting('server_version'), current_setting('shared_buffers'), current_setting('synchronous_commit')").Scan(&version, &sb, &sc)
	return fmt.Sprintf("PostgreSQL %s (shared_buffers %s, synchronous_commit=%s)", version, sb, sc)
}

// seed fills the table with INSERT ... SELECT from generate_series.
func (s *pgStore) seed(ctx context.Context, rows int64) error {
	stmts := []string{
		"DROP TABLE IF EXISTS " + benchTable,
		"DROP TABLE IF EXISTS " + pgstore.MigrationsTable,
		"CREATE TABLE " + benchTable + ` (
			id bigint NOT NULL PRIMARY KEY,
			input_url varchar(255) NOT NULL,
			name varchar(64) NULL,
			updated_at timestamp(6) with time zone NULL)`,
	}
	for _, q := range stmts {
		if _, err := s.pool.Exec(ctx, q); err != nil {
			return fmt.Errorf("seed: %s: %w", firstLine(q), err)
		}
	}
	if _, err := pgstore.Migrate(ctx, s.pool, []string{benchTable}, io.Discard, false); err != nil {
		return fmt.Errorf("seed: migrate: %w", err)
	}
	q := `INSERT INTO ` + benchTable + ` (id, input_url, name, updated_at, refresh_at)
		SELECT g, 'https://example.com/exports/' || g || '.csv', 'model ' || g,
		       '2026-01-01', $1::timestamptz + g * interval '1 second'
		FROM generate_series(1, $2::bigint) AS g`
	if _, err := s.pool.Exec(ctx, q, farFuture, rows); err != nil {
		return fmt.Errorf("seed rows: %w", err)
	}
	if _, err := s.pool.Exec(ctx, "VACUUM ANALYZE "+benchTable); err != nil {
		return fmt.Errorf("seed: vacuum: %w", err)
	}
	return nil
}

func (s *pgStore) applyPlan(ctx context.Context, p *plan) error {
	rank := fmt.Sprintf("(id * %d / %d)", p.due, p.rows)
	q := fmt.Sprintf(`UPDATE %s SET
		refresh_at = CASE WHEN %s <= %d THEN $1::timestamptz + %s * %d * interval '1 microsecond' ELSE $2 END,
		%s
		WHERE %s > ((id - 1) * %d / %d)`,
		benchTable, rank, p.active, rank, p.step.Microseconds(), resetState, rank, p.due, p.rows)
	if _, err := s.pool.Exec(ctx, q, p.base, farFuture); err != nil {
		return fmt.Errorf("reset due rows: %w", err)
	}
	return checkPlan(ctx, p, func(before time.Time) (n int64, err error) {
		err = s.pool.QueryRow(ctx, "SELECT COUNT(*) FROM "+benchTable+" WHERE refresh_at <= $1", before).Scan(&n)
		return n, err
	})
}

func (s *pgStore) applied(ctx context.Context, since time.Time) (n int64, err error) {
	err = s.pool.QueryRow(ctx, appliedQuery("$1"), since).Scan(&n)
	return n, err
}

// settle vacuums the table: each run leaves every due row's old versions
// behind, and autovacuum would otherwise clean them during the next run.
func (s *pgStore) settle(ctx context.Context) {
	_, _ = s.pool.Exec(ctx, "VACUUM ANALYZE "+benchTable)
}

func (s *pgStore) openService(ctx context.Context) (models.Store, error) {
	return stores.Open(ctx, s.o.pgURL(), stores.Options{})
}

// pgBaseline's bulk UPDATEs take the per-row values (id, attempt UID) as
// two arrays joined with unnest, everything else as constant arguments.
type pgBaseline struct{ pool *pgxpool.Pool }

func (s *pgStore) openBaseline(ctx context.Context) (baselineDB, error) {
	cfg, err := pgxpool.ParseConfig(s.o.pgURL())
	if err != nil {
		return nil, err
	}
	cfg.ConnConfig.RuntimeParams["timezone"] = "UTC"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &pgBaseline{pool: pool}, nil
}

func (b *pgBaseline) close() { b.pool.Close() }

func (b *pgBaseline) claim(ctx context.Context, now, cursor, timeoutAt time.Time, limit int) ([]claimed, time.Time, error) {
	tx, err := b.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return nil, time.Time{}, err
	}
	defer tx.Rollback(ctx)
	q := "SELECT id, input_url, refresh_attempt_no, refresh_at FROM " + benchTable + " WHERE refresh_at <= $1"
	args := []any{now}
	if !cursor.IsZero() {
		q += " AND refresh_at >= $2"
		args = append(args, cursor)
	}
	q += " ORDER BY refresh_at LIMIT " + strconv.Itoa(limit) + " FOR UPDATE SKIP LOCKED"
	rows, err := tx.Query(ctx, q, args...)
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
		ids, uids := make([]int64, len(out)), make([]string, len(out))
		for i, c := range out {
			ids[i], uids[i] = c.id, c.uid
		}
		const upd = "UPDATE " + benchTable + " AS t SET refresh_attempt_uid = v.u, refresh_attempt_no = t.refresh_attempt_no + 1," +
			" refresh_attempt_at = $3, refresh_timeout_at = $4, refresh_at = $4, refresh_status = NULL" +
			" FROM unnest($1::bigint[], $2::text[]) AS v(id, u) WHERE t.id = v.id"
		if _, err := tx.Exec(ctx, upd, ids, uids, now, timeoutAt); err != nil {
			return nil, time.Time{}, err
		}
	}
	return out, last.UTC(), tx.Commit(ctx)
}

func (b *pgBaseline) finish(ctx context.Context, now, next time.Time, done []finished) error {
	ids, uids := make([]int64, len(done)), make([]string, len(done))
	for i, f := range done {
		ids[i], uids[i] = f.id, f.uid
	}
	const q = "UPDATE " + benchTable + " AS t SET refresh_attempt_uid = NULL, refresh_timeout_at = NULL," +
		" refresh_attempt_no = 0, refresh_failing_since = NULL, refresh_last_error = NULL," +
		" refresh_last_success_at = $3, refresh_at = $4" +
		" FROM unnest($1::bigint[], $2::text[]) AS v(id, g) WHERE t.id = v.id AND t.refresh_attempt_uid = v.g"
	_, err := b.pool.Exec(ctx, q, ids, uids, now, next)
	return err
}

func (b *pgBaseline) nextDue(ctx context.Context) (time.Time, bool, error) {
	var next *time.Time
	err := b.pool.QueryRow(ctx, "SELECT MIN(refresh_at) FROM "+benchTable).Scan(&next)
	if errors.Is(err, pgx.ErrNoRows) || next == nil {
		return time.Time{}, false, err
	}
	return *next, true, err
}
