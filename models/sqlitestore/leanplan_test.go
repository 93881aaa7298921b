package sqlitestore

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/refresher/refresher/models"
)

// TestLeanOrAsWritten: the bulk UPDATEs of a large batch (Save's, by rowid
// and by key, with and without a guard, and SaveSuccesses's) run without
// MATERIALIZED when the table has no statistics or statistics that do not
// undercount it, and as written when they do (taken with 5 rows of 2000);
// either way the statement run reads the batch's document once. A small
// batch runs as written.
func TestLeanOrAsWritten(t *testing.T) {
	t.Parallel()
	for _, tc := range planTables {
		for _, stats := range []string{statsNone, statsFresh, statsStale, statsFailing} {
			t.Run(tc.name+"/"+stats, func(t *testing.T) {
				t.Parallel()
				s, q := planStore(t, tc, stats)
				stmts := successStatements(t, q)[:2] // the RETURNING one runs as written
				r := &models.Row{Key: "1", State: fullState(1)}
				for _, byRowid := range []bool{true, false} {
					for _, guard := range []bool{false, true} {
						g := models.SaveGroup{ByID: byRowid, Cols: models.AllColumns}
						for i := range leanFrom {
							g.IDs, g.Rows = append(g.IDs, fmt.Sprint(i+1)), append(g.Rows, r)
							if guard {
								g.Guard = append(g.Guard, fmt.Sprintf("g%d", i))
							}
						}
						query, args := jsonUpdate(q, g, nil)
						stmts = append(stmts, statement{query, args})
					}
				}
				err := s.Tx(context.Background(), func(mt models.Tx) error {
					tx := mt.(*Tx)
					for i, st := range stmts {
						if !strings.HasPrefix(st.query, materialized) {
							t.Fatalf("statement %d does not begin with %q: %s", i, materialized, st.query)
						}
						small, err := tx.leanOrAsWritten(context.Background(), st.query, st.args, leanFrom-1)
						must(t, err)
						eq(t, small, st.query, fmt.Sprintf("statement %d of a small batch", i))
						run, err := tx.leanOrAsWritten(context.Background(), st.query, st.args, leanFrom)
						must(t, err)
						eq(t, strings.HasPrefix(run, materialized), stats == statsStale, fmt.Sprintf("statement %d materialized", i))
						if p := explain(t, s, run, st.args...); !p.readsDocumentOnce() {
							t.Errorf("statement %d: plan %s, want the document read once\n%s", i, p, run)
						}
					}
					return nil
				})
				must(t, err)
			})
		}
	}
}

// TestReadsDocumentOnce: the plans the check accepts and refuses.
func TestReadsDocumentOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		plan queryPlan
		want bool
	}{
		{queryPlan{{2, 0, "MATERIALIZE j"}, {6, 2, "SCAN json_each VIRTUAL TABLE INDEX 1:"}, {20, 0, "SCAN plan"}, {25, 0, "SEARCH j USING AUTOMATIC COVERING INDEX (k=?)"}}, true},
		{queryPlan{{5, 0, "SCAN json_each VIRTUAL TABLE INDEX 1:"}, {12, 0, "SEARCH plan USING INTEGER PRIMARY KEY (rowid=?)"}}, true},
		{queryPlan{{5, 0, "SCAN plan"}, {12, 0, "SCAN json_each VIRTUAL TABLE INDEX 1:"}}, false},
		{queryPlan{{5, 0, "SCAN plan"}}, false},
	} {
		eq(t, tc.plan.readsDocumentOnce(), tc.want, tc.plan.String())
	}
}
