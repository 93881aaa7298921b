package sqlitestore

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	execpkg "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
)

func TestClassify(t *testing.T) {
	each(t, func(t *testing.T, h harness) {
		ctx := context.Background()
		s := h.open(t)
		tbl := itemsTable(t, s, "TEXT")
		insertItem(t, s, "ok", base)
		insertItem(t, s, "bad", base)
		exec(t, s, `CREATE TRIGGER refuse BEFORE UPDATE OF refresh_last_error ON items
			WHEN NEW.k = 'bad' BEGIN SELECT RAISE(ABORT, 'bad is read-only'); END`)
		save := func(rows ...models.Row) error {
			return s.Tx(ctx, func(tx models.Tx) error { return tx.Save(ctx, tbl, rows) })
		}
		must(t, save(models.Row{Key: "ok", State: policy.State{LastError: "x"}}))
		err := save(models.Row{Key: "ok", State: policy.State{LastError: "y"}}, models.Row{Key: "bad", State: policy.State{LastError: "y"}})
		errContains(t, err, "bad is read-only")
		eq(t, s.Classify(err), models.ValueRefused, "a trigger's RAISE: ", err)
		eq(t, lockAll(t, s, tbl, "ok")["ok"].State.LastError, "x", "the batch rolled back")

		exec(t, s, "DROP TRIGGER refuse")
		exec(t, s, "CREATE TABLE strict (k TEXT PRIMARY KEY, n INT CHECK (n >= 0), v TEXT NOT NULL)")
		_, err = s.DB().Exec("INSERT INTO strict VALUES ('a', -1, 'x')")
		eq(t, s.Classify(err), models.ValueRefused, "CHECK: ", err)
		_, err = s.DB().Exec("INSERT INTO strict VALUES ('a', 1, NULL)")
		eq(t, s.Classify(err), models.ValueRefused, "NOT NULL: ", err)

		exec(t, s, "DROP TABLE items")
		err = save(models.Row{Key: "ok", State: policy.State{LastError: "z"}})
		eq(t, s.Classify(err), models.TableRefused, "dropped table: ", err)
		errContains(t, err, "no such table", "run `refresher migrate`")
		_, _, err = s.NextDue(ctx, tbl)
		eq(t, s.Classify(err), models.TableRefused, "NextDue on a dropped table: ", err)

		eq(t, s.Classify(context.Canceled), models.Transient)
		eq(t, s.Classify(sql.ErrConnDone), models.Transient)
	})
}

func TestClassifyBusy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := harnesses[0].open(t)
	// Another writer (the application) with a short busy timeout finds the
	// write lock taken by the Store's transaction.
	other, err := sql.Open("sqlite", s.Path()+"?_pragma=busy_timeout(50)&_txlock=immediate")
	must(t, err)
	defer other.Close()
	must(t, s.Tx(ctx, func(tx models.Tx) error {
		_, err = other.Exec("CREATE TABLE x (a)")
		return nil
	}))
	if err == nil {
		t.Fatal("no SQLITE_BUSY while the Store held the write lock")
	}
	eq(t, s.Classify(err), models.Transient, "busy: ", err)
}

func TestSecondInstanceRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "app.db")
	s, err := Open(ctx, path)
	must(t, err)
	_, err = Open(ctx, path)
	errContains(t, err, "another refresher is using this SQLite database", path+".lock", "MySQL or PostgreSQL")

	// Another process too.
	cmd := execpkg.Command(os.Args[0], "-test.run=^TestHelperOpen$")
	cmd.Env = append(os.Environ(), "SQLITESTORE_HELPER_DB="+path)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "another refresher is using this SQLite database") {
		t.Fatalf("child process opened a locked database: %v\n%s", err, out)
	}

	must(t, s.Close())
	// Released by Close. A child process another test of this package
	// forks at that moment holds a copy of the lock's file until its exec
	// closes it, so the Open may have to wait a little.
	deadline := time.Now().Add(5 * time.Second)
	for s, err = Open(ctx, path); err != nil && time.Now().Before(deadline); s, err = Open(ctx, path) {
		time.Sleep(10 * time.Millisecond)
	}
	must(t, err)
	must(t, s.Close())
	cmd = execpkg.Command(os.Args[0], "-test.run=^TestHelperOpen$")
	cmd.Env = append(os.Environ(), "SQLITESTORE_HELPER_DB="+path)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child process could not open a free database: %v\n%s", err, out)
	}

	_, err = Open(ctx, filepath.Join(t.TempDir(), "no", "such", "dir", "app.db"))
	errContains(t, err, "does not exist: create it or fix the path")
}

// TestHelperOpen opens the database of $SQLITESTORE_HELPER_DB, for
// TestSecondInstanceRefused's child process.
func TestHelperOpen(t *testing.T) {
	path := os.Getenv("SQLITESTORE_HELPER_DB")
	if path == "" {
		t.Skip("helper process only")
	}
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
}

func TestMigrate(t *testing.T) {
	each(t, func(t *testing.T, h harness) {
		ctx := context.Background()
		s := h.open(t)
		exec(t, s, "CREATE TABLE a (id INTEGER PRIMARY KEY, name TEXT)")
		exec(t, s, "CREATE TABLE b (id INTEGER PRIMARY KEY, refresh_at DATETIME(6), refresh_attempt_no TEXT)")
		exec(t, s, "CREATE INDEX b_due ON b (refresh_at)")

		var out bytes.Buffer
		_, err := s.Migrate(ctx, []string{"a", "b"}, &out, true)
		must(t, err)
		dry := out.String()
		for _, want := range []string{
			`CREATE TABLE IF NOT EXISTS "refresher_schema_migrations"`,
			"ALTER TABLE \"a\" ADD COLUMN `refresh_at` DATETIME NULL;",
			`CREATE INDEX IF NOT EXISTS "idx_refresh_at" ON "a" ("refresh_at");`,
			"-- b: 0001_refresh_columns (added 10 columns; 2 columns already existed)",
			"-- b: 0002_refresh_at_index (index idx_refresh_at already existed)",
			`INSERT INTO "refresher_schema_migrations"`,
		} {
			if !strings.Contains(dry, want) {
				t.Fatalf("dry run lacks %q:\n%s", want, dry)
			}
		}
		var n int
		must(t, s.DB().QueryRow("SELECT COUNT(*) FROM sqlite_schema WHERE name = 'refresher_schema_migrations'").Scan(&n))
		eq(t, n, 0, "a dry run changes nothing")

		out.Reset()
		rep, err := s.Migrate(ctx, []string{"a", "b", "A"}, &out, false)
		must(t, err)
		eq(t, out.String(), "a: applied 0001_refresh_columns (added 12 columns)\n"+
			"a: applied 0002_refresh_at_index (added index idx_refresh_at)\n"+
			"a: applied 0003_state_count_indexes (added 4 indexes)\na: applied 0004_refresh_priority (added 2 columns and 2 indexes)\na: applied 0005_priority_attempt_index (added index idx_refresh_priority_attempt)\n"+
			"b: applied 0001_refresh_columns (added 10 columns; 2 columns already existed)\n"+
			"b: recorded 0002_refresh_at_index (index idx_refresh_at already existed)\n"+
			"b: applied 0003_state_count_indexes (added 4 indexes)\nb: applied 0004_refresh_priority (added 2 columns and 2 indexes)\nb: applied 0005_priority_attempt_index (added index idx_refresh_priority_attempt_b)\n"+
			"b: warning: column refresh_attempt_no exists as text, migration 0001_refresh_columns declares INT; left unchanged\n")
		eq(t, len(rep.Tables), 2)
		must(t, s.Check(ctx, models.Table{Name: "a", Key: "id"}))
		must(t, s.Check(ctx, models.Table{Name: "b", Key: "id"}))

		out.Reset()
		rep, err = s.Migrate(ctx, []string{"a", "b"}, &out, false)
		must(t, err)
		eq(t, rep.Tables[0].UpToDate() && rep.Tables[1].UpToDate(), true)
		eq(t, out.String(), "a: up to date\nb: up to date\n")

		// A second table gets its own index name: index names are global.
		exec(t, s, "CREATE TABLE c (id INTEGER PRIMARY KEY)")
		out.Reset()
		_, err = s.Migrate(ctx, []string{"c"}, &out, false)
		must(t, err)
		errContains(t, errors.New(out.String()), "c: applied 0002_refresh_at_index (added index idx_refresh_at_c)")
		q, err := s.compile(ctx, s.DB(), models.Table{Name: "c", Key: "id"})
		must(t, err)
		eq(t, q.meta.refreshIndex, "idx_refresh_at_c")

		var versions []string
		rows, err := s.DB().Query("SELECT table_name || ' ' || version || ' ' || name FROM refresher_schema_migrations ORDER BY 1")
		must(t, err)
		for rows.Next() {
			var v string
			must(t, rows.Scan(&v))
			versions = append(versions, v)
		}
		rows.Close()
		eq(t, versions, []string{"a 1 0001_refresh_columns", "a 2 0002_refresh_at_index", "a 3 0003_state_count_indexes", "a 4 0004_refresh_priority", "a 5 0005_priority_attempt_index", "b 1 0001_refresh_columns", "b 2 0002_refresh_at_index", "b 3 0003_state_count_indexes", "b 4 0004_refresh_priority", "b 5 0005_priority_attempt_index", "c 1 0001_refresh_columns", "c 2 0002_refresh_at_index", "c 3 0003_state_count_indexes", "c 4 0004_refresh_priority", "c 5 0005_priority_attempt_index"})

		_, err = s.Migrate(ctx, []string{"a", "nope"}, &out, false)
		errContains(t, err, `table "nope" does not exist`)
	})
}

func TestMigrateDryRunWithoutDatabase(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	_, err := Migrate(context.Background(), nil, []string{"items"}, &out, true)
	must(t, err)
	errContains(t, errors.New(out.String()), `ALTER TABLE "items" ADD COLUMN`, `CREATE INDEX IF NOT EXISTS "idx_refresh_at" ON "items"`)
	_, err = Migrate(context.Background(), nil, []string{"items"}, &out, false)
	errContains(t, err, "no database")
}

func TestInspector(t *testing.T) {
	each(t, func(t *testing.T, h harness) {
		ctx := context.Background()
		s := h.open(t)
		tbl := itemsTable(t, s, "TEXT")
		now := base
		c, err := s.Counts(ctx, tbl, now, time.Hour)
		must(t, err)
		eq(t, c, models.Counts{}, "empty table")

		insertItem(t, s, "due1", now.Add(-30*time.Minute))
		insertItem(t, s, "late1", now.Add(-2*time.Hour))
		insertItem(t, s, "later", now.Add(time.Hour))
		exec(t, s, "INSERT INTO items (k, refresh_attempt_uid, refresh_attempt_no, refresh_failing_since, refresh_last_error) VALUES ('run', 'u1', 4, ?, 'HTTP 500 Oops')", dbTime(now))
		exec(t, s, "INSERT INTO items (k, refresh_disabled_until_update, refresh_failing_since, refresh_disabled_user_friendly_reason) VALUES ('off', ?, ?, 'Bad URL')", dbTime(now), dbTime(now))
		for i := range 7 {
			exec(t, s, "INSERT INTO items (k) VALUES (?)", fmt.Sprintf("p%02d", i))
		}
		c, err = s.Counts(ctx, tbl, now, time.Hour)
		must(t, err)
		eq(t, c, models.Counts{Total: 12, Due: 2, Late: 1, Running: 1, Failing: 1, Disabled: 1, OldestDue: now.Add(-2 * time.Hour), MaxAttemptNo: 4})

		list := func(q models.ListQuery) []string {
			t.Helper()
			q.Now, q.LateAfter = now, time.Hour
			rows, err := s.List(ctx, tbl, q)
			must(t, err)
			return keysOf(rows.Rows)
		}
		eq(t, list(models.ListQuery{State: models.StateDue}), []string{"due1", "late1"})
		eq(t, list(models.ListQuery{State: models.StateLate}), []string{"late1"})
		eq(t, list(models.ListQuery{State: models.StateRunning}), []string{"run"})
		eq(t, list(models.ListQuery{State: models.StateFailing}), []string{"run"})
		eq(t, list(models.ListQuery{State: models.StateDisabled}), []string{"off"})
		eq(t, list(models.ListQuery{State: models.StateAll, Search: "oops"}), []string{"run"}, "search in the last error, any case")
		eq(t, list(models.ListQuery{State: models.StateAll, Search: "bad url"}), []string{"off"})
		eq(t, list(models.ListQuery{State: models.StateAll, Search: "P0"}), []string{"p00", "p01", "p02", "p03", "p04", "p05", "p06"}, "search in the key")
		eq(t, list(models.ListQuery{State: models.StateAll, Search: "_"}), []string{}, "_ is literal")
		eq(t, list(models.ListQuery{State: models.StateDue, Search: "1"}), []string{"due1", "late1"}, "search with a state")

		// Keyset pagination by key.
		var all []string
		after := ""
		for {
			page := list(models.ListQuery{State: models.StateAll, After: after, Limit: 5})
			if len(page) == 0 {
				break
			}
			if len(page) > 5 {
				t.Fatalf("page of %d rows", len(page))
			}
			all = append(all, page...)
			after = page[len(page)-1]
		}
		eq(t, all, []string{"due1", "late1", "later", "off", "p00", "p01", "p02", "p03", "p04", "p05", "p06", "run"})
		eq(t, len(list(models.ListQuery{State: models.StateAll})), 12, "default limit 50")
		_, err = s.List(ctx, tbl, models.ListQuery{State: "sleeping"})
		errContains(t, err, `unknown state "sleeping"`)
	})
}

// A table's statements are compiled once, not for each statement of each
// batch.
func TestCompileCached(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "app.db"))
	must(t, err)
	defer s.Close()
	tbl := itemsTable(t, s, "TEXT")
	_, err = s.compile(ctx, s.db, tbl)
	must(t, err)
	if n := testing.AllocsPerRun(10, func() { _, _ = s.compile(ctx, s.db, tbl) }); n > 2 {
		t.Errorf("compile allocates %v times once the table is known, want at most 2", n)
	}
}

// TestOpenKeepsTempInMemory checks the pragma that keeps the statement
// journal of a bulk UPDATE in a transaction off the disk, on every
// connection of the pool.
func TestOpenKeepsTempInMemory(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "app.db"))
	must(t, err)
	defer s.Close()
	conns := make([]*sql.Conn, DefaultMaxConnections)
	for i := range conns {
		c, err := s.DB().Conn(ctx)
		must(t, err)
		defer c.Close()
		conns[i] = c
		var store int
		must(t, c.QueryRowContext(ctx, "PRAGMA temp_store").Scan(&store))
		if store != 2 {
			t.Errorf("connection %d: temp_store = %d, want 2 (MEMORY)", i, store)
		}
	}
}

// TestMigratePartialIndex: an index that is partial or on an expression
// does not count as the migration's index, even on its columns or under
// its name (SQLite's index names are global): the migration adds a plain
// one, which the store's statements then use. Before, a partial index on
// refresh_at counted as the index of 0002, and the claims ran without one.
func TestMigratePartialIndex(t *testing.T) {
	each(t, func(t *testing.T, h harness) {
		ctx := context.Background()
		s := h.open(t)
		exec(t, s, "CREATE TABLE p (id INTEGER PRIMARY KEY, refresh_at DATETIME(6))")
		exec(t, s, "CREATE INDEX idx_refresh_at ON p (refresh_at) WHERE refresh_at IS NOT NULL")
		exec(t, s, "CREATE INDEX p_due_text ON p ((refresh_at || ''))")

		var out bytes.Buffer
		_, err := s.Migrate(ctx, []string{"p"}, &out, false)
		must(t, err)
		errContains(t, errors.New(out.String()), "p: applied 0002_refresh_at_index (added index idx_refresh_at_p)")
		q, err := s.compile(ctx, s.DB(), models.Table{Name: "p", Key: "id"})
		must(t, err)
		eq(t, q.meta.refreshIndex, "idx_refresh_at_p")

		out.Reset()
		_, err = s.Migrate(ctx, []string{"p"}, &out, false)
		must(t, err)
		eq(t, out.String(), "p: up to date\n")
	})
}
