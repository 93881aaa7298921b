package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
)

// commandBundle is a database with an app table and a config file naming it.
type commandBundle struct {
	db   *sql.DB
	path string
}

func setupCommands(t *testing.T) commandBundle {
	t.Helper()
	db, dsn := testenv.DB(t)
	_, err := db.Exec(`CREATE TABLE big_tables (id BIGINT AUTO_INCREMENT PRIMARY KEY,
		uid CHAR(20) NOT NULL UNIQUE, input_url VARCHAR(2048) NOT NULL)`)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "refresher.yml")
	require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(`
database: %q
kinds:
  - name: big_tables
    key: uid
    payload: [input_url]
    schedule: "RRULE:FREQ=DAILY"
`, dsn)), 0o600))
	return commandBundle{db: db, path: path}
}

func (b commandBundle) run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := run(context.Background(), args, &out, &out)
	return out.String(), err
}

func (b commandBundle) columns(t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, b.db.QueryRow(`SELECT COUNT(*) FROM information_schema.columns
		WHERE table_schema = DATABASE() AND table_name = 'big_tables' AND column_name LIKE 'refresh\_%'`).Scan(&n))
	return n
}

func TestMigrateCommand(t *testing.T) {
	t.Parallel()
	b := setupCommands(t)

	out, err := b.run(t, "migrate", "--config", b.path, "--print")
	require.NoError(t, err)
	require.Contains(t, out, "ADD COLUMN `refresh_at` DATETIME(6) NULL")
	require.Contains(t, out, "ADD INDEX")
	require.Zero(t, b.columns(t), "--print changes nothing")

	out, err = b.run(t, "migrate", "--config", b.path)
	require.NoError(t, err)
	require.Contains(t, out, "big_tables: applied 0001_refresh_columns")
	require.Equal(t, 14, b.columns(t), "the 12 refresh columns and the 2 priority columns")

	out, err = b.run(t, "migrate", "--config", b.path)
	require.NoError(t, err)
	require.Equal(t, "big_tables: up to date\n", out)
}

func TestEnableAndTriggerCommands(t *testing.T) {
	t.Parallel()
	b := setupCommands(t)
	_, err := b.run(t, "migrate", "--config", b.path)
	require.NoError(t, err)
	_, err = b.db.Exec(`INSERT INTO big_tables (uid, input_url, refresh_attempt_no, refresh_disabled_until_update,
		refresh_disabled_user_friendly_reason) VALUES ('off', 'u', 3, UTC_TIMESTAMP(6), 'Cannot refresh big_tables after 3 attempt(s)'),
		('idle', 'u', 0, NULL, NULL)`)
	require.NoError(t, err)

	out, err := b.run(t, "enable", "--config", b.path, "--kind", "big_tables", "off")
	require.NoError(t, err)
	require.Contains(t, out, "big_tables off: enabled, refresh due now (refresh_at NULL -> ")
	require.Contains(t, out, "attempt_no 3 -> 0")
	var disabled sql.NullTime
	var refreshAt sql.NullTime
	require.NoError(t, b.db.QueryRow("SELECT refresh_disabled_until_update, refresh_at FROM big_tables WHERE uid = 'off'").
		Scan(&disabled, &refreshAt))
	require.False(t, disabled.Valid)
	require.True(t, refreshAt.Valid)

	out, err = b.run(t, "trigger", "--config", b.path, "--kind", "big_tables", "idle", "ghost")
	require.ErrorContains(t, err, "some models were not found")
	require.Contains(t, out, "big_tables idle: refresh due now")
	require.Contains(t, out, `big_tables ghost: no row in big_tables with uid = "ghost"`)

	out, err = b.run(t, "trigger", "--config", b.path, "--kind", "big_tables", "--priority", "interactive", "idle")
	require.NoError(t, err)
	require.Contains(t, out, "big_tables idle: refresh due now at priority 0")
	var once sql.NullInt64
	require.NoError(t, b.db.QueryRow("SELECT refresh_priority_once FROM big_tables WHERE uid = 'idle'").Scan(&once))
	require.Equal(t, sql.NullInt64{Int64: 0, Valid: true}, once)
	_, err = b.run(t, "trigger", "--config", b.path, "--kind", "big_tables", "--priority", "asap", "idle")
	require.ErrorContains(t, err, `trigger --priority: priority "asap" is neither a level of priorities: ([interactive normal eventual]) nor a number`)

	_, err = b.run(t, "trigger", "--config", b.path, "--kind", "nope", "idle")
	require.ErrorContains(t, err, `unknown kind "nope" (configured: [big_tables])`)
	_, err = b.run(t, "enable", "--config", b.path, "idle")
	require.ErrorContains(t, err, `required flag(s) "kind" not set`)
}

// enable, trigger and why on a table that is not migrated say what is
// missing and how to fix it, as run does, instead of the database's raw
// error.
func TestAdminCommandsOnAnUnmigratedTable(t *testing.T) {
	t.Parallel()
	b := setupCommands(t)
	for cmd, key := range map[string][]string{"enable": {"x"}, "trigger": {"x"}, "why": {"--key", "x"}} {
		_, err := b.run(t, append([]string{cmd, "--config", b.path, "--kind", "big_tables"}, key...)...)
		require.ErrorContains(t, err, "lacks refresh column(s)", cmd)
		require.ErrorContains(t, err, "run `refresher migrate", cmd)
		require.NotContains(t, err.Error(), "Error 1054", cmd)
	}
}
