package models

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// MigrateReport says what Migrate did (or, in a dry run, would do).
type MigrateReport struct {
	Tables []TableMigration
}

// TableMigration is what Migrate did to one table.
type TableMigration struct {
	Table string
	// Applied lists the migrations applied and recorded by this run, in
	// order; empty when the table was up to date.
	Applied []AppliedMigration
	// Warnings are refresh columns that existed with another type than the
	// migration declares; Migrate leaves them as they are.
	Warnings []string
}

// UpToDate reports whether every migration was already recorded.
func (t TableMigration) UpToDate() bool { return len(t.Applied) == 0 }

// AppliedMigration is one migration applied to one table.
type AppliedMigration struct {
	Version int
	Name    string
	// Added names what the migration created: "column refresh_at",
	// "index idx_refresh_at".
	Added []string
	// Existing names what was already there and so was left out.
	Existing []string
	// SQL holds the statements run (or printed), without the bookkeeping
	// INSERT.
	SQL []string
}

// Describe summarises the migration for humans: "added 12 columns",
// "added 3 columns; 9 columns already existed", "index idx_refresh_at
// already existed"; "ran N statement(s)" when it names nothing.
func (am AppliedMigration) Describe() string {
	var parts []string
	if len(am.Added) > 0 {
		parts = append(parts, "added "+summarise(am.Added))
	}
	if len(am.Existing) > 0 {
		parts = append(parts, summarise(am.Existing)+" already existed")
	}
	if len(parts) == 0 {
		return "ran " + strconv.Itoa(len(am.SQL)) + " statement(s)"
	}
	return strings.Join(parts, "; ")
}

// summarise turns ["column a", "column b"] into "2 columns",
// ["column a", "index i"] into "1 column and 1 index", and ["index i"]
// into "index i".
func summarise(things []string) string {
	if len(things) == 1 {
		return things[0]
	}
	kinds := map[string]int{}
	var order []string
	for _, t := range things {
		k, _, _ := strings.Cut(t, " ")
		if kinds[k] == 0 {
			order = append(order, k)
		}
		kinds[k]++
	}
	var parts []string
	for _, k := range order {
		switch n := kinds[k]; {
		case n == 1:
			parts = append(parts, "1 "+k)
		case k == "index":
			parts = append(parts, strconv.Itoa(n)+" indexes")
		default:
			parts = append(parts, strconv.Itoa(n)+" "+k+"s")
		}
	}
	return strings.Join(parts, " and ")
}

// WriteApplied writes to w the line a migration run prints for am once it is
// applied to table: "items: applied 0001_refresh_columns (added 12
// columns)", or "recorded" when it ran no statement (everything existed).
func (am AppliedMigration) WriteApplied(w io.Writer, table string) {
	verb := "applied"
	if len(am.SQL) == 0 {
		verb = "recorded"
	}
	fmt.Fprintf(w, "%s: %s %s (%s)\n", table, verb, am.Name, am.Describe())
}

// WriteDryRun writes to w what a dry run prints for am on table: a comment
// naming it, its statements, and record, the statement that records it.
func (am AppliedMigration) WriteDryRun(w io.Writer, table, record string) {
	fmt.Fprintf(w, "\n-- %s: %s (%s)\n", table, am.Name, am.Describe())
	for _, s := range am.SQL {
		fmt.Fprintf(w, "%s;\n", s)
	}
	fmt.Fprintf(w, "%s;\n", record)
}

// WriteEnd writes to w the lines that close a table's migration: its
// warnings, and "up to date" when nothing was to do. In a dry run they are
// SQL comments.
func (t TableMigration) WriteEnd(w io.Writer, dryRun bool) {
	comment := ""
	if dryRun {
		comment = "-- "
	}
	for _, warn := range t.Warnings {
		fmt.Fprintf(w, "%s%s: warning: %s\n", comment, t.Table, warn)
	}
	if t.UpToDate() {
		fmt.Fprintf(w, "%s%s: up to date\n", comment, t.Table)
	}
}
