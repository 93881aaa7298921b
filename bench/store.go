package main

import (
	"context"
	"fmt"
	"time"

	"github.com/refresher/refresher/models"
)

// benchStore is one database the benchmark runs on (--store): what the
// parent needs to seed the table, plan a run and check it, and what the
// children need to open the service's store and the baseline. One file per
// store implements it: mysql.go, postgres.go, sqlite.go.
type benchStore interface {
	// describe names the server and the settings that matter, for the header.
	describe(ctx context.Context) string
	// serverPIDs returns the database server's processes, whose CPU is
	// reported (none for SQLite, which runs inside the child).
	serverPIDs() []int
	// seed (re)creates the table with rows models, none of them due, and
	// adds the refresh columns with the store's own migration.
	seed(ctx context.Context, rows int64) error
	// applyPlan resets the due set of p (see plan).
	applyPlan(ctx context.Context, p *plan) error
	// applied counts the rows whose result was applied since t.
	applied(ctx context.Context, since time.Time) (int64, error)
	// settle waits until the previous run's garbage is cleaned up (InnoDB
	// purge, PostgreSQL VACUUM), so one run does not pay for another.
	settle(ctx context.Context)
	// childArgs are the flags that let a child open the same database.
	childArgs() []string
	// close closes the parent's connections and drops the database unless
	// keep is set.
	close(keep bool)

	// openService opens the service's models.Store (in a child).
	openService(ctx context.Context) (models.Store, error)
	// openBaseline opens the hand-written baseline's database (in a child).
	openBaseline(ctx context.Context) (baselineDB, error)
}

// ownExplainer is a store whose claim claimSQL does not write (SQLite): it
// returns the plan of the claim as its driver sends it.
type ownExplainer interface {
	explain(ctx context.Context, batch int) (string, error)
}

// baselineDB is the part of the hand-written baseline that speaks SQL; the
// loops around it and the Redis side are shared (baseline.go).
type baselineDB interface {
	// claim, in one transaction, locks up to limit due rows (refresh_at <=
	// now, and >= cursor when it is not zero) earliest first, starts their
	// attempt (uid, attempt_no+1, timeout and refresh_at = timeoutAt) with
	// one bulk UPDATE and commits. last is the refresh_at of the last row.
	claim(ctx context.Context, now, cursor, timeoutAt time.Time, limit int) (rows []claimed, last time.Time, err error)
	// finish applies successes with one bulk UPDATE guarded by the attempt
	// UID: the attempt is cleared and refresh_at set to next.
	finish(ctx context.Context, now, next time.Time, done []finished) error
	// nextDue returns the earliest refresh_at.
	nextDue(ctx context.Context) (time.Time, bool, error)
	close()
}

// claimed is a row the baseline started an attempt of.
type claimed struct {
	id        int64
	url       string
	attemptNo int // after the claim
	uid       string
}

// finished is a success result.
type finished struct {
	id  int64
	uid string
}

// storeNames are the values of --store.
const storeNames = "mysql, postgres or sqlite"

// openBenchStore returns the store o.store names. The parent (create) makes
// the database; a child opens the one the parent made.
func openBenchStore(ctx context.Context, o options, create bool) (benchStore, error) {
	switch o.store {
	case "mysql":
		return openMySQL(ctx, o, create)
	case "postgres":
		return openPostgres(ctx, o, create)
	case "sqlite":
		return openSQLite(ctx, o, create)
	}
	return nil, fmt.Errorf("unknown --store %q: use %s", o.store, storeNames)
}
