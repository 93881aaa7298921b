package refresher

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
)

// failedPass waits for the first log line with msg and returns it.
func failedPass(t *testing.T, log *testenv.SyncBuffer, msg string) string {
	t.Helper()
	var line string
	testenv.Eventually(t, 10*time.Second, fmt.Sprintf("%q in the log", msg), func() bool {
		for l := range strings.Lines(log.String()) {
			if strings.Contains(l, msg) {
				line = l
				return true
			}
		}
		return false
	})
	return line
}

// A failed claim is logged with the store's words once: the dispatcher
// adds none of its own over the driver's "claim due rows of `items`".
func TestClaimErrorIsWrappedOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	var log testenv.SyncBuffer
	b.cfg.Logger = slog.New(slog.NewTextHandler(&log, nil))
	b.start(nil)
	b.passes.wait(t, 1) // started: the start-up check passed
	// NextDue reads refresh_at only; the claim reads every state column.
	b.exec("ALTER TABLE items DROP COLUMN refresh_status")
	b.insert("m1")
	line := failedPass(t, &log, "dispatch pass failed")
	require.Equal(t, 1, strings.Count(line, "claim due rows of"), line)
}

// A failed fetch is logged with the drain's words once, which name the
// output list; the poller adds none of its own.
func TestFetchErrorIsWrappedOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	var log testenv.SyncBuffer
	b.cfg.Logger = slog.New(slog.NewTextHandler(&log, nil))
	require.NoError(t, b.rdb.Set(t.Context(), b.kind.Lists.Output, "not a list", 0).Err())
	b.start(nil)
	line := failedPass(t, &log, "poll pass failed")
	require.Contains(t, line, "WRONGTYPE")
	require.Equal(t, 1, strings.Count(line, b.kind.Lists.Output), line)
}

// A failed push is logged with redisio's words once ("push 3 messages to" the
// input list), and the undo the dispatcher adds.
func TestPushErrorIsWrappedOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{timeout: time.Hour})
	var log testenv.SyncBuffer
	b.cfg.Logger = slog.New(slog.NewTextHandler(&log, nil))
	b.insertN(3, t0)
	proxy, rio := redisVia(t)
	b.runOn(t.Context(), b.store, rio, func(c *Config) {
		c.faults.beforePush = func(string) { proxy.Cut() }
	})
	line := failedPass(t, &log, "dispatch pass failed")
	require.Equal(t, 1, strings.Count(line, "push 3 "), line)
	require.Equal(t, 1, strings.Count(line, b.kind.Lists.Input), line)
	require.Contains(t, line, "undid 3 attempts")
}
