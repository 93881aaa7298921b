package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/refresher/refresher/models"

	"github.com/refresher/refresher/migrations"
)

// MigrationsTable records which migration was applied to which table.
const MigrationsTable = "refresher_schema_migrations"

const createMigrationsTable = "CREATE TABLE IF NOT EXISTS `" + MigrationsTable + "` (\n" +
	"  `table_name` VARCHAR(64) NOT NULL,\n" +
	"  `version` INT NOT NULL,\n" +
	"  `name` VARCHAR(255) NOT NULL,\n" +
	"  `applied_at` DATETIME(6) NOT NULL,\n" +
	"  PRIMARY KEY (`table_name`, `version`)\n" +
	")"

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

// Migrate brings each table in tables up to the embedded migrations
// (package migrations): it adds the refresh columns (README.md, "The columns") and the
// index on refresh_at, and records each applied (table, version) in
// refresher_schema_migrations. It reports progress to w, one line per
// migration ("big_tables: applied 0001_refresh_columns (added 12 columns)")
// or per table ("big_tables: up to date").
//
// It is idempotent: a migration recorded for a table is skipped; an ADD
// COLUMN or ADD INDEX whose column, or an index on the same columns, already
// exists is left out (so a table whose application created the columns by
// embedding Refresh gets its versions recorded and nothing else); a run
// killed between the ALTER and the INSERT completes on the next run. It only
// adds: it never drops or changes a column, the application's or its own. A
// refresh column that exists with another type is reported as a warning and
// left alone. Tables must exist; a missing one is an error before anything
// is changed. Concurrent runs are serialised with GET_LOCK.
//
// With dryRun it changes nothing and writes to w, instead of progress, the
// SQL a DBA would run to do the same (`refresher migrate --print`), including
// the bookkeeping table and rows; db may then be nil, in which case it prints
// every migration as for tables that have none of the columns.
//
// Why not golang-migrate or goose: those apply one global sequence of
// files to one schema. Here the same files apply to every kind's table,
// whose name comes from the config (the files are templates over it, and
// a version is recorded per table), and the migration must succeed
// on tables that already have the columns, which needs a look at
// information_schema before each ADD: MySQL 8 has no ADD COLUMN IF NOT
// EXISTS. That is a small file here, and no dependency.
func Migrate(ctx context.Context, db *sql.DB, tables []string, w io.Writer, dryRun bool) (models.MigrateReport, error) {
	var report models.MigrateReport
	if db == nil && !dryRun {
		return report, errors.New("migrate: no database (only a dry run can do without one)")
	}
	ms, err := migrations.Load()
	if err != nil {
		return report, err
	}
	names, quoted, err := models.MigrationTables(tables, quoteIdent, true)
	if err != nil {
		return report, err
	}

	var conn *sql.Conn
	if db != nil {
		conn, err = db.Conn(ctx)
		if err != nil {
			return report, fmt.Errorf("migrate: connect: %w", err)
		}
		defer conn.Close()
		if !dryRun {
			var got sql.NullInt64
			if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK("+lockName+", 60)", migrateLock).Scan(&got); err != nil {
				return report, fmt.Errorf("migrate: take lock %q: %w", migrateLock, err)
			}
			if got.Int64 != 1 {
				return report, fmt.Errorf("migrate: another `refresher migrate` on this database has held lock %q for 60s; try again when it is done", migrateLock)
			}
			// A fresh context: the lock must be released even when ctx is cancelled.
			defer conn.ExecContext(context.WithoutCancel(ctx), "DO RELEASE_LOCK("+lockName+")", migrateLock)
		}
	}

	schemas := make([]tableSchema, len(names))
	for i := range schemas {
		schemas[i] = newTableSchema()
	}
	recordExists := false
	if conn != nil {
		var dbName sql.NullString
		if err := conn.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&dbName); err != nil {
			return report, fmt.Errorf("migrate: %w", err)
		}
		if !dbName.Valid {
			return report, errors.New("migrate: the database DSN names no database: add it after the slash, e.g. root:@tcp(127.0.0.1:3306)/app")
		}
		// Every table must exist before anything changes.
		for i, name := range names {
			s, err := loadSchema(ctx, conn, name)
			if err != nil {
				return report, fmt.Errorf("migrate table %s: %w", name, err)
			}
			if !s.exists {
				return report, fmt.Errorf("table %s does not exist in database %s: refresher adds its columns to the application's existing table, so create the table first (or fix `table:` of the kind in the config)", quoted[i], dbName.String)
			}
			schemas[i] = s
		}
		if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) > 0 FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?", MigrationsTable).Scan(&recordExists); err != nil {
			return report, fmt.Errorf("migrate: look for %s: %w", MigrationsTable, err)
		}
	}

	if dryRun {
		fmt.Fprintln(w, "-- refresher migrate --print: the SQL that `refresher migrate` would run.")
		if !recordExists {
			fmt.Fprintln(w, createMigrationsTable+";")
		}
	} else if !recordExists {
		if _, err := conn.ExecContext(ctx, createMigrationsTable); err != nil {
			return report, fmt.Errorf("migrate: create %s: %w", MigrationsTable, err)
		}
	}

	for i, name := range names {
		tm, err := migrateTable(ctx, conn, ms, name, quoted[i], schemas[i], recordExists, w, dryRun)
		report.Tables = append(report.Tables, tm)
		if err != nil {
			return report, err
		}
	}
	return report, nil
}

func migrateTable(ctx context.Context, conn *sql.Conn, ms []migrations.Migration, name, quoted string, s tableSchema, recordExists bool, w io.Writer, dryRun bool) (models.TableMigration, error) {
	tm := models.TableMigration{Table: name}
	done := map[int]bool{}
	if conn != nil && recordExists {
		var err error
		if done, err = models.AppliedVersions(ctx, conn, "SELECT version FROM `"+MigrationsTable+"` WHERE table_name = ?", name); err != nil {
			return tm, fmt.Errorf("migrate table %s: read %s: %w", name, MigrationsTable, err)
		}
	}
	for _, m := range ms {
		if done[m.Version] {
			continue
		}
		am := models.AppliedMigration{Version: m.Version, Name: m.Name}
		for _, st := range m.Statements {
			stmt := st.SQL(quoted, func(c migrations.Clause) bool {
				switch c.Kind {
				case migrations.AddColumn:
					if have, ok := s.columns[strings.ToLower(c.Name)]; ok {
						am.Existing = append(am.Existing, "column "+c.Name)
						if !sameType(have, c.Type) {
							tm.Warnings = append(tm.Warnings, fmt.Sprintf("column %s exists as %s, migration %s declares %s; left unchanged", c.Name, have, m.Name, c.Type))
						}
						return false
					}
					am.Added = append(am.Added, "column "+c.Name)
				case migrations.AddIndex:
					if s.hasIndex(c.Name, c.Columns) {
						am.Existing = append(am.Existing, "index "+c.Name)
						return false
					}
					am.Added = append(am.Added, "index "+c.Name)
				}
				return true
			})
			if stmt == "" {
				continue
			}
			am.SQL = append(am.SQL, stmt)
			if dryRun {
				fmt.Fprintf(w, "\n-- %s: %s (%s)\n%s;\n", name, m.Name, am.Describe(), stmt)
				continue
			}
			if _, err := conn.ExecContext(ctx, stmt); err != nil {
				return tm, fmt.Errorf("migrate table %s: apply %s: %w\nSQL: %s", name, m.Name, err, stmt)
			}
		}
		// Later migrations see what this one added.
		for _, st := range m.Statements {
			for _, c := range st.Clauses {
				switch c.Kind {
				case migrations.AddColumn:
					if _, ok := s.columns[strings.ToLower(c.Name)]; !ok {
						s.columns[strings.ToLower(c.Name)] = strings.ToLower(c.Type)
					}
				case migrations.AddIndex:
					s.indexes[strings.ToLower(c.Name)] = lowerAll(c.Columns)
				}
			}
		}
		record := "INSERT INTO `" + MigrationsTable + "` (table_name, version, name, applied_at) VALUES (?, ?, ?, UTC_TIMESTAMP(6))"
		if dryRun {
			if len(am.SQL) == 0 {
				fmt.Fprintf(w, "\n-- %s: %s (%s)\n", name, m.Name, am.Describe())
			}
			fmt.Fprintf(w, "INSERT INTO `%s` (table_name, version, name, applied_at) VALUES (%s, %d, %s, UTC_TIMESTAMP(6));\n",
				MigrationsTable, sqlString(name), m.Version, sqlString(m.Name))
		} else {
			if _, err := conn.ExecContext(ctx, record, name, m.Version, m.Name); err != nil {
				return tm, fmt.Errorf("migrate table %s: record %s: %w", name, m.Name, err)
			}
			am.WriteApplied(w, name)
		}
		tm.Applied = append(tm.Applied, am)
	}
	tm.WriteEnd(w, dryRun)
	return tm, nil
}

// tableSchema is what information_schema says about one table.
type tableSchema struct {
	exists  bool
	columns map[string]string   // lower-case name -> COLUMN_TYPE ("datetime(6)")
	indexes map[string][]string // lower-case index name -> lower-case columns in order
	unique  map[string]bool     // lower-case index name -> UNIQUE or PRIMARY
}

func newTableSchema() tableSchema {
	return tableSchema{columns: map[string]string{}, indexes: map[string][]string{}, unique: map[string]bool{}}
}

func (s tableSchema) hasIndex(name string, cols []string) bool {
	if _, ok := s.indexes[strings.ToLower(name)]; ok {
		return true
	}
	want := strings.Join(lowerAll(cols), ",")
	for _, have := range s.indexes {
		if strings.Join(have, ",") == want {
			return true
		}
	}
	return false
}

type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// loadSchema reads the columns and indexes of table name in the current
// database; exists is false when there is no such table.
func loadSchema(ctx context.Context, q queryer, name string) (tableSchema, error) {
	s := newTableSchema()
	rows, err := q.QueryContext(ctx, "SELECT COLUMN_NAME, COLUMN_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?", name)
	if err != nil {
		return s, fmt.Errorf("read columns: %w", err)
	}
	for rows.Next() {
		var col, typ string
		if err := rows.Scan(&col, &typ); err != nil {
			rows.Close()
			return s, fmt.Errorf("read columns: %w", err)
		}
		s.columns[strings.ToLower(col)] = strings.ToLower(typ)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return s, fmt.Errorf("read columns: %w", err)
	}
	s.exists = len(s.columns) > 0
	rows, err = q.QueryContext(ctx, "SELECT INDEX_NAME, COLUMN_NAME, NON_UNIQUE FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? ORDER BY INDEX_NAME, SEQ_IN_INDEX", name)
	if err != nil {
		return s, fmt.Errorf("read indexes: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var idx string
		var col sql.NullString // NULL for functional index parts (MySQL 8)
		var nonUnique int
		if err := rows.Scan(&idx, &col, &nonUnique); err != nil {
			return s, fmt.Errorf("read indexes: %w", err)
		}
		k := strings.ToLower(idx)
		s.indexes[k] = append(s.indexes[k], strings.ToLower(col.String))
		s.unique[k] = nonUnique == 0
	}
	if err := rows.Err(); err != nil {
		return s, fmt.Errorf("read indexes: %w", err)
	}
	return s, nil
}

var intWidth = regexp.MustCompile(`^(tinyint|smallint|mediumint|int|bigint)\(\d+\)`)

// sameType compares information_schema's COLUMN_TYPE with a declared type,
// ignoring case and integer display widths (MariaDB says int(11), MySQL 8 int).
func sameType(have, declared string) bool {
	norm := func(s string) string {
		return intWidth.ReplaceAllString(strings.ToLower(strings.TrimSpace(s)), "$1")
	}
	return norm(have) == norm(declared)
}

func lowerAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strings.ToLower(s)
	}
	return out
}

// sqlString quotes s as a SQL string literal for printed SQL.
func sqlString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `'`, `''`)
	return "'" + r.Replace(s) + "'"
}
