package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/refresher/refresher/migrations"
	"github.com/refresher/refresher/models"
)

// MigrationsTable records which migration was applied to which table.
const MigrationsTable = migrations.RecordsTable

// migrateLock serialises concurrent `refresher migrate` runs on one
// database, so that two of them never add the same column at once. MySQL's
// named locks are server-wide, so the name ends with a hash of the
// database's name (lockName): migrations of two databases on one server
// (two apps, or parallel tests) do not wait for each other.
const migrateLock = "refresher_migrate:"

// lockName is the SQL expression of the lock's name: migrateLock and the
// first 16 hex digits of SHA1(DATABASE()), which keeps it within MySQL's
// 64 characters whatever the database's name.
const lockName = "CONCAT(?, LEFT(SHA1(IFNULL(DATABASE(), '')), 16))"

// Migrate brings each table in tables up to the embedded migrations with
// migrations.Run, which says what it does. The migrations are written in
// MySQL's dialect and run as written, less the ADD COLUMN and ADD INDEX
// clauses whose column, or an index on the same columns, already exists
// (MySQL 8 has no ADD COLUMN IF NOT EXISTS). MySQL's DDL is not
// transactional: a run killed between the ALTER and the record completes
// on the next run. Concurrent runs are serialised with GET_LOCK (waiting
// up to 60s). With dryRun, db may be nil.
func Migrate(ctx context.Context, db *sql.DB, tables []string, w io.Writer, dryRun bool) (models.MigrateReport, error) {
	var open func(context.Context) (migrations.Session, error)
	if db != nil {
		open = func(ctx context.Context) (migrations.Session, error) { return openMigration(ctx, db, dryRun) }
	}
	return migrations.Run(ctx, dialect{}, open, tables, w, dryRun)
}

// openMigration takes a connection of db and, unless dryRun, the lock.
func openMigration(ctx context.Context, db *sql.DB, dryRun bool) (migrations.Session, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: connect: %w", err)
	}
	s := &session{SQLSession: migrations.SQLSession{Q: conn}, conn: conn}
	if dryRun {
		return s, nil
	}
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK("+lockName+", 60)", migrateLock).Scan(&got); err != nil {
		conn.Close()
		return nil, fmt.Errorf("migrate: take lock %q: %w", migrateLock, err)
	}
	if got.Int64 != 1 {
		conn.Close()
		return nil, fmt.Errorf("migrate: another `refresher migrate` on this database has held lock %q for 60s; try again when it is done", migrateLock)
	}
	s.locked = true
	return s, nil
}

// session is a migration's connection, locked.
type session struct {
	migrations.SQLSession
	conn   *sql.Conn
	locked bool
}

func (s *session) Where(ctx context.Context) (string, error) {
	var name sql.NullString
	if err := s.conn.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&name); err != nil {
		return "", err
	}
	if !name.Valid {
		return "", errors.New("the database DSN names no database: add it after the slash, e.g. root:@tcp(127.0.0.1:3306)/app")
	}
	return "database " + name.String, nil
}

func (s *session) Schema(ctx context.Context, table string) (migrations.Schema, error) {
	ts, err := loadSchema(ctx, s.conn, table)
	return migrations.Schema{Exists: ts.exists, Fold: true, Columns: ts.columns, Indexes: ts.indexes}, err
}

// IndexTaken is false: MySQL's index names are per table.
func (s *session) IndexTaken(context.Context, string) (bool, error) { return false, nil }

// Table and Migration run fn as it is: MySQL's DDL commits as it goes.
func (s *session) Table(_ context.Context, fn func(migrations.Session) error) error { return fn(s) }

func (s *session) Migration(_ context.Context, fn func(migrations.Session) error) error {
	return fn(s)
}

func (s *session) Close() {
	if s.locked {
		// A fresh context: the lock must be released even when ctx is cancelled.
		_, _ = s.conn.ExecContext(context.Background(), "DO RELEASE_LOCK("+lockName+")", migrateLock)
	}
	s.conn.Close()
}

// dialect is MySQL's, in which the migrations are written.
type dialect struct{}

func (dialect) Quote(name string) (string, error) { return quoteIdent(name) }
func (dialect) FoldCase() bool                    { return true }

func (dialect) RecordsDDL() string {
	return "CREATE TABLE IF NOT EXISTS `" + MigrationsTable + "` (\n" +
		"  `table_name` VARCHAR(64) NOT NULL,\n" +
		"  `version` INT NOT NULL,\n" +
		"  `name` VARCHAR(255) NOT NULL,\n" +
		"  `applied_at` DATETIME(6) NOT NULL,\n" +
		"  PRIMARY KEY (`table_name`, `version`)\n" +
		")"
}

func (dialect) Record(table string, m migrations.Migration) (string, []any) {
	return "INSERT INTO `" + MigrationsTable + "` (table_name, version, name, applied_at) VALUES (?, ?, ?, UTC_TIMESTAMP(6))",
		[]any{table, m.Version, m.Name}
}

func (dialect) Printed(table string, m migrations.Migration) string {
	return fmt.Sprintf("INSERT INTO `%s` (table_name, version, name, applied_at) VALUES (%s, %d, %s, UTC_TIMESTAMP(6))",
		MigrationsTable, migrations.SQLString(table, true), m.Version, migrations.SQLString(m.Name, true))
}

func (dialect) ColumnType(declared string) (string, error) { return declared, nil }

var intWidth = regexp.MustCompile(`^(tinyint|smallint|mediumint|int|bigint)\(\d+\)`)

// SameType compares information_schema's COLUMN_TYPE with a declared type,
// ignoring case and integer display widths (MariaDB says int(11), MySQL 8 int).
func (dialect) SameType(have, declared string) bool {
	norm := func(s string) string {
		return intWidth.ReplaceAllString(strings.ToLower(strings.TrimSpace(s)), "$1")
	}
	return norm(have) == norm(declared)
}

// ExistingIndex finds an index of the migration's name or on its columns,
// and names it as the migration does.
func (dialect) ExistingIndex(s migrations.Schema, c migrations.Clause) (string, bool) {
	_, on := s.IndexOn(c.Columns)
	return c.Name, on || s.HasIndex(c.Name)
}

func (dialect) IndexName(_ string, c migrations.Clause, _ bool) string { return c.Name }

// Render keeps the statement as written, less the clauses already done.
func (dialect) Render(st migrations.Statement, quoted string, changes []migrations.Change) ([]string, error) {
	if s := st.SQL(quoted, migrations.Keep(changes)); s != "" {
		return []string{s}, nil
	}
	return nil, nil
}
