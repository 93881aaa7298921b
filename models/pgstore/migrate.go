package pgstore

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/refresher/refresher/migrations"
	"github.com/refresher/refresher/models"
)

// MigrationsTable records which migration was applied to which table, as in
// mysqlstore.
const MigrationsTable = migrations.RecordsTable

// migrateLock is the pg_advisory_lock key that serialises concurrent
// `refresher migrate` runs on one database (hashtext('refresher_migrate')
// would do; a constant needs no query).
const migrateLock int64 = 0x72656672657368 // "refresh"

// Migrate brings each table up to the embedded migrations with
// migrations.Run, which says what it does. The migrations are written in
// MySQL's dialect; the PostgreSQL dialect translates them:
//
//   - each ALTER TABLE ... ADD COLUMN becomes ADD COLUMN IF NOT EXISTS with
//     the PostgreSQL type (DATETIME(6) -> timestamp(6) with time zone, see
//     the package doc; CHAR(n), VARCHAR(n), INT -> integer, TEXT), with only
//     the columns the table lacks;
//   - each ADD INDEX becomes CREATE INDEX IF NOT EXISTS named
//     <table>_<column>_idx (index names are per schema in PostgreSQL), left
//     out when the table has an index on exactly those columns.
//
// Each migration and its record run in one transaction (PostgreSQL's DDL
// is transactional), so a killed run leaves each migration done and
// recorded, or neither. Concurrent runs are serialised with
// pg_advisory_lock (waiting up to 60s). With dryRun, pool may be nil.
func Migrate(ctx context.Context, pool *pgxpool.Pool, tables []string, w io.Writer, dryRun bool) (models.MigrateReport, error) {
	var open func(context.Context) (migrations.Session, error)
	if pool != nil {
		open = func(ctx context.Context) (migrations.Session, error) { return openMigration(ctx, pool, dryRun) }
	}
	return migrations.Run(ctx, dialect{}, open, tables, w, dryRun)
}

// openMigration acquires a connection of pool and, unless dryRun, the lock.
func openMigration(ctx context.Context, pool *pgxpool.Pool, dryRun bool) (migrations.Session, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: connect: %w", err)
	}
	s := &session{conn: conn}
	if dryRun {
		return s, nil
	}
	if _, err := conn.Exec(ctx, "SET lock_timeout = '60s'"); err != nil {
		conn.Release()
		return nil, fmt.Errorf("migrate: %w", err)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrateLock); err != nil {
		_, _ = conn.Exec(context.WithoutCancel(ctx), "RESET lock_timeout")
		conn.Release()
		return nil, fmt.Errorf("migrate: wait for another `refresher migrate` (advisory lock %d): %w; try again when it is done", migrateLock, err)
	}
	s.locked = true
	return s, nil
}

// session is a migration's connection, locked; tx is set within a
// migration's transaction.
type session struct {
	conn   *pgxpool.Conn
	tx     pgx.Tx
	locked bool
}

func (s *session) Where(ctx context.Context) (string, error) {
	var db string
	err := s.conn.QueryRow(ctx, "SELECT current_database()").Scan(&db)
	return "database " + db, err
}

func (s *session) Schema(ctx context.Context, table string) (migrations.Schema, error) {
	m, err := loadMeta(ctx, s.conn, table)
	sc := migrations.NewSchema(false)
	sc.Exists = m.exists
	for name, c := range m.cols {
		sc.Columns[name] = c.format
	}
	for _, ix := range m.indexes {
		sc.Indexes[ix.name] = ix.cols
	}
	return sc, err
}

func (s *session) Applied(ctx context.Context, table string) (map[int]bool, error) {
	rows, err := s.conn.Query(ctx, `SELECT version FROM "`+MigrationsTable+`" WHERE table_name = $1`, table)
	if err != nil {
		return nil, err
	}
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	done := map[int]bool{}
	for _, v := range versions {
		done[int(v)] = true
	}
	return done, err
}

func (s *session) Exec(ctx context.Context, query string, args ...any) (err error) {
	if s.tx != nil {
		_, err = s.tx.Exec(ctx, query, args...)
	} else {
		_, err = s.conn.Exec(ctx, query, args...)
	}
	return err
}

// IndexTaken is false: the index names of Dialect.IndexName are the table's own.
func (s *session) IndexTaken(context.Context, string) (bool, error) { return false, nil }

func (s *session) Table(_ context.Context, fn func(migrations.Session) error) error { return fn(s) }

// Migration runs fn in a transaction.
func (s *session) Migration(ctx context.Context, fn func(migrations.Session) error) error {
	return pgx.BeginFunc(ctx, s.conn, func(tx pgx.Tx) error {
		return fn(&session{conn: s.conn, tx: tx})
	})
}

func (s *session) Close() {
	if s.locked {
		// A fresh context: the lock must be released even when ctx is cancelled.
		bg := context.Background()
		_, _ = s.conn.Exec(bg, "SELECT pg_advisory_unlock($1)", migrateLock)
		_, _ = s.conn.Exec(bg, "RESET lock_timeout")
	}
	s.conn.Release()
}

// dialect translates the migrations into PostgreSQL's SQL.
type dialect struct{}

func (dialect) Quote(name string) (string, error) { return quoteIdent(name) }
func (dialect) FoldCase() bool                    { return false }

func (dialect) RecordsDDL() string {
	return `CREATE TABLE IF NOT EXISTS "` + MigrationsTable + `" (
  "table_name" varchar(64) NOT NULL,
  "version" integer NOT NULL,
  "name" varchar(255) NOT NULL,
  "applied_at" timestamp(6) with time zone NOT NULL,
  PRIMARY KEY ("table_name", "version")
)`
}

func (dialect) Record(table string, m migrations.Migration) (string, []any) {
	return `INSERT INTO "` + MigrationsTable + `" (table_name, version, name, applied_at) VALUES ($1, $2, $3, now())`,
		[]any{table, m.Version, m.Name}
}

// Printed quotes as standard_conforming_strings does: only quotes double.
func (dialect) Printed(table string, m migrations.Migration) string {
	return fmt.Sprintf(`INSERT INTO "%s" (table_name, version, name, applied_at) VALUES (%s, %d, %s, now())`,
		MigrationsTable, migrations.SQLString(table, false), m.Version, migrations.SQLString(m.Name, false))
}

func (dialect) ColumnType(declared string) (string, error) { return pgType(declared) }

// SameType compares format_type's text for an existing column with the
// declared type; timestamp(6) without time zone counts as the declared
// timestamptz(6) (the store reads and writes both, see the package doc).
func (dialect) SameType(have, declared string) bool {
	if have == declared {
		return true
	}
	return strings.Replace(have, "without time zone", "with time zone", 1) == declared
}

// ExistingIndex finds an index on exactly the clause's columns, whatever
// its name, and names it by its own name.
func (dialect) ExistingIndex(s migrations.Schema, c migrations.Clause) (string, bool) {
	return s.IndexOn(c.Columns)
}

func (dialect) IndexName(table string, c migrations.Clause, _ bool) string {
	return indexName(table, c.Columns)
}

// Render turns the changes of one ALTER TABLE statement into one ALTER
// TABLE of ADD COLUMN IF NOT EXISTS clauses and a CREATE INDEX IF NOT
// EXISTS per index.
func (dialect) Render(st migrations.Statement, quoted string, changes []migrations.Change) ([]string, error) {
	if st.Clauses == nil {
		return nil, fmt.Errorf("statement %q is not an ALTER TABLE of ADD COLUMN/ADD INDEX clauses, which is all the PostgreSQL driver translates", st.Template)
	}
	var add, out []string
	for _, c := range changes {
		switch c.Kind {
		case migrations.AddColumn:
			col, _ := quoteIdent(c.Name)
			add = append(add, "ADD COLUMN IF NOT EXISTS "+col+" "+c.Type+columnTail(c.Clause))
		case migrations.AddIndex:
			qidx, err := quoteIdent(c.Index)
			if err != nil {
				return nil, err
			}
			var cols []string
			for _, col := range c.Columns {
				qc, _ := quoteIdent(col)
				cols = append(cols, qc)
			}
			out = append(out, "CREATE INDEX IF NOT EXISTS "+qidx+" ON "+quoted+" ("+strings.Join(cols, ", ")+")")
		default:
			return nil, fmt.Errorf("clause %q is not ADD COLUMN or ADD INDEX, which is all the PostgreSQL driver translates", c.SQL)
		}
	}
	if len(add) > 0 {
		out = append([]string{"ALTER TABLE " + quoted + "\n  " + strings.Join(add, ",\n  ")}, out...)
	}
	return out, nil
}

// indexName names a migration's index on table: <table>_<cols>_idx, cut to
// PostgreSQL's 63 bytes.
func indexName(table string, cols []string) string {
	n := table + "_" + strings.Join(cols, "_") + "_idx"
	if len(n) > 63 {
		n = n[:63]
	}
	return n
}

var mysqlType = regexp.MustCompile(`^(?i)(datetime|char|varchar|smallint|int|integer|text)(?:\((\d+)\))?$`)

// pgType translates a migration's MySQL column type into PostgreSQL's, as
// format_type prints it (so existing columns compare by text).
func pgType(t string) (string, error) {
	m := mysqlType.FindStringSubmatch(strings.TrimSpace(t))
	if m == nil {
		return "", fmt.Errorf("type %s has no PostgreSQL translation", t)
	}
	switch strings.ToLower(m[1]) {
	case "datetime":
		if m[2] == "" {
			return "timestamp with time zone", nil
		}
		return "timestamp(" + m[2] + ") with time zone", nil
	case "char":
		return "character(" + or(m[2], "1") + ")", nil
	case "varchar":
		if m[2] == "" {
			return "", fmt.Errorf("type %s needs a length", t)
		}
		return "character varying(" + m[2] + ")", nil
	case "int", "integer":
		return "integer", nil
	case "smallint":
		return "smallint", nil
	}
	return "text", nil
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// columnTail is what follows the type in an ADD COLUMN clause ("NULL",
// "NOT NULL DEFAULT 0"), which PostgreSQL reads as MySQL does.
func columnTail(c migrations.Clause) string {
	i := strings.Index(c.SQL, c.Type)
	if i < 0 {
		return ""
	}
	tail := strings.TrimSpace(c.SQL[i+len(c.Type):])
	if tail == "" {
		return ""
	}
	return " " + tail
}
