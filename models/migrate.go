package models

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
