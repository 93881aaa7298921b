package mysqlstore

import (
	"context"
	"io"
	"os"
	"testing"
	"time"

	"github.com/refresher/refresher/models"
)

// TestCountsMillionRows times Counts on a table of 1,000,000 rows (1% due,
// 0.5% running, 2% failing, 1% disabled), with the indexes of migration
// 0003 and without them, and checks both against plain SQL. It takes about
// a minute, so it runs only with REFRESHER_HEAVY=1.
func TestCountsMillionRows(t *testing.T) {
	if os.Getenv("REFRESHER_HEAVY") != "1" {
		t.Skip("set REFRESHER_HEAVY=1 to time Counts on 1M rows")
	}
	db := testDB(t)
	ctx := context.Background()
	exec(t, db, "CREATE TABLE big (id BIGINT AUTO_INCREMENT PRIMARY KEY, k VARCHAR(64) NOT NULL, payload VARCHAR(255) NULL, UNIQUE KEY uk (k))")
	_, err := Migrate(ctx, db, []string{"big"}, io.Discard, false)
	must(t, err)
	// seq_1_to_N is MariaDB's Sequence engine.
	start := time.Now()
	exec(t, db, "INSERT INTO big (k, payload, refresh_at, refresh_attempt_uid, refresh_attempt_no, refresh_failing_since, refresh_disabled_until_update) "+
		"SELECT CONCAT('m-', seq), REPEAT('x', 100), "+
		"IF(seq % 100 = 0, ? - INTERVAL (seq % 3600) SECOND, ? + INTERVAL (seq % 86400) SECOND), "+
		"IF(seq % 200 = 1, CONCAT('d1v5bqh6n88c', LPAD(seq % 100000000, 8, '0')), NULL), seq % 7, "+
		"IF(seq % 50 = 2 OR seq % 100 = 3, ? - INTERVAL 1 HOUR, NULL), IF(seq % 100 = 3, ?, NULL) FROM seq_1_to_1000000",
		dbTime(base), dbTime(base), dbTime(base), dbTime(base))
	t.Logf("seeded 1M rows in %s", time.Since(start).Round(time.Millisecond))
	exec(t, db, "ANALYZE TABLE big")
	tbl := models.Table{Name: "big", Key: "k"}

	var want models.Counts
	must(t, db.QueryRow("SELECT COUNT(*), SUM(refresh_at <= ?), SUM(refresh_at <= ?), SUM(refresh_attempt_uid IS NOT NULL), "+
		"SUM(refresh_failing_since IS NOT NULL AND refresh_disabled_until_update IS NULL), SUM(refresh_disabled_until_update IS NOT NULL), MAX(refresh_attempt_no) FROM big",
		dbTime(base), dbTime(base.Add(-time.Minute))).Scan(&want.Total, &want.Due, &want.Late, &want.Running, &want.Failing, &want.Disabled, &want.MaxAttemptNo))

	timeIt := func(s *Store, what string) {
		t.Helper()
		s.exactTotalUpTo = 2_000_000 // the exact total, whatever the estimate of 1M rows
		s.exactStateUpTo = 2_000_000 // and every state counted
		var best time.Duration
		for i := range 5 {
			start := time.Now()
			c, err := s.Counts(ctx, tbl, base, time.Minute)
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
	timeIt(New(db), "with 0003's indexes")
	exec(t, db, "ALTER TABLE big DROP INDEX idx_refresh_attempt_uid, DROP INDEX idx_refresh_disabled, DROP INDEX idx_refresh_failing_since, DROP INDEX idx_refresh_attempt_no")
	timeIt(New(db), "without them")
}
