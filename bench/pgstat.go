package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// pgCounters are PostgreSQL's counters of the bench database, of its WAL
// (pg_stat_wal: the whole server's, other users included) and of each
// index of the bench table, read before and after a run of --priority or
// with --pg-stats, so that two variants' statements can be compared
// without pg_stat_statements.
type pgCounters struct {
	db  map[string]int64 // pg_stat_database of the bench database
	idx map[string]int64 // "index scans" and "index tuples read" by index
}

// readPGCounters reads the counters once every backend has reported them
// (backends report when they end or up to 10 s after a transaction).
func (e *env) readPGCounters(ctx context.Context) *pgCounters {
	s, ok := e.st.(*pgStore)
	if !ok || (!e.o.priority && !e.o.pgStats) {
		return nil
	}
	s.pool.Reset()
	time.Sleep(1200 * time.Millisecond)
	c := &pgCounters{db: map[string]int64{}, idx: map[string]int64{}}
	var commit, rollback, fetched, returned, updated, hit, read int64
	if err := s.pool.QueryRow(ctx, `SELECT xact_commit, xact_rollback, tup_fetched, tup_returned, tup_updated, blks_hit, blks_read
		FROM pg_stat_database WHERE datname = current_database()`).Scan(&commit, &rollback, &fetched, &returned, &updated, &hit, &read); err != nil {
		return nil
	}
	c.db = map[string]int64{"commits": commit, "rollbacks": rollback, "tup_fetched": fetched, "tup_returned": returned,
		"tup_updated": updated, "blks_hit": hit, "blks_read": read}
	var walRecords, walSyncs, walBytes int64
	if err := s.pool.QueryRow(ctx, `SELECT wal_records, wal_sync, wal_bytes::int8 FROM pg_stat_wal`).Scan(&walRecords, &walSyncs, &walBytes); err == nil {
		c.db["wal_records(server)"], c.db["wal_syncs(server)"], c.db["wal_bytes(server)"] = walRecords, walSyncs, walBytes
	}
	rows, err := s.pool.Query(ctx, `SELECT indexrelname, idx_scan, idx_tup_read FROM pg_stat_user_indexes WHERE relname = $1`, benchTable)
	if err != nil {
		return nil
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var scans, read int64
		if rows.Scan(&name, &scans, &read) == nil {
			name = strings.TrimPrefix(name, benchTable+"_")
			c.idx[name+" scans"], c.idx[name+" read"] = scans, read
		}
	}
	s.pool.Reset()
	return c
}

// printPGDelta prints the counters' change since before.
func (e *env) printPGDelta(ctx context.Context, before *pgCounters) {
	if before == nil {
		return
	}
	after := e.readPGCounters(ctx)
	if after == nil {
		return
	}
	var parts []string
	for _, m := range []struct{ a, b map[string]int64 }{{after.db, before.db}, {after.idx, before.idx}} {
		var p []string
		for k, v := range m.a {
			if d := v - m.b[k]; d != 0 {
				p = append(p, fmt.Sprintf("%s %d", k, d))
			}
		}
		slices.Sort(p)
		parts = append(parts, strings.Join(p, ", "))
	}
	fmt.Printf("    pg: %s\n    pg indexes: %s\n", parts[0], parts[1])
}
