package pgstore

import (
	"context"
	"io"
	"os"
	"testing"
	"time"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/models"
)

// TestCountsMillionRows times Counts on a table of 1,000,000 rows (1% due,
// 0.5% running, 2% failing, 1% disabled), with the indexes of migration
// 0003 and without them, and checks both against plain SQL. It runs only
// with REFRESHER_HEAVY=1.
func TestCountsMillionRows(t *testing.T) {
	if os.Getenv("REFRESHER_HEAVY") != "1" {
		t.Skip("set REFRESHER_HEAVY=1 to time Counts on 1M rows")
	}
	url := testenv.PostgresURL(t)
	ctx := context.Background()
	s, err := Open(ctx, url, 4)
	must(t, err)
	defer s.Close()
	base := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	exec(t, s, "CREATE TABLE big (id BIGSERIAL PRIMARY KEY, k VARCHAR(64) NOT NULL UNIQUE, payload VARCHAR(255) NULL)")
	_, err = s.Migrate(ctx, []string{"big"}, io.Discard, false)
	must(t, err)
	start := time.Now()
	exec(t, s, `INSERT INTO big (k, payload, refresh_at, refresh_attempt_uid, refresh_attempt_no, refresh_failing_since, refresh_disabled_until_update)
		SELECT 'm-' || g, repeat('x', 100),
		CASE WHEN g % 100 = 0 THEN $1::timestamp - (g % 3600) * interval '1 second' ELSE $1::timestamp + (g % 86400) * interval '1 second' END,
		CASE WHEN g % 200 = 1 THEN 'd1v5bqh6n88c' || lpad((g % 100000000)::text, 8, '0') END, g % 7,
		CASE WHEN g % 50 = 2 OR g % 100 = 3 THEN $1::timestamp - interval '1 hour' END,
		CASE WHEN g % 100 = 3 THEN $1::timestamp END
		FROM generate_series(1, 1000000) g`, base)
	exec(t, s, "VACUUM ANALYZE big")
	t.Logf("seeded 1M rows in %s", time.Since(start).Round(time.Millisecond))
	tbl := models.Table{Name: "big", Key: "k"}

	var want models.Counts
	must(t, s.Pool().QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE refresh_at <= $1), count(*) FILTER (WHERE refresh_at <= $2),
		count(*) FILTER (WHERE refresh_attempt_uid IS NOT NULL),
		count(*) FILTER (WHERE refresh_failing_since IS NOT NULL AND refresh_disabled_until_update IS NULL),
		count(*) FILTER (WHERE refresh_disabled_until_update IS NOT NULL), max(refresh_attempt_no) FROM big`,
		base, base.Add(-time.Minute)).Scan(&want.Total, &want.Due, &want.Late, &want.Running, &want.Failing, &want.Disabled, &want.MaxAttemptNo))

	timeIt := func(what string) {
		t.Helper()
		st, err := Open(ctx, url, 4)
		must(t, err)
		defer st.Close()
		st.exactTotalUpTo = 2_000_000 // the exact total, whatever the estimate of 1M rows
		st.exactStateUpTo = 2_000_000 // and every state counted
		var best time.Duration
		for i := range 5 {
			start := time.Now()
			c, err := st.Counts(ctx, tbl, base, time.Minute)
			d := time.Since(start)
			must(t, err)
			c.OldestDue = time.Time{}
			eq(t, c, want, what)
			if i == 0 || d < best {
				best = d
			}
		}
		t.Logf("%s: Counts best of 5: %s (%+v)", what, best.Round(time.Millisecond), want)
	}
	timeIt("with 0003's indexes")
	for _, col := range []string{"refresh_attempt_uid", "refresh_disabled_until_update_refresh_failing_since", "refresh_failing_since", "refresh_attempt_no"} {
		exec(t, s, `DROP INDEX "`+indexName("big", []string{col})+`"`)
	}
	timeIt("without them")
}
