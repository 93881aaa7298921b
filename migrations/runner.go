package migrations

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/refresher/refresher/models"
)

// RecordsTable records which migration was applied to which table, in
// every database.
const RecordsTable = "refresher_schema_migrations"

// Dialect is what the runner needs to know of one database's SQL. Each
// driver supplies one; it touches no connection (see Session for that).
type Dialect interface {
	// Quote quotes a table name, or says why the database cannot hold it.
	Quote(name string) (string, error)
	// FoldCase reports whether table, column and index names compare
	// without case (MySQL, SQLite), so that Schema is keyed in lower case.
	FoldCase() bool
	// RecordsDDL creates RecordsTable if it does not exist.
	RecordsDDL() string
	// LedgerDDL creates models.LedgerTable and its index; Run runs it
	// when the table does not exist.
	LedgerDDL() []string
	// Record is the INSERT that records migration m for table, with its
	// arguments; Printed is the same statement with literals, for a dry run.
	Record(table string, m Migration) (query string, args []any)
	Printed(table string, m Migration) string
	// ColumnType is the database's type for a migration's declared (MySQL)
	// type, as Schema holds existing columns; SameType compares an
	// existing column's type with it.
	ColumnType(declared string) (string, error)
	SameType(have, want string) bool
	// ExistingIndex names the index of s that already does what c adds
	// (as the progress line names it); ok is false when there is none.
	ExistingIndex(s Schema, c Clause) (name string, ok bool)
	// IndexName is the name of the index c adds to table; taken says
	// that c.Name belongs to another table's index (Session.IndexTaken).
	IndexName(table string, c Clause, taken bool) string
	// Render returns the statements that make, on the quoted table, the
	// changes of st that are still to do (clauses of st not in changes
	// already exist and must be left out).
	Render(st Statement, quoted string, changes []Change) ([]string, error)
}

// Session is the runner's connection to one database, locked against
// other runs (a driver takes the lock when it opens it).
type Session interface {
	// Where names the database in messages: "database app".
	Where(ctx context.Context) (string, error)
	// Schema reads a table's columns and plain indexes.
	Schema(ctx context.Context, table string) (Schema, error)
	// Applied returns the versions recorded for table.
	Applied(ctx context.Context, table string) (map[int]bool, error)
	// Exec runs one statement.
	Exec(ctx context.Context, query string, args ...any) error
	// IndexTaken reports whether an index of the database already has
	// name, where index names belong to the database rather than to a
	// table (SQLite); false elsewhere.
	IndexTaken(ctx context.Context, name string) (bool, error)
	// Table runs fn for one table's migrations, and Migration for one
	// migration's statements and record: each in a transaction of its own
	// where the database's DDL is transactional (and that granularity is
	// the driver's), or simply calls fn.
	Table(ctx context.Context, fn func(Session) error) error
	Migration(ctx context.Context, fn func(Session) error) error
	// Close releases the lock and the connection.
	Close()
}

// Change is a clause of a migration still to be made on one table.
type Change struct {
	Clause
	// Type is an AddColumn's type in the database (Dialect.ColumnType).
	Type string
	// Index is an AddIndex's name in the database (Dialect.IndexName).
	Index string
}

// Keep is the keep function of Statement.SQL that keeps the clauses of
// changes.
func Keep(changes []Change) func(Clause) bool {
	return func(c Clause) bool {
		for _, ch := range changes {
			if ch.SQL == c.SQL {
				return true
			}
		}
		return false
	}
}

// Schema is what the runner knows of one table.
type Schema struct {
	Exists bool
	// Fold: the keys below, and the columns of Indexes, are in lower case.
	Fold bool
	// Columns maps each column's name to its type as the database prints
	// it.
	Columns map[string]string
	// Indexes maps each plain index's name to its columns in order.
	Indexes map[string][]string
}

// NewSchema returns an empty Schema that folds names when fold is set.
func NewSchema(fold bool) Schema {
	return Schema{Fold: fold, Columns: map[string]string{}, Indexes: map[string][]string{}}
}

func (s Schema) key(name string) string {
	if s.Fold {
		return strings.ToLower(name)
	}
	return name
}

// Column returns the type of column name; ok is false when there is none.
func (s Schema) Column(name string) (typ string, ok bool) {
	typ, ok = s.Columns[s.key(name)]
	return typ, ok
}

// HasIndex reports whether the table has an index named name.
func (s Schema) HasIndex(name string) bool {
	_, ok := s.Indexes[s.key(name)]
	return ok
}

// IndexOn returns the name of an index on exactly cols, in order; of
// several, the first by name.
func (s Schema) IndexOn(cols []string) (name string, ok bool) {
	want := strings.Join(s.keys(cols), ",")
	for n, have := range s.Indexes {
		if strings.Join(have, ",") == want && (!ok || n < name) {
			name, ok = n, true
		}
	}
	return name, ok
}

func (s Schema) keys(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = s.key(n)
	}
	return out
}

// Run brings each table in tables up to the embedded migrations: it adds
// the refresh columns and indexes each table lacks, and records each
// applied (table, version) in RecordsTable. It reports progress to w (nil
// discards it), one line per migration ("big_tables: applied
// 0001_refresh_columns (added 12 columns)") or per table ("big_tables: up
// to date").
//
// It is idempotent: a migration recorded for a table is skipped; a column,
// or an index on the same columns, that already exists is left out (so a
// table whose application created the columns by embedding models.Refresh
// gets its versions recorded and nothing else). It only adds: a refresh
// column that exists with another type is reported as a warning and left
// alone. Tables must exist; a missing one is an error before anything is
// changed.
//
// open connects and takes the driver's lock against concurrent runs. With
// dryRun it changes nothing and writes to w, instead of progress, the SQL a
// DBA would run to do the same (`refresher migrate --print`), bookkeeping
// included; open may then be nil, in which case it prints every migration
// as for tables that have none of the columns.
//
// Why not golang-migrate or goose: those apply one global sequence of files
// to one schema. Here the same files apply to every kind's table, whose
// name comes from the config (the files are templates over it, and a
// version is recorded per table), and a migration must succeed on tables
// that already have the columns, which needs a look at the table before
// each ADD: MySQL 8 has no ADD COLUMN IF NOT EXISTS.
func Run(ctx context.Context, d Dialect, open func(context.Context) (Session, error), tables []string, w io.Writer, dryRun bool) (models.MigrateReport, error) {
	var report models.MigrateReport
	if w == nil {
		w = io.Discard
	}
	if open == nil && !dryRun {
		return report, errors.New("migrate: no database (only a dry run can do without one)")
	}
	ms, err := Load()
	if err != nil {
		return report, err
	}
	names, quoted, err := tableNames(tables, d.Quote, d.FoldCase())
	if err != nil {
		return report, err
	}

	var s Session
	recordExists, ledgerExists := false, false
	if open != nil {
		if s, err = open(ctx); err != nil {
			return report, err
		}
		defer s.Close()
		where, err := s.Where(ctx)
		if err != nil {
			return report, fmt.Errorf("migrate: %w", err)
		}
		// Every table must exist before anything changes.
		for i, name := range names {
			sc, err := s.Schema(ctx, name)
			if err != nil {
				return report, fmt.Errorf("migrate table %s: %w", name, err)
			}
			if !sc.Exists {
				return report, fmt.Errorf("table %s does not exist in %s: refresher adds its columns to the application's existing table, so create the table first (or fix `table:` of the kind in the config)", quoted[i], where)
			}
		}
		rs, err := s.Schema(ctx, RecordsTable)
		if err != nil {
			return report, fmt.Errorf("migrate: look for %s: %w", RecordsTable, err)
		}
		recordExists = rs.Exists
		ls, err := s.Schema(ctx, models.LedgerTable)
		if err != nil {
			return report, fmt.Errorf("migrate: look for %s: %w", models.LedgerTable, err)
		}
		ledgerExists = ls.Exists
	}

	if dryRun {
		fmt.Fprintln(w, "-- refresher migrate --print: the SQL that `refresher migrate` would run.")
		if !recordExists {
			fmt.Fprintln(w, d.RecordsDDL()+";")
		}
		if !ledgerExists {
			for _, q := range d.LedgerDDL() {
				fmt.Fprintln(w, q+";")
			}
		}
	} else {
		if !recordExists {
			if err := s.Exec(ctx, d.RecordsDDL()); err != nil {
				return report, fmt.Errorf("migrate: create %s: %w", RecordsTable, err)
			}
			recordExists = true
		}
		if !ledgerExists {
			// The ledger (models.LedgerTable): one per database, not per
			// kind's table, so it is no numbered migration of {{table}};
			// created without a progress line, as RecordsTable is.
			for _, q := range d.LedgerDDL() {
				if err := s.Exec(ctx, q); err != nil {
					return report, fmt.Errorf("migrate: create %s: %w\nSQL: %s", models.LedgerTable, err, q)
				}
			}
		}
	}

	for i, name := range names {
		t := table{d: d, name: name, quoted: quoted[i], w: w, dryRun: dryRun}
		var tm models.TableMigration
		run := func(s Session) (err error) {
			tm, err = t.migrate(ctx, s, ms, recordExists)
			return err
		}
		if dryRun {
			err = run(s)
		} else {
			err = s.Table(ctx, run)
		}
		report.Tables = append(report.Tables, tm)
		if err != nil {
			return report, err
		}
	}
	return report, nil
}

// table is one table's run.
type table struct {
	d            Dialect
	name, quoted string
	w            io.Writer
	dryRun       bool
}

// migrate applies to t the migrations of ms not recorded yet; s is nil in
// a dry run without a database.
func (t *table) migrate(ctx context.Context, s Session, ms []Migration, recordExists bool) (models.TableMigration, error) {
	tm := models.TableMigration{Table: t.name}
	sc := NewSchema(t.d.FoldCase())
	done := map[int]bool{}
	if s != nil {
		var err error
		if sc, err = s.Schema(ctx, t.name); err != nil { // as of the lock, or the transaction
			return tm, fmt.Errorf("migrate table %s: %w", t.name, err)
		}
		if recordExists {
			if done, err = s.Applied(ctx, t.name); err != nil {
				return tm, fmt.Errorf("migrate table %s: read %s: %w", t.name, RecordsTable, err)
			}
		}
	}
	for _, m := range ms {
		if done[m.Version] {
			continue
		}
		am := models.AppliedMigration{Version: m.Version, Name: m.Name}
		for _, st := range m.Statements {
			stmts, err := t.plan(ctx, s, st, sc, m.Name, &am, &tm)
			if err != nil {
				return tm, fmt.Errorf("migrate table %s: %s: %w", t.name, m.Name, err)
			}
			am.SQL = append(am.SQL, stmts...)
		}
		if t.dryRun {
			am.WriteDryRun(t.w, t.name, t.d.Printed(t.name, m))
		} else {
			err := s.Migration(ctx, func(s Session) error {
				for _, q := range am.SQL {
					if err := s.Exec(ctx, q); err != nil {
						return fmt.Errorf("apply %s: %w\nSQL: %s", m.Name, err, q)
					}
				}
				q, args := t.d.Record(t.name, m)
				if err := s.Exec(ctx, q, args...); err != nil {
					return fmt.Errorf("record %s: %w", m.Name, err)
				}
				return nil
			})
			if err != nil {
				return tm, fmt.Errorf("migrate table %s: %w", t.name, err)
			}
			am.WriteApplied(t.w, t.name)
		}
		tm.Applied = append(tm.Applied, am)
	}
	tm.WriteEnd(t.w, t.dryRun)
	return tm, nil
}

// plan returns the statements that make what st adds and sc lacks, noting
// in am what is added and what exists, and in tm the columns of another
// type; sc then holds what st adds, for the later migrations.
func (t *table) plan(ctx context.Context, s Session, st Statement, sc Schema, migration string, am *models.AppliedMigration, tm *models.TableMigration) ([]string, error) {
	var changes []Change
	for _, c := range st.Clauses {
		switch c.Kind {
		case AddColumn:
			typ, err := t.d.ColumnType(c.Type)
			if err != nil {
				return nil, fmt.Errorf("column %s: %w", c.Name, err)
			}
			if have, ok := sc.Column(c.Name); ok {
				am.Existing = append(am.Existing, "column "+c.Name)
				if !t.d.SameType(have, typ) {
					tm.Warnings = append(tm.Warnings, fmt.Sprintf("column %s exists as %s, migration %s declares %s; left unchanged", c.Name, have, migration, typ))
				}
				continue
			}
			am.Added = append(am.Added, "column "+c.Name)
			sc.Columns[sc.key(c.Name)] = typ
			changes = append(changes, Change{Clause: c, Type: typ})
		case AddIndex:
			if name, ok := t.d.ExistingIndex(sc, c); ok {
				am.Existing = append(am.Existing, "index "+name)
				continue
			}
			taken := false
			if s != nil {
				var err error
				if taken, err = s.IndexTaken(ctx, c.Name); err != nil {
					return nil, fmt.Errorf("look for index %s: %w", c.Name, err)
				}
			}
			idx := t.d.IndexName(t.name, c, taken)
			am.Added = append(am.Added, "index "+idx)
			sc.Indexes[sc.key(idx)] = sc.keys(c.Columns)
			changes = append(changes, Change{Clause: c, Index: idx})
		default:
			changes = append(changes, Change{Clause: c})
		}
	}
	return t.d.Render(st, t.quoted, changes)
}

// tableNames checks and quotes the tables a run is for and drops repeats:
// names that are equal, or equal but for case when foldCase. It returns
// the names kept and their quoted forms.
func tableNames(tables []string, quote func(string) (string, error), foldCase bool) (names, quoted []string, err error) {
	seen := map[string]bool{}
	for _, t := range tables {
		q, err := quote(t)
		if err != nil {
			return nil, nil, fmt.Errorf("migrate table %q: %w", t, err)
		}
		k := t
		if foldCase {
			k = strings.ToLower(t)
		}
		if seen[k] {
			continue
		}
		seen[k] = true
		names, quoted = append(names, t), append(quoted, q)
	}
	return names, quoted, nil
}

// SQLQuerier is a *sql.DB, *sql.Conn or *sql.Tx.
type SQLQuerier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// SQLSession is the part of a Session the drivers on database/sql (whose
// placeholder is "?") share: Applied and Exec through Q.
type SQLSession struct {
	Q SQLQuerier
}

// Applied implements Session.Applied.
func (s SQLSession) Applied(ctx context.Context, table string) (map[int]bool, error) {
	done := map[int]bool{}
	rows, err := s.Q.QueryContext(ctx, "SELECT version FROM "+RecordsTable+" WHERE table_name = ?", table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("read a version: %w", err)
		}
		done[v] = true
	}
	return done, rows.Err()
}

// Exec implements Session.Exec.
func (s SQLSession) Exec(ctx context.Context, query string, args ...any) error {
	_, err := s.Q.ExecContext(ctx, query, args...)
	return err
}

// SQLString quotes s as a SQL string literal for printed SQL, doubling
// quotes (and, with backslashes set, backslashes: MySQL's default mode).
func SQLString(s string, backslashes bool) string {
	if backslashes {
		s = strings.ReplaceAll(s, `\`, `\\`)
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}
