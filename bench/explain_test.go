package main

import (
	"context"
	"strings"
	"testing"

	"github.com/rs/xid"
)

// TestStandardExplainIsTheServiceClaim checks that the standard bench
// explains the claim the service sends (claimSQL, which --scaling prints
// too), not a claim of its own: on a table with migration 0004 that is
// the kind's priority level along its composite index.
func TestStandardExplainIsTheServiceClaim(t *testing.T) {
	if testing.Short() {
		t.Skip("seeds a table on MariaDB and PostgreSQL")
	}
	for _, store := range []string{"mysql", "postgres"} {
		t.Run(store, func(t *testing.T) {
			ctx := context.Background()
			o := options{
				store:       store,
				batch:       100,
				mysqlDSN:    "root@tcp(127.0.0.1:3306)/",
				postgresURL: "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable",
				database:    "rt_bench_explain_" + xid.New().String(),
			}
			st, err := openBenchStore(ctx, o, true)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.close(false) })
			e := &env{o: o, st: st}
			if err := e.seed(ctx, 500); err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			if err := e.explain(ctx, &out, 500); err != nil {
				t.Fatal(err)
			}
			s := out.String()
			for _, cursor := range []bool{false, true} {
				q, _ := e.claimSQL(o.batch, cursor)
				if !strings.Contains(s, q) {
					t.Errorf("the plan lacks the service's claim (cursor %v)\n  %s\nin:\n%s", cursor, q, s)
				}
			}
			if strings.Contains(s, "idx_refresh_at`)") {
				t.Errorf("the plan forces the index of the claim before migration 0004:\n%s", s)
			}
			if !strings.Contains(s, "the claim run once (rolled back): ") || strings.Contains(s, "n/a") {
				t.Errorf("no figure of what the claim read:\n%s", s)
			}
		})
	}
}
