package main

import (
	"context"
	"fmt"
	"strings"
)

// pgStatements is --pg-statements: pg_stat_statements of the bench
// database, reset just before a run starts and printed just after its
// last result is applied, per statement and per model, so that the
// service's statements can be set against the baseline's. It needs a
// server that preloads pg_stat_statements (shared_preload_libraries), as
// the shared one does not: start one of your own for it.
type pgStatements struct {
	e *env
	// table says pg_stat_statements answered the reset.
	table bool
	// pages is the bench table's heap and index pages at the reset.
	pages [2]int64
}

// resetPGStatements creates the extension in the bench database if need
// be and resets its counters; it returns a reader for printPGStatements,
// or nil when the flag is off or the store is not PostgreSQL.
func (e *env) resetPGStatements(ctx context.Context) *pgStatements {
	s, ok := e.st.(*pgStore)
	if !ok || !e.o.pgStatements {
		return nil
	}
	p := &pgStatements{e: e, table: true}
	_, err := s.pool.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
	if err == nil {
		_, err = s.pool.Exec(ctx, "SELECT pg_stat_statements_reset()")
	}
	if err != nil {
		fmt.Printf("    pg_stat_statements: %v\n", err)
		p.table = false
	}
	p.pages = s.tablePages(ctx)
	return p
}

// print writes the statements of the bench database since the reset, by
// total execution time, per model of n: calls per 1000 models, execution
// and planning µs, rows, shared blocks hit and dirtied, WAL records and
// bytes. The counters' own statements are left out.
func (p *pgStatements) print(ctx context.Context, n int64) {
	if p == nil {
		return
	}
	s := p.e.st.(*pgStore)
	pages := s.tablePages(ctx)
	fmt.Printf("    the table's pages %d -> %d, its indexes' %d -> %d\n", p.pages[0], pages[0], p.pages[1], pages[1])
	if !p.table {
		return
	}
	rows, err := s.pool.Query(ctx, `SELECT calls, total_exec_time, total_plan_time, rows, shared_blks_hit, shared_blks_read,
			shared_blks_dirtied, wal_records, wal_bytes::int8, query
		FROM pg_stat_statements
		WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
		  AND query NOT LIKE '%pg_stat_statements%'
		ORDER BY total_exec_time DESC`)
	if err != nil {
		fmt.Printf("    pg_stat_statements: %v\n", err)
		return
	}
	defer rows.Close()
	per := func(v float64) float64 { return v / float64(n) }
	var sum [9]float64
	fmt.Printf("    %8s %8s %7s %7s %7s %7s %7s %7s %8s  %s\n", "calls/1k", "exec µs", "plan µs", "rows", "hit", "read", "dirtied", "WAL rec", "WAL B", "statement (per model)")
	for rows.Next() {
		var calls, nrows, hit, read, dirtied, walRec, walBytes int64
		var exec, plan float64
		var q string
		if err := rows.Scan(&calls, &exec, &plan, &nrows, &hit, &read, &dirtied, &walRec, &walBytes, &q); err != nil {
			fmt.Printf("    pg_stat_statements: %v\n", err)
			return
		}
		v := [9]float64{float64(calls) * 1000, exec * 1000, plan * 1000, float64(nrows), float64(hit), float64(read), float64(dirtied), float64(walRec), float64(walBytes)}
		for i := range v {
			sum[i] += v[i]
		}
		fmt.Printf("    %8.2f %8.2f %7.2f %7.3f %7.2f %7.3f %7.3f %7.2f %8.1f  %s\n",
			per(v[0]), per(v[1]), per(v[2]), per(v[3]), per(v[4]), per(v[5]), per(v[6]), per(v[7]), per(v[8]), shortSQL(q))
	}
	fmt.Printf("    %8.2f %8.2f %7.2f %7.3f %7.2f %7.3f %7.3f %7.2f %8.1f  all statements\n",
		per(sum[0]), per(sum[1]), per(sum[2]), per(sum[3]), per(sum[4]), per(sum[5]), per(sum[6]), per(sum[7]), per(sum[8]))
}

// shortSQL is a statement on one line, cut to 160 bytes.
func shortSQL(q string) string {
	q = strings.Join(strings.Fields(q), " ")
	if len(q) > 160 {
		q = q[:160] + "..."
	}
	return q
}

// tablePages are the bench table's heap pages and its indexes' pages.
func (s *pgStore) tablePages(ctx context.Context) (pages [2]int64) {
	_ = s.pool.QueryRow(ctx, `SELECT pg_relation_size($1::regclass) / 8192, pg_indexes_size($1::regclass) / 8192`, benchTable).Scan(&pages[0], &pages[1])
	return pages
}
