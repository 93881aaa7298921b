package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/refresher/refresher/migrations"
	"github.com/refresher/refresher/models"
)

// MigrationsTable records which migration was applied to which table.
const MigrationsTable = "refresher_schema_migrations"

const createMigrationsTable = `CREATE TABLE IF NOT EXISTS "` + MigrationsTable + `" (
  "table_name" TEXT NOT NULL,
  "version" INTEGER NOT NULL,
  "name" TEXT NOT NULL,
  "applied_at" TEXT NOT NULL,
  PRIMARY KEY ("table_name", "version")
)`

// Migrate brings each table in tables up to the embedded migrations
// (package migrations), like the MySQL driver's Migrate: it adds the
// refresh columns and the index on refresh_at that do not exist yet, and
// records each applied (table, version) in refresher_schema_migrations. It
// reports progress to w, one line per migration or "t: up to date".
//
// The migration files are written for MySQL; SQLite's ALTER TABLE adds one
// column at a time, so each ADD COLUMN clause becomes its own "ALTER TABLE
// t ADD COLUMN ..." (SQLite accepts the MySQL types and backquotes as
// written, but DATETIME(6) becomes DATETIME: see sqliteTypes), and each ADD
// INDEX a CREATE INDEX. Index names are global in a
// SQLite database, so when the migration's name (idx_refresh_at) is taken
// by another table's index the index is named idx_refresh_at_<table>.
//
// Each table migrates in one transaction (SQLite's DDL is transactional):
// a run that fails or is killed leaves the table as it was. Tables must
// exist; a missing one is an error before anything is changed. A refresh
// column that exists with another type is reported as a warning and left.
//
// With dryRun it changes nothing and writes to w the SQL it would run;
// db may then be nil, in which case it prints every migration as for a
// table that has none of the columns.
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
	schemas := make([]tableSchema, len(names))
	for i := range schemas {
		schemas[i] = newTableSchema()
	}
	recordExists := false
	if db != nil {
		for i, name := range names {
			s, err := loadSchema(ctx, db, name)
			if err != nil {
				return report, fmt.Errorf("migrate table %s: %w", name, err)
			}
			if !s.exists {
				return report, fmt.Errorf("table %s does not exist in the SQLite database: refresher adds its columns to the application's existing table, so create the table first (or fix `table:` of the kind in the config)", quoted[i])
			}
			schemas[i] = s
		}
		rs, err := loadSchema(ctx, db, MigrationsTable)
		if err != nil {
			return report, fmt.Errorf("migrate: look for %s: %w", MigrationsTable, err)
		}
		recordExists = rs.exists
	}
	if dryRun {
		fmt.Fprintln(w, "-- refresher migrate --print: the SQL that `refresher migrate` would run.")
		if !recordExists {
			fmt.Fprintln(w, createMigrationsTable+";")
		}
	} else if _, err := db.ExecContext(ctx, createMigrationsTable); err != nil {
		return report, fmt.Errorf("migrate: create %s: %w", MigrationsTable, err)
	}
	for i, name := range names {
		var tm models.TableMigration
		if dryRun {
			var q queryer // nil without a database, not a nil *sql.DB
			if db != nil {
				q = db
			}
			tm, err = migrateTable(ctx, q, ms, name, quoted[i], schemas[i], recordExists, w, true)
		} else {
			err = inTx(ctx, db, func(tx *sql.Tx) error {
				s, err := loadSchema(ctx, tx, name) // as of the write lock
				if err != nil {
					return err
				}
				tm, err = migrateTable(ctx, tx, ms, name, quoted[i], s, true, w, false)
				return err
			})
		}
		report.Tables = append(report.Tables, tm)
		if err != nil {
			return report, err
		}
	}
	return report, nil
}

// inTx runs fn in a BEGIN IMMEDIATE transaction of db.
func inTx(ctx context.Context, db *sql.DB, fn func(tx *sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

func migrateTable(ctx context.Context, q queryer, ms []migrations.Migration, name, quoted string, s tableSchema, recordExists bool, w io.Writer, dryRun bool) (models.TableMigration, error) {
	tm := models.TableMigration{Table: name}
	done := map[int]bool{}
	if q != nil && recordExists {
		var err error
		if done, err = models.AppliedVersions(ctx, q, `SELECT version FROM "`+MigrationsTable+`" WHERE table_name = ?`, name); err != nil {
			return tm, fmt.Errorf("migrate table %s: read %s: %w", name, MigrationsTable, err)
		}
	}
	for _, m := range ms {
		if done[m.Version] {
			continue
		}
		am := models.AppliedMigration{Version: m.Version, Name: m.Name}
		var stmts []string
		for _, st := range m.Statements {
			if st.Clauses == nil {
				stmts = append(stmts, st.SQL(quoted, nil))
				continue
			}
			for _, c := range st.Clauses {
				switch c.Kind {
				case migrations.AddColumn:
					if have, ok := s.columns[strings.ToLower(c.Name)]; ok {
						am.Existing = append(am.Existing, "column "+c.Name)
						if !sameType(have, c.Type) {
							tm.Warnings = append(tm.Warnings, fmt.Sprintf("column %s exists as %s, migration %s declares %s; left unchanged", c.Name, have, m.Name, c.Type))
						}
						continue
					}
					am.Added = append(am.Added, "column "+c.Name)
					s.columns[strings.ToLower(c.Name)] = strings.ToLower(c.Type)
					stmts = append(stmts, "ALTER TABLE "+quoted+" "+sqliteTypes(c.SQL))
				case migrations.AddIndex:
					if s.hasIndex(c.Name, c.Columns) {
						am.Existing = append(am.Existing, "index "+c.Name)
						continue
					}
					idx, err := freeIndexName(ctx, q, c.Name, name)
					if err != nil {
						return tm, fmt.Errorf("migrate table %s: %w", name, err)
					}
					cols := make([]string, len(c.Columns))
					for i, col := range c.Columns {
						cols[i] = quoteName(col)
					}
					am.Added = append(am.Added, "index "+idx)
					s.indexes[strings.ToLower(idx)] = lowerAll(c.Columns)
					stmts = append(stmts, "CREATE INDEX IF NOT EXISTS "+quoteName(idx)+" ON "+quoted+" ("+strings.Join(cols, ", ")+")")
				default:
					stmts = append(stmts, "ALTER TABLE "+quoted+" "+c.SQL)
				}
			}
		}
		am.SQL = stmts
		if dryRun {
			am.WriteDryRun(w, name, fmt.Sprintf(`INSERT INTO "%s" (table_name, version, name, applied_at) VALUES (%s, %d, %s, strftime('%%Y-%%m-%%d %%H:%%M:%%f000+00:00', 'now'))`,
				MigrationsTable, sqlString(name), m.Version, sqlString(m.Name)))
		} else {
			for _, st := range stmts {
				if _, err := q.ExecContext(ctx, st); err != nil {
					return tm, fmt.Errorf("migrate table %s: apply %s: %w\nSQL: %s", name, m.Name, err, st)
				}
			}
			if _, err := q.ExecContext(ctx, `INSERT INTO "`+MigrationsTable+`" (table_name, version, name, applied_at) VALUES (?, ?, ?, ?)`,
				name, m.Version, m.Name, dbTime(time.Now())); err != nil {
				return tm, fmt.Errorf("migrate table %s: record %s: %w", name, m.Name, err)
			}
			am.WriteApplied(w, name)
		}
		tm.Applied = append(tm.Applied, am)
	}
	tm.WriteEnd(w, dryRun)
	return tm, nil
}

// freeIndexName returns name when no index of the database has it, else
// name_<table>: SQLite's index names are global, and each kind's table
// needs its own index.
func freeIndexName(ctx context.Context, q queryer, name, table string) (string, error) {
	if q == nil {
		return name, nil
	}
	var n int
	if err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_schema WHERE type = 'index' AND name = ? COLLATE NOCASE`, name).Scan(&n); err != nil {
		return "", fmt.Errorf("look for index %s: %w", name, err)
	}
	if n == 0 {
		return name, nil
	}
	return name + "_" + table, nil
}

// sqlString quotes s as a SQL string literal for printed SQL.
func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// sqliteTypes rewrites a migration's MySQL column types where SQLite
// drivers read them differently: DATETIME(6) becomes DATETIME, because the
// Go SQLite drivers return a time.Time (which GORM needs) only for a
// column declared exactly DATE, DATETIME or TIMESTAMP, and text otherwise.
// SQLite keeps whatever precision is written either way.
func sqliteTypes(clause string) string {
	return strings.NewReplacer("DATETIME(6)", "DATETIME", "datetime(6)", "datetime").Replace(clause)
}

// sameType compares a column's declared type with a migration's, ignoring
// case; integer types of any name are the same (SQLite stores them alike:
// INTEGER affinity; GORM declares "integer" where the migration says INT).
func sameType(have, declared string) bool {
	have, declared = strings.ToLower(strings.TrimSpace(sqliteTypes(have))), strings.ToLower(strings.TrimSpace(sqliteTypes(declared)))
	return have == declared || (strings.Contains(have, "int") && strings.Contains(declared, "int"))
}
