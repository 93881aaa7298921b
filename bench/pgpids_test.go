package main

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/rs/xid"
)

// TestPostgresServerPIDsAreTheBenchDatabases checks that the CPU the bench
// reports as PostgreSQL's is the bench database's backends and the
// server's background processes: a child's connection to the bench
// database counts, another database's connection and the bench's own do
// not (every postgres process on the machine counted before).
func TestPostgresServerPIDsAreTheBenchDatabases(t *testing.T) {
	if testing.Short() {
		t.Skip("creates a database on PostgreSQL")
	}
	ctx := context.Background()
	o := options{
		store:       "postgres",
		postgresURL: "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable",
		database:    "rt_bench_pids_" + xid.New().String(),
	}
	s, err := openPostgres(ctx, o, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.close(false) })
	pid := func(url string) int {
		c, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(context.Background()) })
		var p int
		if err := c.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	child, other := pid(o.pgURL()), pid(o.postgresURL)
	var own int
	if err := s.pool.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&own); err != nil {
		t.Fatal(err)
	}
	pids := s.serverPIDs()
	if !slices.Contains(pids, child) {
		t.Errorf("the bench database's backend %d is not counted: %v", child, pids)
	}
	if slices.Contains(pids, other) {
		t.Errorf("another database's backend %d is counted: %v", other, pids)
	}
	if slices.Contains(pids, own) {
		t.Errorf("the bench's own connection %d is counted: %v", own, pids)
	}
	if len(pids) < 2 {
		t.Errorf("no background process counted: %v", pids)
	}
}
