package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/refresher/refresher/migrations"
	"github.com/refresher/refresher/models"
)

// MigrationsTable records which migration was applied to which table.
const MigrationsTable = migrations.RecordsTable

// Migrate brings each table in tables up to the embedded migrations with
// migrations.Run, which says what it does.
//
// The migration files are written for MySQL; SQLite's ALTER TABLE adds one
// column at a time, so each ADD COLUMN clause becomes its own "ALTER TABLE
// t ADD COLUMN ..." (SQLite accepts the MySQL types and backquotes as
// written, but DATETIME(6) becomes DATETIME: see sqliteTypes), and each ADD
// INDEX a CREATE INDEX. Index names are global in a SQLite database, so
// when the migration's name (idx_refresh_at) is taken by another table's
// index the index is named idx_refresh_at_<table>.
//
// Each table migrates in one BEGIN IMMEDIATE transaction (SQLite's DDL is
// transactional): a run that fails or is killed leaves the table as it
// was, and the write lock keeps concurrent runs apart. With dryRun, db may
// be nil.
func Migrate(ctx context.Context, db *sql.DB, tables []string, w io.Writer, dryRun bool) (models.MigrateReport, error) {
	var open func(context.Context) (migrations.Session, error)
	if db != nil {
		open = func(context.Context) (migrations.Session, error) {
			return &session{SQLSession: migrations.SQLSession{Q: db}, db: db}, nil
		}
	}
	return migrations.Run(ctx, dialect{}, open, tables, w, dryRun)
}

// session reads and writes through Q: db, or a transaction of it.
type session struct {
	migrations.SQLSession
	db *sql.DB
}

func (s *session) Where(context.Context) (string, error) { return "the SQLite database", nil }

func (s *session) Schema(ctx context.Context, table string) (migrations.Schema, error) {
	ts, err := loadSchema(ctx, s.Q, table)
	return migrations.Schema{Exists: ts.exists, Fold: true, Columns: ts.columns, Indexes: ts.plainIndexes()}, err
}

// IndexTaken reports whether any index of the database has name: SQLite's
// index names are global, and each kind's table needs its own index.
func (s *session) IndexTaken(ctx context.Context, name string) (bool, error) {
	var n int
	err := s.Q.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_schema WHERE type = 'index' AND name = ? COLLATE NOCASE`, name).Scan(&n)
	return n > 0, err
}

// Table runs fn in a BEGIN IMMEDIATE transaction.
func (s *session) Table(ctx context.Context, fn func(migrations.Session) error) error {
	return models.InSQLTx(ctx, s.db, nil, func(tx *sql.Tx) error { return fn(&session{SQLSession: migrations.SQLSession{Q: tx}, db: s.db}) })
}

// Migration runs fn as it is, within the table's transaction.
func (s *session) Migration(_ context.Context, fn func(migrations.Session) error) error {
	return fn(s)
}

func (s *session) Close() {}

// dialect translates the migrations into SQLite's SQL.
type dialect struct{}

func (dialect) Quote(name string) (string, error) { return quoteIdent(name) }
func (dialect) FoldCase() bool                    { return true }

func (dialect) RecordsDDL() string {
	return `CREATE TABLE IF NOT EXISTS "` + MigrationsTable + `" (
  "table_name" TEXT NOT NULL,
  "version" INTEGER NOT NULL,
  "name" TEXT NOT NULL,
  "applied_at" TEXT NOT NULL,
  PRIMARY KEY ("table_name", "version")
)`
}

// Record writes the time as the refresh columns hold it; a driver reads no
// clock of the database's.
func (dialect) Record(table string, m migrations.Migration) (string, []any) {
	return `INSERT INTO "` + MigrationsTable + `" (table_name, version, name, applied_at) VALUES (?, ?, ?, ?)`,
		[]any{table, m.Version, m.Name, dbTime(time.Now())}
}

func (dialect) Printed(table string, m migrations.Migration) string {
	return fmt.Sprintf(`INSERT INTO "%s" (table_name, version, name, applied_at) VALUES (%s, %d, %s, strftime('%%Y-%%m-%%d %%H:%%M:%%f000+00:00', 'now'))`,
		MigrationsTable, migrations.SQLString(table, false), m.Version, migrations.SQLString(m.Name, false))
}

// ColumnType keeps the declared type: SQLite accepts MySQL's (see
// sqliteTypes for the one it reads otherwise).
func (dialect) ColumnType(declared string) (string, error) { return declared, nil }

// SameType compares a column's declared type with a migration's, ignoring
// case; integer types of any name are the same (SQLite stores them alike:
// INTEGER affinity; GORM declares "integer" where the migration says INT).
func (dialect) SameType(have, declared string) bool {
	have, declared = strings.ToLower(strings.TrimSpace(sqliteTypes(have))), strings.ToLower(strings.TrimSpace(sqliteTypes(declared)))
	return have == declared || (strings.Contains(have, "int") && strings.Contains(declared, "int"))
}

// ExistingIndex finds an index of the migration's name or on its columns,
// and names it as the migration does.
func (dialect) ExistingIndex(s migrations.Schema, c migrations.Clause) (string, bool) {
	_, on := s.IndexOn(c.Columns)
	return c.Name, on || s.HasIndex(c.Name)
}

// IndexName is the migration's name, or name_<table> when another table's
// index has it.
func (dialect) IndexName(table string, c migrations.Clause, taken bool) string {
	if taken {
		return c.Name + "_" + table
	}
	return c.Name
}

// Render makes each change a statement of its own: an ALTER TABLE per
// column, a CREATE INDEX per index.
func (dialect) Render(st migrations.Statement, quoted string, changes []migrations.Change) ([]string, error) {
	if st.Clauses == nil {
		return []string{st.SQL(quoted, nil)}, nil
	}
	var out []string
	for _, c := range changes {
		switch c.Kind {
		case migrations.AddColumn:
			out = append(out, "ALTER TABLE "+quoted+" "+sqliteTypes(c.SQL))
		case migrations.AddIndex:
			cols := make([]string, len(c.Columns))
			for i, col := range c.Columns {
				cols[i] = quoteName(col)
			}
			out = append(out, "CREATE INDEX IF NOT EXISTS "+quoteName(c.Index)+" ON "+quoted+" ("+strings.Join(cols, ", ")+")")
		default:
			out = append(out, "ALTER TABLE "+quoted+" "+c.SQL)
		}
	}
	return out, nil
}

// sqliteTypes rewrites a migration's MySQL column types where SQLite
// drivers read them differently: DATETIME(6) becomes DATETIME, because the
// Go SQLite drivers return a time.Time (which GORM needs) only for a
// column declared exactly DATE, DATETIME or TIMESTAMP, and text otherwise.
// SQLite keeps whatever precision is written either way.
func sqliteTypes(clause string) string {
	return strings.NewReplacer("DATETIME(6)", "DATETIME", "datetime(6)", "datetime").Replace(clause)
}
