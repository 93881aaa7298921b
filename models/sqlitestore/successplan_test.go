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

// planTable is a table shape of the plan tests: its key is the INTEGER
// PRIMARY KEY, or a column with a unique index (written by rowid or by
// key).
type planTable struct{ name, create, key string }

var planTables = []planTable{
	{"integer primary key", "CREATE TABLE plan (id INTEGER PRIMARY KEY, input_url VARCHAR(255) NOT NULL DEFAULT '')", "id"},
	{"unique key", "CREATE TABLE plan (id INTEGER PRIMARY KEY, k VARCHAR(64) NOT NULL UNIQUE)", "k"},
}

// Statistics of a plan test's table: none (never ANALYZEd, as a user's
// table may be), fresh (ANALYZEd with all its rows) or stale (ANALYZEd
// with 5 rows, before the others were inserted).
const (
	statsNone  = "none"
	statsFresh = "fresh"
	statsStale = "stale"
	// statsFailing: ANALYZEd while every row was failing since its own
	// time, so that refresh_failing_since looks selective; the rows
	// succeeded since.
	statsFailing = "failing"
)

// planStore is a database file with table "plan" of tc's shape, 2000
// rows with keys 1..2000, and the statistics stats.
func planStore(t *testing.T, tc planTable, stats string) (*Store, compiled) {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "app.db"))
	must(t, err)
	t.Cleanup(func() { _ = s.Close() })
	exec(t, s, tc.create)
	_, err = s.Migrate(ctx, []string{"plan"}, io.Discard, false)
	must(t, err)
	insert := func(from, to int) {
		exec(t, s, "WITH RECURSIVE c(i) AS (SELECT ? UNION ALL SELECT i+1 FROM c WHERE i < ?) "+
			"INSERT INTO plan ("+tc.key+", refresh_at) SELECT i, ? FROM c", from, to, dbTime(base))
	}
	const rows = 2000
	switch stats {
	case statsNone:
		insert(1, rows)
	case statsFresh:
		insert(1, rows)
		exec(t, s, "ANALYZE")
	case statsFailing:
		insert(1, rows)
		exec(t, s, "UPDATE plan SET refresh_failing_since = strftime('%Y-%m-%d %H:%M:%f', 'now', '-' || rowid || ' seconds')")
		exec(t, s, "ANALYZE")
		exec(t, s, "UPDATE plan SET refresh_failing_since = NULL")
	case statsStale:
		insert(1, 5)
		exec(t, s, "ANALYZE")
		insert(6, rows)
	}
	var n int
	must(t, s.DB().QueryRow("SELECT COUNT(*) FROM sqlite_schema WHERE name = 'sqlite_stat1'").Scan(&n))
	eq(t, n == 1, stats != statsNone, "statistics")
	q, err := s.compile(ctx, s.DB(), models.Table{Name: "plan", Key: tc.key})
	must(t, err)
	return s, q
}

// successStatements are the statements SaveSuccesses runs for a batch of
// three plain successes: the two UPDATEs of successUpdates and the last
// one with RETURNING (a batch not written whole).
func successStatements(t *testing.T, q compiled) []statement {
	t.Helper()
	now := base.Add(time.Minute)
	w, err := policy.Succeeded(policy.Result{Type: policy.ResultSuccess}, now, everyMinuteSchedule{})
	must(t, err)
	succ := make([]models.Success, 3)
	for i := range succ {
		succ[i] = models.Success{Key: fmt.Sprint(i + 1), AttemptUID: fmt.Sprintf("d1v5bqh6n88c7389a%03d", i), State: w}
	}
	rs, guard, err := models.SuccessRows(models.Table{Name: "plan", Key: "k"}, succ)
	must(t, err)
	groups := models.GroupByID(rs, guard, true, false, nil)
	eq(t, len(groups), 1, "groups")
	groups[0].Cols = models.SuccessColumns
	stmts := successUpdates(q, groups[0], now)
	eq(t, len(stmts), 2, "statements (a plain success clears refresh_failing_since)")
	last := stmts[len(stmts)-1]
	return append(stmts, statement{last.query + " RETURNING " + successKey(q), last.args})
}

// TestSaveSuccessesSearchesByKey: on a database file whose table has no
// statistics and on one that has them, each statement of SaveSuccesses
// reads the batch's document once and then searches the table by its key
// or rowid for each of its rows, never walking the table or another index
// (refresh_failing_since's, which the table without statistics got).
func TestSaveSuccessesSearchesByKey(t *testing.T) {
	t.Parallel()
	for _, tc := range planTables {
		for _, stats := range []string{statsNone, statsFresh, statsFailing} {
			t.Run(tc.name+"/"+stats, func(t *testing.T) {
				t.Parallel()
				s, q := planStore(t, tc, stats)
				for i, st := range successStatements(t, q) {
					p := explain(t, s, st.query, st.args...)
					if !p.readsDocumentOnce() || !p.searchesByKey(tc.key) {
						t.Errorf("statement %d: plan %s, want the document read once, then plan searched by its key\n%s", i, p, st.query)
					}
				}
			})
		}
	}
}

// TestJSONUpdateReadsDocumentOnce: whatever the statistics (none, fresh,
// or stale: taken with 5 rows of 2000), every statement of Save,
// SaveIfAttempt and SaveSuccesses reads the batch's document once, not
// once per row of the table in whichever loop SQLite puts it.
func TestJSONUpdateReadsDocumentOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range planTables {
		for _, stats := range []string{statsNone, statsFresh, statsStale, statsFailing} {
			t.Run(tc.name+"/"+stats, func(t *testing.T) {
				t.Parallel()
				s, q := planStore(t, tc, stats)
				stmts := successStatements(t, q)
				r := &models.Row{Key: "1", State: fullState(1)}
				for _, byRowid := range []bool{true, false} {
					for _, guard := range [][]string{nil, {"g", "h"}} {
						query, args := jsonUpdate(q, models.SaveGroup{ByID: byRowid, Cols: models.AllColumns, IDs: []string{"1", "2"}, Rows: []*models.Row{r, r}, Guard: guard}, nil)
						stmts = append(stmts, statement{query, args})
					}
				}
				for i, st := range stmts {
					if p := explain(t, s, st.query, st.args...); !p.readsDocumentOnce() {
						t.Errorf("statement %d: plan %s, want the document read once\n%s", i, p, st.query)
					}
				}
			})
		}
	}
}

// queryPlan is EXPLAIN QUERY PLAN's answer: its steps in order, each
// with the id of the step it belongs to (0 for the statement's own).
type queryPlan []planStep

type planStep struct {
	id, parent int
	detail     string
}

func explain(t testing.TB, s *Store, query string, args ...any) queryPlan {
	t.Helper()
	rows, err := s.DB().Query("EXPLAIN QUERY PLAN "+query, args...)
	must(t, err)
	defer rows.Close()
	var p queryPlan
	for rows.Next() {
		var st planStep
		var notused int
		must(t, rows.Scan(&st.id, &st.parent, &notused, &st.detail))
		p = append(p, st)
	}
	must(t, rows.Err())
	return p
}

func (p queryPlan) String() string {
	var b strings.Builder
	for i, st := range p {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%d<%d %s", st.id, st.parent, st.detail)
	}
	return b.String()
}

// readsDocumentOnce reports whether json_each is read in one step, once
// per statement: inside the materialization of j, or as the join's
// outermost loop. (Anywhere else, a loop outside it would read it again
// for each of its rows.)
func (p queryPlan) readsDocumentOnce() bool {
	materialize, outermost, reads := -1, -1, 0
	for _, st := range p {
		switch {
		case st.detail == "MATERIALIZE j":
			materialize = st.id
		case st.parent == 0 && outermost < 0:
			outermost = st.id
		}
	}
	for _, st := range p {
		if strings.Contains(st.detail, "json_each") {
			reads++
			if st.parent != materialize && st.id != outermost {
				return false
			}
		}
	}
	return reads == 1
}

// searchesByKey reports whether the join's loops are the document's rows
// outside (j, or json_each itself) and table plan searched by rowid or by
// key inside.
func (p queryPlan) searchesByKey(key string) bool {
	var loops []string
	for _, st := range p {
		if st.parent == 0 && st.detail != "MATERIALIZE j" {
			loops = append(loops, st.detail)
		}
	}
	return len(loops) == 2 && (loops[0] == "SCAN j" || strings.HasPrefix(loops[0], "SCAN json_each")) &&
		strings.HasPrefix(loops[1], "SEARCH plan USING ") &&
		(strings.Contains(loops[1], "rowid=?)") || strings.Contains(loops[1], "("+key+"=?)"))
}
