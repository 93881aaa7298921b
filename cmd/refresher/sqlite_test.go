package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/models/stores"
	"github.com/refresher/refresher/redisio"
)

// sqliteConfig writes a config for a SQLite database file at db, with the
// test's own Redis lists, the HTTP server on a free loopback port and the
// gauges every 50ms.
func sqliteConfig(t *testing.T, db string) string {
	t.Helper()
	_, prefix := testenv.Redis(t)
	lists := redisio.DefaultLists(prefix + "big_tables")
	path := filepath.Join(t.TempDir(), "refresher.yml")
	require.NoError(t, os.WriteFile(path, fmt.Appendf(nil, `
database: "sqlite://%s"
redis: %q
http: "127.0.0.1:0"
gauge_interval: 50ms
kinds:
  - name: big_tables
    key: uid
    payload: [input_url]
    schedule: "RRULE:FREQ=DAILY"
    input: %q
    output: %q
    dead: %q
`, db, testenv.RedisURL(), lists.Input, lists.Output, lists.Dead), 0o600))
	return path
}

// run does not create a SQLite file that is not there (a typo in the path
// would otherwise start on a new, empty database): it says so, and leaves
// neither the file nor its lock file behind.
func TestRunRefusesMissingSQLiteFile(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "typo.db")
	b := commandBundle{path: sqliteConfig(t, db)}
	out, err := b.run(t, "run", "--config", b.path)
	require.ErrorContains(t, err, "typo.db: the file does not exist: fix the path")
	require.NotContains(t, out, "alert gauges")
	require.NoFileExists(t, db)
	require.NoFileExists(t, db+".lock")
}

// A start that fails (the table is missing) returns its error with nothing
// running behind it: no gauge logs "redis: client is closed" afterwards.
func TestFailedStartStopsTheGauges(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "empty.db")
	require.NoError(t, os.WriteFile(db, nil, 0o600))
	var out testenv.SyncBuffer
	err := run(context.Background(), []string{"run", "--config", sqliteConfig(t, db)}, &out, &out)
	require.ErrorContains(t, err, `table "big_tables" does not exist`)
	time.Sleep(300 * time.Millisecond) // 6 gauge intervals
	require.NotContains(t, out.String(), "client is closed")
}

// The admin commands write to a SQLite database while the service holds it
// (its instance lock keeps a second service out, not the operator).
func TestAdminCommandsBesideRunningSQLiteService(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "app.db")
	path := sqliteConfig(t, db)
	ctx := context.Background()
	svc, err := stores.Open(ctx, "sqlite://"+db, stores.Options{CreateSQLite: true}) // as run opens it: with the lock
	require.NoError(t, err)
	defer svc.Close()
	sdb := svc.(interface{ DB() *sql.DB }).DB()
	_, err = sdb.Exec(`CREATE TABLE big_tables (id INTEGER PRIMARY KEY, uid TEXT NOT NULL UNIQUE, input_url TEXT NOT NULL)`)
	require.NoError(t, err)
	_, err = svc.Migrate(ctx, []string{"big_tables"}, io.Discard, false)
	require.NoError(t, err)
	_, err = sdb.Exec(`INSERT INTO big_tables (uid, input_url) VALUES ('a', 'u')`)
	require.NoError(t, err)

	b := commandBundle{path: path}
	for _, args := range [][]string{{"enable", "a"}, {"trigger", "a"}, {"pause", "a"}, {"resume", "a"}} {
		out, err := b.run(t, append([]string{args[0], "--config", path, "--kind", "big_tables"}, args[1:]...)...)
		require.NoError(t, err, "%s: %s", args[0], out)
		require.True(t, strings.HasPrefix(out, "big_tables a: "), "%s: %s", args[0], out)
	}
	// A second service is still kept out.
	_, err = stores.Open(ctx, "sqlite://"+db, stores.Options{})
	require.ErrorContains(t, err, "another refresher is using this SQLite database")
}
