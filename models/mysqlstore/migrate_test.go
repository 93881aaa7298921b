package mysqlstore

import (
	"bytes"
	"context"
	"database/sql"
	"io"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/refresher/refresher/models"
)

// specColumns are models.Schema's columns as information_schema shows
// them after a migration: type, nullable, default.
var specColumns = func() map[string][3]string {
	out := map[string][3]string{}
	for _, c := range models.Schema {
		if c.Kind == models.IntColumn {
			out[c.Name] = [3]string{strings.ToLower(c.Type.MySQL), "NO", "0"}
		} else {
			out[c.Name] = [3]string{strings.ToLower(c.Type.MySQL), "YES", ""}
		}
	}
	return out
}()

// migratedColumns are specColumns and the priority columns of migration
// 0004, which are outside models.Schema.
var migratedColumns = func() map[string][3]string {
	out := maps.Clone(specColumns)
	out[models.ColPriority] = [3]string{"smallint(6)", "YES", ""}
	out[models.ColPriorityOnce] = [3]string{"smallint(6)", "YES", ""}
	return out
}()

const bigTablesDDL = "CREATE TABLE big_tables (" +
	"id INT AUTO_INCREMENT PRIMARY KEY, " +
	"uid CHAR(20) NOT NULL, " +
	"input_url VARCHAR(512) NOT NULL DEFAULT '', " +
	"name VARCHAR(100) COLLATE utf8mb4_bin NULL COMMENT 'the app''s', " +
	"created_at DATETIME NULL, " +
	"UNIQUE KEY uid (uid))"

// refreshColumnsOf returns the refresh_* columns of table as
// name -> {type, nullable, default}.
func refreshColumnsOf(t *testing.T, db *sql.DB, table string) map[string][3]string {
	t.Helper()
	rows, err := db.Query("SELECT COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, COALESCE(COLUMN_DEFAULT, 'NULL') FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME LIKE 'refresh\\_%'", table)
	must(t, err)
	defer rows.Close()
	got := map[string][3]string{}
	for rows.Next() {
		var name, typ, null, def string
		must(t, rows.Scan(&name, &typ, &null, &def))
		if (dialect{}).SameType(typ, "int") {
			typ = "int" // MariaDB says int(11)
		}
		if def == "NULL" {
			def = "" // MariaDB says NULL, MySQL 8 nothing
		}
		got[name] = [3]string{typ, null, def}
	}
	must(t, rows.Err())
	return got
}

// appColumnLines returns the lines of SHOW CREATE TABLE that are not about
// refresher's columns or index.
func appColumnLines(t *testing.T, db *sql.DB, table string) []string {
	t.Helper()
	var name, ddl string
	must(t, db.QueryRow("SHOW CREATE TABLE `"+table+"`").Scan(&name, &ddl))
	var out []string
	for _, l := range strings.Split(ddl, "\n") {
		l = strings.TrimSuffix(strings.TrimSpace(l), ",")
		if strings.Contains(l, "refresh_") {
			continue
		}
		out = append(out, l)
	}
	return out
}

func showCreate(t *testing.T, db *sql.DB, table string) string {
	t.Helper()
	var name, ddl string
	must(t, db.QueryRow("SHOW CREATE TABLE `"+table+"`").Scan(&name, &ddl))
	return ddl
}

func recordedVersions(t *testing.T, db *sql.DB, table string) []string {
	t.Helper()
	rows, err := db.Query("SELECT CONCAT(version, ' ', name) FROM refresher_schema_migrations WHERE table_name = ? ORDER BY version", table)
	must(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		must(t, rows.Scan(&s))
		out = append(out, s)
	}
	return out
}

func hasIndexOn(t *testing.T, db *sql.DB, table, col string) []string {
	t.Helper()
	rows, err := db.Query("SELECT INDEX_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = ? AND SEQ_IN_INDEX = 1", table, col)
	must(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		must(t, rows.Scan(&s))
		out = append(out, s)
	}
	return out
}

func TestMigrateFreshTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testDB(t)
	exec(t, db, bigTablesDDL)
	exec(t, db, "INSERT INTO big_tables (uid, input_url, name) VALUES ('a', 'https://example.com/a', 'A')")
	before := appColumnLines(t, db, "big_tables")

	var out bytes.Buffer
	rep, err := Migrate(ctx, db, []string{"big_tables"}, &out, false)
	must(t, err)
	eq(t, out.String(), "big_tables: applied 0001_refresh_columns (added 12 columns)\n"+
		"big_tables: applied 0002_refresh_at_index (added index idx_refresh_at)\n"+
		"big_tables: applied 0003_state_count_indexes (added 4 indexes)\nbig_tables: applied 0004_refresh_priority (added 2 columns and 2 indexes)\nbig_tables: applied 0005_priority_attempt_index (added index idx_refresh_priority_attempt)\n", "output")
	eq(t, len(rep.Tables), 1)
	eq(t, rep.Tables[0].UpToDate(), false)
	eq(t, len(rep.Tables[0].Applied), 5)
	eq(t, len(rep.Tables[0].Applied[0].Added), 12)

	eq(t, refreshColumnsOf(t, db, "big_tables"), migratedColumns, "refresh columns")
	eq(t, hasIndexOn(t, db, "big_tables", "refresh_at"), []string{"idx_refresh_at"}, "index")
	eq(t, appColumnLines(t, db, "big_tables"), before, "application's columns")
	eq(t, recordedVersions(t, db, "big_tables"), []string{"1 0001_refresh_columns", "2 0002_refresh_at_index", "3 0003_state_count_indexes", "4 0004_refresh_priority", "5 0005_priority_attempt_index"})

	var at sql.NullTime
	var no int
	must(t, db.QueryRow("SELECT refresh_at, refresh_attempt_no FROM big_tables WHERE uid = 'a'").Scan(&at, &no))
	eq(t, at.Valid, false, "existing row's refresh_at")
	eq(t, no, 0, "existing row's refresh_attempt_no")

	// A second run changes nothing.
	ddl := showCreate(t, db, "big_tables")
	out.Reset()
	rep, err = Migrate(ctx, db, []string{"big_tables"}, &out, false)
	must(t, err)
	eq(t, out.String(), "big_tables: up to date\n")
	eq(t, rep.Tables[0].UpToDate(), true)
	eq(t, showCreate(t, db, "big_tables"), ddl, "schema after second run")
	eq(t, recordedVersions(t, db, "big_tables"), []string{"1 0001_refresh_columns", "2 0002_refresh_at_index", "3 0003_state_count_indexes", "4 0004_refresh_priority", "5 0005_priority_attempt_index"})
}

func TestMigrateDryRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testDB(t)
	exec(t, db, bigTablesDDL)
	exec(t, db, "CREATE TABLE `odd``name` (id INT PRIMARY KEY)")
	ddl := showCreate(t, db, "big_tables")

	var out bytes.Buffer
	rep, err := Migrate(ctx, db, []string{"big_tables", "odd`name"}, &out, true)
	must(t, err)
	printed := out.String()
	for _, want := range []string{
		"CREATE TABLE IF NOT EXISTS `refresher_schema_migrations`",
		"-- big_tables: 0001_refresh_columns (added 12 columns)\nALTER TABLE `big_tables`\n  ADD COLUMN `refresh_at` DATETIME(6) NULL,\n",
		"ADD COLUMN `refresh_status` VARCHAR(255) NULL;\n",
		"ALTER TABLE `big_tables`\n  ADD INDEX `idx_refresh_at` (`refresh_at`);\n",
		"VALUES ('big_tables', 1, '0001_refresh_columns', UTC_TIMESTAMP(6));",
		"ALTER TABLE `odd``name`\n",
	} {
		if !strings.Contains(printed, want) {
			t.Fatalf("dry run output lacks %q:\n%s", want, printed)
		}
	}
	eq(t, len(rep.Tables[0].Applied), 5)
	eq(t, showCreate(t, db, "big_tables"), ddl, "dry run changed the table")
	var n int
	must(t, db.QueryRow("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'refresher_schema_migrations'").Scan(&n))
	eq(t, n, 0, "dry run created the bookkeeping table")

	// What it prints is what a DBA runs: afterwards refresher has nothing to do.
	for _, stmt := range strings.Split(printed, ";\n") {
		var lines []string
		for _, l := range strings.Split(stmt, "\n") {
			if !strings.HasPrefix(l, "--") {
				lines = append(lines, l)
			}
		}
		if s := strings.TrimSpace(strings.Join(lines, "\n")); s != "" {
			exec(t, db, s)
		}
	}
	eq(t, refreshColumnsOf(t, db, "big_tables"), migratedColumns)
	out.Reset()
	_, err = Migrate(ctx, db, []string{"big_tables", "odd`name"}, &out, false)
	must(t, err)
	eq(t, out.String(), "big_tables: up to date\nodd`name: up to date\n")

	// A dry run on an up-to-date table prints only that.
	out.Reset()
	_, err = Migrate(ctx, db, []string{"big_tables"}, &out, true)
	must(t, err)
	eq(t, out.String(), "-- refresher migrate --print: the SQL that `refresher migrate` would run.\n-- big_tables: up to date\n")
}

func TestMigrateDryRunWithoutDatabase(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	_, err := Migrate(context.Background(), nil, []string{"big_tables"}, &out, true)
	must(t, err)
	eq(t, strings.Count(out.String(), "ADD COLUMN"), 14)
	eq(t, strings.Count(out.String(), "INSERT INTO"), 5)

	_, err = Migrate(context.Background(), nil, []string{"big_tables"}, &out, false)
	errContains(t, err, "no database")
}

func TestMigrateExistingColumns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testDB(t)
	// The application already has some of the columns, one with a coarser
	// type, and its own index on refresh_at.
	exec(t, db, "CREATE TABLE models (id INT PRIMARY KEY, refresh_at DATETIME NULL, refresh_status VARCHAR(255) NULL, KEY my_idx (refresh_at))")
	exec(t, db, "INSERT INTO models VALUES (1, '2026-01-01 00:00:00', 'busy')")

	var out bytes.Buffer
	_, err := Migrate(ctx, db, []string{"models"}, &out, false)
	must(t, err)
	eq(t, out.String(), "models: applied 0001_refresh_columns (added 10 columns; 2 columns already existed)\n"+
		"models: recorded 0002_refresh_at_index (index idx_refresh_at already existed)\n"+
		"models: applied 0003_state_count_indexes (added 4 indexes)\nmodels: applied 0004_refresh_priority (added 2 columns and 2 indexes)\nmodels: applied 0005_priority_attempt_index (added index idx_refresh_priority_attempt)\n"+
		"models: warning: column refresh_at exists as datetime, migration 0001_refresh_columns declares DATETIME(6); left unchanged\n")
	eq(t, hasIndexOn(t, db, "models", "refresh_at"), []string{"my_idx"})
	var status string
	must(t, db.QueryRow("SELECT refresh_status FROM models WHERE id = 1").Scan(&status))
	eq(t, status, "busy", "existing value")
	eq(t, recordedVersions(t, db, "models"), []string{"1 0001_refresh_columns", "2 0002_refresh_at_index", "3 0003_state_count_indexes", "4 0004_refresh_priority", "5 0005_priority_attempt_index"})
}

func TestMigrateMissingTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testDB(t)
	exec(t, db, bigTablesDDL)
	ddl := showCreate(t, db, "big_tables")

	_, err := Migrate(ctx, db, []string{"big_tables", "nope"}, io.Discard, false)
	errContains(t, err, "table `nope` does not exist in database", "create the table first", "`table:`")
	eq(t, showCreate(t, db, "big_tables"), ddl, "a failed run changed another table")

	_, err = Migrate(ctx, db, []string{"bad\x00name"}, io.Discard, false)
	errContains(t, err, "control character")
}

// TestMigrateLockIsPerDatabase: a migration holding the lock of one
// database does not hold up a migration of another on the same server
// (MySQL's named locks are server-wide).
func TestMigrateLockIsPerDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	other, db := testDB(t), testDB(t)
	exec(t, db, bigTablesDDL)

	// Hold the lock as a migration of other would.
	conn, err := other.Conn(ctx)
	must(t, err)
	defer conn.Close()
	var got sql.NullInt64
	must(t, conn.QueryRowContext(ctx, "SELECT GET_LOCK("+lockName+", 0)", migrateLock).Scan(&got))
	eq(t, got.Int64, int64(1), "lock of the other database taken")
	defer conn.ExecContext(ctx, "DO RELEASE_LOCK("+lockName+")", migrateLock)

	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err = Migrate(short, db, []string{"big_tables"}, io.Discard, false)
	must(t, err)

}
