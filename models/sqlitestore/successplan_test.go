package sqlitestore

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
)

// TestSaveSuccessesSearchesByKey: on a database file whose table has no
// statistics (never ANALYZEd, as a user's table may be) and on one that
// has them, each UPDATE of SaveSuccesses reads the batch's document
// (json_each) in the outer loop and searches the table by its key or
// rowid, never walking the table or another index once per row. It
// checks both the INTEGER PRIMARY KEY and a key with a unique index,
// and the statement with RETURNING that SaveSuccesses runs when a batch
// is not written whole.
func TestSaveSuccessesSearchesByKey(t *testing.T) {
	t.Parallel()
	const rows = 2000
	for _, c := range []struct{ name, create, key string }{
		{"integer primary key", "CREATE TABLE plan (id INTEGER PRIMARY KEY, input_url VARCHAR(255) NOT NULL DEFAULT '')", "id"},
		{"unique key", "CREATE TABLE plan (id INTEGER PRIMARY KEY, k VARCHAR(64) NOT NULL UNIQUE)", "k"},
	} {
		for _, analyzed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/analyzed=%v", c.name, analyzed), func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				s, err := Open(ctx, filepath.Join(t.TempDir(), "app.db"))
				must(t, err)
				defer s.Close()
				exec(t, s, c.create)
				_, err = s.Migrate(ctx, []string{"plan"}, io.Discard, false)
				must(t, err)
				exec(t, s, "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM c WHERE i < ?) "+
					"INSERT INTO plan ("+c.key+", refresh_at) SELECT i, ? FROM c", rows, dbTime(base))
				if analyzed {
					exec(t, s, "ANALYZE")
				}
				var stats int
				must(t, s.DB().QueryRow("SELECT COUNT(*) FROM sqlite_schema WHERE name = 'sqlite_stat1'").Scan(&stats))
				eq(t, stats == 1, analyzed, "statistics")

				tbl := models.Table{Name: "plan", Key: c.key}
				q, err := s.compile(ctx, s.DB(), tbl)
				must(t, err)
				now := base.Add(time.Minute)
				w, err := policy.Succeeded(policy.Result{Type: policy.ResultSuccess}, now, everyMinuteSchedule{})
				must(t, err)
				succ := make([]models.Success, 3)
				for i := range succ {
					succ[i] = models.Success{Key: fmt.Sprint(i + 1), AttemptUID: fmt.Sprintf("d1v5bqh6n88c7389a%03d", i), State: w}
				}
				rs, guard, err := models.SuccessRows(tbl, succ)
				must(t, err)
				groups := models.GroupByID(rs, guard, true, false, nil)
				eq(t, len(groups), 1, "groups")
				groups[0].Cols = models.SuccessColumns
				stmts := successUpdates(q, groups[0], now)
				eq(t, len(stmts), 2, "statements (a plain success clears refresh_failing_since)")
				last := stmts[len(stmts)-1]
				stmts = append(stmts, statement{last.query + " RETURNING " + successKey(q), last.args})
				for i, st := range stmts {
					plan := queryPlan(t, s, st.query, st.args...)
					if len(plan) != 2 || !strings.HasPrefix(plan[0], "SCAN json_each") ||
						!strings.HasPrefix(plan[1], "SEARCH plan USING") ||
						!(strings.Contains(plan[1], "rowid=?)") || strings.Contains(plan[1], "("+c.key+"=?)")) {
						t.Errorf("statement %d: plan %q, want json_each scanned then plan searched by its key\n%s", i, plan, st.query)
					}
				}
			})
		}
	}
}

// queryPlan is the detail column of EXPLAIN QUERY PLAN of query, one entry
// per loop or step, outer first.
func queryPlan(t testing.TB, s *Store, query string, args ...any) []string {
	t.Helper()
	rows, err := s.DB().Query("EXPLAIN QUERY PLAN "+query, args...)
	must(t, err)
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		must(t, rows.Scan(&id, &parent, &notused, &detail))
		plan = append(plan, detail)
	}
	must(t, rows.Err())
	return plan
}
