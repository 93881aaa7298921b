package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/internal/teststore"
	"github.com/refresher/refresher/redisio"
)

// TestKindsOnTwoDatabases runs one service whose kind reports lives on
// MariaDB (the top-level database) and whose kind pages lives on
// PostgreSQL (its own database:): migrate adds each table's columns on its
// own database; enable, trigger, pause and resume act on each kind's own
// database; run dispatches both kinds, a worker answers, and the results
// apply to the right rows; the API counts each kind on its database, and
// /readyz checks both.
func TestKindsOnTwoDatabases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	my, pg := teststore.Open(t, teststore.MySQL), teststore.Open(t, teststore.Postgres)
	my.Exec(t, "CREATE TABLE reports (id BIGINT AUTO_INCREMENT PRIMARY KEY, uid CHAR(20) NOT NULL UNIQUE, url VARCHAR(200) NOT NULL)")
	pg.Exec(t, "CREATE TABLE pages (id bigserial PRIMARY KEY, uid varchar(20) NOT NULL UNIQUE, url text NOT NULL)")
	rdb, prefix := testenv.Redis(t)
	reports, pages := redisio.DefaultLists(prefix+"reports"), redisio.DefaultLists(prefix+"pages")
	path := filepath.Join(t.TempDir(), "refresher.yml")
	require.NoError(t, os.WriteFile(path, fmt.Appendf(nil, `
database: %q
redis: %q
http: "127.0.0.1:0"
max_sleep: 50ms
gauge_interval: 50ms
kinds:
  - name: reports
    key: uid
    payload: [url]
    schedule: "RRULE:FREQ=DAILY"
    input: %q
    output: %q
    dead: %q
  - name: pages
    database: %q
    key: uid
    payload: [url]
    schedule: "RRULE:FREQ=DAILY"
    input: %q
    output: %q
    dead: %q
`, my.URL, testenv.RedisURL(), reports.Input, reports.Output, reports.Dead, pg.URL, pages.Input, pages.Output, pages.Dead), 0o600))
	b := commandBundle{path: path}
	refreshColumns := func(d *teststore.DB, table string) int {
		schema := "current_schema()" // PostgreSQL: information_schema shows this database only
		if d == my {
			schema = "DATABASE()" // MariaDB: every database of the server
		}
		var n int
		require.NoError(t, d.QueryRow(`SELECT COUNT(*) FROM information_schema.columns
			WHERE table_schema = `+schema+` AND table_name = ? AND column_name LIKE 'refresh%'`, table).Scan(&n))
		return n
	}

	// migrate: each table on its own database (neither table exists on
	// the other one, so a migration there would fail).
	out, err := b.run(t, "migrate", "--config", path, "--print")
	require.NoError(t, err)
	require.Contains(t, out, "-- the database of kinds reports\n")
	require.Contains(t, out, "-- the database of kinds pages\n")
	require.Contains(t, out, "ADD COLUMN `refresh_at` DATETIME(6) NULL", "MariaDB's SQL for reports")
	require.Zero(t, refreshColumns(my, "reports")+refreshColumns(pg, "pages"), "--print changes nothing")
	out, err = b.run(t, "migrate", "--config", path)
	require.NoError(t, err, out)
	require.Equal(t, 14, refreshColumns(my, "reports"), "the refresh_ columns of every migration, 0004's priorities included")
	require.Equal(t, 14, refreshColumns(pg, "pages"))
	require.Zero(t, refreshColumns(my, "pages")+refreshColumns(pg, "reports"))

	past := time.Now().UTC().Add(-time.Minute).Truncate(time.Millisecond)
	my.Exec(t, "INSERT INTO reports (uid, url, refresh_at) VALUES ('r1', 'u', ?), ('r2', 'u', ?), ('r3', 'u', NULL)", past, past)
	pg.Exec(t, "INSERT INTO pages (uid, url, refresh_at) VALUES ('p1', 'u', ?), ('p2', 'u', ?)", past, past)
	pg.Exec(t, `INSERT INTO pages (uid, url, refresh_attempt_no, refresh_disabled_until_update, refresh_disabled_user_friendly_reason)
		VALUES ('p3', 'u', 3, ?, 'Cannot refresh pages after 3 attempt(s)')`, past)

	// The commands on one kind act on its own database.
	out, err = b.run(t, "trigger", "--config", path, "--kind", "reports", "r3")
	require.NoError(t, err)
	require.Contains(t, out, "reports r3: refresh due now")
	out, err = b.run(t, "enable", "--config", path, "--kind", "pages", "p3")
	require.NoError(t, err)
	require.Contains(t, out, "pages p3: enabled, refresh due now")
	for _, kind := range []struct{ name, uid string }{{"reports", "r2"}, {"pages", "p2"}} {
		out, err = b.run(t, "pause", "--config", path, "--kind", kind.name, kind.uid)
		require.NoError(t, err)
		require.Contains(t, out, kind.name+" "+kind.uid+": paused")
	}
	refreshAt := func(d *teststore.DB, table, uid string) (at *time.Time) {
		require.NoError(t, d.QueryRow("SELECT refresh_at FROM "+table+" WHERE uid = ?", uid).Scan(&at))
		return at
	}
	require.Nil(t, refreshAt(my, "reports", "r2"))
	require.Nil(t, refreshAt(pg, "pages", "p2"))
	out, err = b.run(t, "resume", "--config", path, "--kind", "pages", "p2")
	require.NoError(t, err)
	require.Contains(t, out, "pages p2: ")
	require.NotNil(t, refreshAt(pg, "pages", "p2"), "planned at its next occurrence")
	_, err = b.run(t, "trigger", "--config", path, "--kind", "pages", "r1")
	require.ErrorContains(t, err, "some models were not found", "r1 is a row of reports, on the other database")

	// run, with a worker that answers every job with a success.
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var logs testenv.SyncBuffer
	var runErr error
	wg.Go(func() { runErr = run(runCtx, []string{"run", "--config", path}, &logs, &logs) })
	wg.Go(func() {
		answer(runCtx, t, rdb, map[string]string{reports.Input: reports.Output, pages.Input: pages.Output})
	})
	t.Cleanup(func() { stop(); wg.Wait() })

	lastSuccess := func(d *teststore.DB, table, uid string) (at *time.Time) {
		require.NoError(t, d.QueryRow("SELECT refresh_last_success_at FROM "+table+" WHERE uid = ?", uid).Scan(&at))
		return at
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the service's log:\n%s", logs.String())
		}
	})
	testenv.EventuallyNil(t, 20*time.Second, "each kind refreshed on its database", func() error {
		for _, row := range []struct {
			d          *teststore.DB
			table, uid string
		}{{my, "reports", "r1"}, {my, "reports", "r3"}, {pg, "pages", "p1"}, {pg, "pages", "p3"}} {
			if lastSuccess(row.d, row.table, row.uid) == nil {
				return fmt.Errorf("%s %s was not refreshed", row.table, row.uid)
			}
		}
		return nil
	})
	require.Nil(t, lastSuccess(my, "reports", "r2"), "paused")
	require.Nil(t, lastSuccess(pg, "pages", "p2"), "resumed at its next occurrence, not now")

	// The operator's surface: each kind counted on its own database; both
	// databases ready.
	base := regexp.MustCompile(`url=(http://\S+/)`).FindStringSubmatch(logs.String())
	require.NotNil(t, base, logs.String())
	status, body := httpGet(t, base[1]+"readyz")
	require.Equal(t, http.StatusOK, status, body)
	status, body = httpGet(t, base[1]+"api/v1/kinds")
	require.Equal(t, http.StatusOK, status, body)
	var overview struct {
		Kinds []struct {
			Name  string `json:"name"`
			Total int64  `json:"total"`
			Error string `json:"error"`
		} `json:"kinds"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &overview))
	require.Len(t, overview.Kinds, 2)
	for _, k := range overview.Kinds {
		require.Empty(t, k.Error, k.Name)
		require.Equal(t, int64(3), k.Total, k.Name)
	}
	testenv.EventuallyNil(t, 20*time.Second, "the gauges counting each kind on its database", func() error {
		_, metrics := httpGet(t, base[1]+"metrics")
		for _, want := range []string{`refresher_models{kind="pages",priority="normal",state="total"} 3`,
			`refresher_models{kind="reports",priority="normal",state="total"} 3`} {
			if !strings.Contains(metrics, want) {
				return fmt.Errorf("no %s in /metrics:\n%s", want, metrics)
			}
		}
		return nil
	})

	stop()
	wg.Wait()
	require.NoError(t, runErr)
}

// answer pops the jobs of the input lists (input: output) and pushes a
// success for each, until ctx ends.
func answer(ctx context.Context, t *testing.T, rdb *redis.Client, lists map[string]string) {
	var inputs []string
	for in := range lists {
		inputs = append(inputs, in)
	}
	for ctx.Err() == nil {
		res, err := rdb.BLPop(ctx, 100*time.Millisecond, inputs...).Result()
		if err != nil {
			continue // redis.Nil: nothing yet; or ctx ended
		}
		var job redisio.Job
		if err := json.Unmarshal([]byte(res[1]), &job); err != nil {
			t.Errorf("a job that is not JSON: %v: %s", err, res[1])
			return
		}
		result, _ := json.Marshal(redisio.Result{UID: job.UID, AttemptUID: job.AttemptUID, Type: redisio.ResultSuccess})
		rdb.RPush(ctx, lists[res[0]], result)
	}
}

// httpGet returns the status and body of a GET of url.
func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// With kinds on several databases, an error of one names its kinds: a
// database that cannot be opened, and a migration that fails there (the
// other database's kinds are migrated first, in the order of the kinds).
func TestKindDatabaseErrorsNameTheKinds(t *testing.T) {
	t.Parallel()
	my, pg := teststore.Open(t, teststore.MySQL), teststore.Open(t, teststore.Postgres)
	my.Exec(t, "CREATE TABLE reports (id BIGINT AUTO_INCREMENT PRIMARY KEY, uid CHAR(20) NOT NULL UNIQUE)")
	config := func(pagesDB string) string {
		path := filepath.Join(t.TempDir(), "refresher.yml")
		require.NoError(t, os.WriteFile(path, fmt.Appendf(nil, `
database: %q
kinds:
  - {name: reports, key: uid, schedule: "RRULE:FREQ=DAILY"}
  - {name: pages, key: uid, schedule: "RRULE:FREQ=DAILY", database: %q}
`, my.URL, pagesDB), 0o600))
		return path
	}
	b := commandBundle{}
	_, err := b.run(t, "migrate", "--config", config("postgres://postgres@127.0.0.1:1/nowhere?sslmode=disable"))
	require.ErrorContains(t, err, "database of kinds pages: connect to PostgreSQL at 127.0.0.1")

	out, err := b.run(t, "migrate", "--config", config(pg.URL))
	require.ErrorContains(t, err, "database of kinds pages: ")
	require.Contains(t, out, "-- the database of kinds reports\nreports: applied 0001_refresh_columns")
}
