package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/redisio"
	"github.com/refresher/refresher/refresher"
)

// TestPauseAndResumeCommands pauses and resumes models and the whole kind
// from the command line, on MariaDB and Redis, and checks what the API
// reads: the same Redis records (with the OS user as who paused) and the
// same row changes as the API's actions.
func TestPauseAndResumeCommands(t *testing.T) {
	t.Parallel()
	b := setupCommands(t)
	rdb, prefix := testenv.Redis(t)
	lists := redisio.DefaultLists(prefix + "big_tables")
	cfg, err := os.ReadFile(b.path)
	require.NoError(t, err)
	cfg = append(cfg, fmt.Sprintf("    input: %q\n    output: %q\n    dead: %q\nredis: %q\n",
		lists.Input, lists.Output, lists.Dead, testenv.RedisURL())...)
	path := filepath.Join(t.TempDir(), "refresher.yml")
	require.NoError(t, os.WriteFile(path, cfg, 0o600))
	_, err = b.run(t, "migrate", "--config", path)
	require.NoError(t, err)
	_, err = b.db.Exec(`INSERT INTO big_tables (uid, input_url, refresh_at) VALUES ('a', 'u', UTC_TIMESTAMP(6) + INTERVAL 1 HOUR), ('b', 'u', UTC_TIMESTAMP(6))`)
	require.NoError(t, err)
	ctx := context.Background()
	refreshAt := func(uid string) sql.NullTime {
		var at sql.NullTime
		require.NoError(t, b.db.QueryRow("SELECT refresh_at FROM big_tables WHERE uid = ?", uid).Scan(&at))
		return at
	}

	// Models: a is paused (refresh_at cleared); ghost has no row and is
	// not recorded.
	out, err := b.run(t, "pause", "--config", path, "--kind", "big_tables", "--note", " upstream migrates ", "a", "ghost")
	require.ErrorContains(t, err, "pause: some models were not found")
	require.Contains(t, out, "big_tables a: paused; nothing is planned until it is resumed (refresh_at ")
	require.Contains(t, out, `big_tables ghost: no row in big_tables with uid = "ghost"`)
	require.False(t, refreshAt("a").Valid)
	paused, err := refresher.NewAdmin(nil, redisio.New(rdb)).PausedModels(ctx, lists)
	require.NoError(t, err)
	require.Len(t, paused, 1)
	require.Equal(t, "upstream migrates", paused["a"].Note)
	require.Equal(t, osUser(), paused["a"].By)
	require.False(t, paused["a"].At.IsZero())

	// The whole kind.
	out, err = b.run(t, "pause", "--config", path, "--kind", "big_tables", "--note", "incident 42")
	require.NoError(t, err)
	require.Equal(t, "big_tables: paused by "+osUser()+": no instance dispatches big_tables until `refresher resume --kind big_tables`; results still apply\n", out)
	kp, err := refresher.NewAdmin(nil, redisio.New(rdb)).KindPause(ctx, lists)
	require.NoError(t, err)
	require.NotNil(t, kp)
	require.Equal(t, "incident 42", kp.Note)
	require.Equal(t, osUser(), kp.By)
	require.True(t, refreshAt("b").Valid, "pausing the kind leaves its rows as they are")

	out, err = b.run(t, "resume", "--config", path, "--kind", "big_tables")
	require.NoError(t, err)
	require.Equal(t, "big_tables: resumed: the models that became due meanwhile are dispatched, each once\n", out)
	kp, err = refresher.NewAdmin(nil, redisio.New(rdb)).KindPause(ctx, lists)
	require.NoError(t, err)
	require.Nil(t, kp)
	out, err = b.run(t, "resume", "--config", path, "--kind", "big_tables")
	require.NoError(t, err)
	require.Equal(t, "big_tables: was not paused\n", out)

	// Resuming a plans its schedule's next occurrence (FREQ=DAILY).
	out, err = b.run(t, "resume", "--config", path, "--kind", "big_tables", "a")
	require.NoError(t, err)
	require.Contains(t, out, "big_tables a: resumed; next refresh at ")
	var planned bool
	require.NoError(t, b.db.QueryRow("SELECT refresh_at > UTC_TIMESTAMP(6) FROM big_tables WHERE uid = 'a'").Scan(&planned))
	require.True(t, planned, "resumed at the schedule's next occurrence, not due now")
	paused, err = refresher.NewAdmin(nil, redisio.New(rdb)).PausedModels(ctx, lists)
	require.NoError(t, err)
	require.Empty(t, paused)

	// Bad input says what is wrong.
	_, err = b.run(t, "pause", "--config", path, "--kind", "big_tables", "--note", strings.Repeat("x", 1001), "a")
	require.ErrorContains(t, err, "--note: 1001 characters; keep it under 1000")
	_, err = b.run(t, "pause", "--config", path, "--kind", "nope")
	require.ErrorContains(t, err, `unknown kind "nope" (configured: [big_tables])`)
	_, err = b.run(t, "resume", "--config", path, "a")
	require.ErrorContains(t, err, `required flag(s) "kind" not set`)
	kp, err = refresher.NewAdmin(nil, redisio.New(rdb)).KindPause(ctx, lists)
	require.NoError(t, err)
	require.Nil(t, kp, "a refused command changes nothing")
}
