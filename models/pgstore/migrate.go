package pgstore

import (
	"context"
	"errors"
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
const MigrationsTable = "refresher_schema_migrations"

const createMigrationsTable = `CREATE TABLE IF NOT EXISTS "` + MigrationsTable + `" (
  "table_name" varchar(64) NOT NULL,
  "version" integer NOT NULL,
  "name" varchar(255) NOT NULL,
  "applied_at" timestamp(6) with time zone NOT NULL,
  PRIMARY KEY ("table_name", "version")
)`

// migrateLock is the pg_advisory_lock key that serialises concurrent
// `refresher migrate` runs on one database (hashtext('refresher_migrate')
// would do; a constant needs no query).
const migrateLock int64 = 0x72656672657368 // "refresh"

// Migrate brings each table up to the embedded migrations (package
// migrations, written in MySQL's dialect), translated for PostgreSQL:
//
//   - each ALTER TABLE ... ADD COLUMN becomes ADD COLUMN IF NOT EXISTS with
//     the PostgreSQL type (DATETIME(6) -> timestamp(6) with time zone, see
//     the package doc; CHAR(n), VARCHAR(n), INT -> integer, TEXT), with only
//     the columns the table lacks;
//   - each ADD INDEX becomes CREATE INDEX IF NOT EXISTS named
//     <table>_<column>_idx (index names are per schema in PostgreSQL), left
//     out when the table has an index on exactly those columns.
//
// Versions are recorded per table in refresher_schema_migrations, as
// mysqlstore does, and the progress lines are the same. Each migration and
// its record run in one transaction (PostgreSQL's DDL is transactional), so
// a killed run leaves each migration done and recorded, or neither.
// Concurrent runs are serialised with pg_advisory_lock (waiting up to 60s).
// Tables must exist; a missing one is an error before anything changes.
// Columns that exist with another type are reported as warnings and left
// alone.
//
// With dryRun it changes nothing and writes to w the SQL it would run;
// pool may then be nil, in which case it prints every migration as for
// tables that have none of the columns. A nil w discards the output.
func Migrate(ctx context.Context, pool *pgxpool.Pool, tables []string, w io.Writer, dryRun bool) (models.MigrateReport, error) {
	var report models.MigrateReport
	if w == nil {
		w = io.Discard
	}
	if pool == nil && !dryRun {
		return report, errors.New("migrate: no database (only a dry run can do without one)")
	}
	ms, err := migrations.Load()
	if err != nil {
		return report, err
	}
	names, quoted, err := models.MigrationTables(tables, quoteIdent, false)
	if err != nil {
		return report, err
	}

	var conn *pgxpool.Conn
	if pool != nil {
		if conn, err = pool.Acquire(ctx); err != nil {
			return report, fmt.Errorf("migrate: connect: %w", err)
		}
		defer conn.Release()
		if !dryRun {
			if _, err := conn.Exec(ctx, "SET lock_timeout = '60s'"); err != nil {
				return report, fmt.Errorf("migrate: %w", err)
			}
			if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrateLock); err != nil {
				return report, fmt.Errorf("migrate: wait for another `refresher migrate` (advisory lock %d): %w; try again when it is done", migrateLock, err)
			}
			defer func() {
				// A fresh context: the lock must be released even when ctx is cancelled.
				bg := context.WithoutCancel(ctx)
				_, _ = conn.Exec(bg, "SELECT pg_advisory_unlock($1)", migrateLock)
				_, _ = conn.Exec(bg, "RESET lock_timeout")
			}()
		}
	}

	metas := make([]tableMeta, len(names))
	recordExists := false
	if conn != nil {
		var db string
		if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil {
			return report, fmt.Errorf("migrate: %w", err)
		}
		for i, name := range names {
			m, err := loadMeta(ctx, conn, name)
			if err != nil {
				return report, fmt.Errorf("migrate table %s: %w", name, err)
			}
			if !m.exists {
				return report, fmt.Errorf("table %s does not exist in database %s: refresher adds its columns to the application's existing table, so create the table first (or fix `table:` of the kind in the config)", quoted[i], db)
			}
			metas[i] = m
		}
		if err := conn.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", `"`+MigrationsTable+`"`).Scan(&recordExists); err != nil {
			return report, fmt.Errorf("migrate: look for %s: %w", MigrationsTable, err)
		}
	} else {
		for i := range metas {
			metas[i] = tableMeta{cols: map[string]colMeta{}}
		}
	}

	if dryRun {
		fmt.Fprintln(w, "-- refresher migrate --print: the SQL that `refresher migrate` would run.")
		if !recordExists {
			fmt.Fprintln(w, createMigrationsTable+";")
		}
	} else if !recordExists {
		if _, err := conn.Exec(ctx, createMigrationsTable); err != nil {
			return report, fmt.Errorf("migrate: create %s: %w", MigrationsTable, err)
		}
	}
	for i, name := range names {
		tm, err := migrateTable(ctx, conn, ms, name, quoted[i], metas[i], recordExists, w, dryRun)
		report.Tables = append(report.Tables, tm)
		if err != nil {
			return report, err
		}
	}
	return report, nil
}

func migrateTable(ctx context.Context, conn *pgxpool.Conn, ms []migrations.Migration, name, quoted string, m tableMeta, recordExists bool, w io.Writer, dryRun bool) (models.TableMigration, error) {
	tm := models.TableMigration{Table: name}
	done := map[int]bool{}
	if conn != nil && recordExists {
		rows, err := conn.Query(ctx, `SELECT version FROM "`+MigrationsTable+`" WHERE table_name = $1`, name)
		if err != nil {
			return tm, fmt.Errorf("migrate table %s: read %s: %w", name, MigrationsTable, err)
		}
		versions, err := pgx.CollectRows(rows, pgx.RowTo[int32])
		if err != nil {
			return tm, fmt.Errorf("migrate table %s: read %s: %w", name, MigrationsTable, err)
		}
		for _, v := range versions {
			done[int(v)] = true
		}
	}
	for _, mg := range ms {
		if done[mg.Version] {
			continue
		}
		am := models.AppliedMigration{Version: mg.Version, Name: mg.Name}
		for _, st := range mg.Statements {
			stmts, err := translate(st, name, quoted, m, &am, &tm, mg.Name)
			if err != nil {
				return tm, fmt.Errorf("migrate table %s: %s: %w", name, mg.Name, err)
			}
			am.SQL = append(am.SQL, stmts...)
		}
		record := `INSERT INTO "` + MigrationsTable + `" (table_name, version, name, applied_at) VALUES ($1, $2, $3, now())`
		if dryRun {
			am.WriteDryRun(w, name, fmt.Sprintf(`INSERT INTO "%s" (table_name, version, name, applied_at) VALUES (%s, %d, %s, now())`,
				MigrationsTable, sqlString(name), mg.Version, sqlString(mg.Name)))
		} else {
			err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
				for _, s := range am.SQL {
					if _, err := tx.Exec(ctx, s); err != nil {
						return fmt.Errorf("apply %s: %w\nSQL: %s", mg.Name, err, s)
					}
				}
				if _, err := tx.Exec(ctx, record, name, mg.Version, mg.Name); err != nil {
					return fmt.Errorf("record %s: %w", mg.Name, err)
				}
				return nil
			})
			if err != nil {
				return tm, fmt.Errorf("migrate table %s: %w", name, err)
			}
			am.WriteApplied(w, name)
		}
		// Later migrations see what this one added.
		for _, st := range mg.Statements {
			for _, c := range st.Clauses {
				switch c.Kind {
				case migrations.AddColumn:
					if _, ok := m.cols[c.Name]; !ok {
						typ, _ := pgType(c.Type)
						m.cols[c.Name] = colMeta{format: typ}
					}
				case migrations.AddIndex:
					m.indexes = append(m.indexes, indexMeta{name: indexName(name, c.Columns), cols: c.Columns})
				}
			}
		}
		tm.Applied = append(tm.Applied, am)
	}
	tm.WriteEnd(w, dryRun)
	return tm, nil
}

// translate turns one statement of a MySQL-dialect migration into the
// PostgreSQL statements for table name, leaving out what m already has and
// noting it in am and tm.
func translate(st migrations.Statement, name, quoted string, m tableMeta, am *models.AppliedMigration, tm *models.TableMigration, migration string) ([]string, error) {
	if st.Clauses == nil {
		return nil, fmt.Errorf("statement %q is not an ALTER TABLE of ADD COLUMN/ADD INDEX clauses, which is all the PostgreSQL driver translates", st.Template)
	}
	var add []string
	var out []string
	for _, c := range st.Clauses {
		switch c.Kind {
		case migrations.AddColumn:
			typ, err := pgType(c.Type)
			if err != nil {
				return nil, fmt.Errorf("column %s: %w", c.Name, err)
			}
			if have, ok := m.cols[c.Name]; ok {
				am.Existing = append(am.Existing, "column "+c.Name)
				if !sameType(have.format, typ) {
					tm.Warnings = append(tm.Warnings, fmt.Sprintf("column %s exists as %s, migration %s declares %s; left unchanged", c.Name, have.format, migration, typ))
				}
				continue
			}
			col, _ := quoteIdent(c.Name)
			add = append(add, "ADD COLUMN IF NOT EXISTS "+col+" "+typ+columnTail(c))
			am.Added = append(am.Added, "column "+c.Name)
		case migrations.AddIndex:
			if existing := m.indexOn(c.Columns...); existing != "" {
				am.Existing = append(am.Existing, "index "+existing)
				continue
			}
			idx := indexName(name, c.Columns)
			qidx, err := quoteIdent(idx)
			if err != nil {
				return nil, err
			}
			var cols []string
			for _, col := range c.Columns {
				qc, _ := quoteIdent(col)
				cols = append(cols, qc)
			}
			out = append(out, "CREATE INDEX IF NOT EXISTS "+qidx+" ON "+quoted+" ("+strings.Join(cols, ", ")+")")
			am.Added = append(am.Added, "index "+idx)
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

var mysqlType = regexp.MustCompile(`^(?i)(datetime|char|varchar|int|integer|text)(?:\((\d+)\))?$`)

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

// sameType compares format_type's text for an existing column with the
// declared type; timestamp(6) without time zone counts as the declared
// timestamptz(6) (the store reads and writes both, see the package doc).
func sameType(have, declared string) bool {
	if have == declared {
		return true
	}
	return strings.Replace(have, "without time zone", "with time zone", 1) == declared
}

// sqlString quotes s as a SQL string literal for printed SQL
// (standard_conforming_strings: only quotes double).
func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
