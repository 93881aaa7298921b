package migrations

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/refresher/refresher/models"
)

var update = flag.Bool("update", false, "rewrite 0001_refresh_columns.sql from models.Schema")

const refreshColumnsFile = "0001_refresh_columns.sql"

// refreshColumnsSQL is 0001_refresh_columns.sql as models.Schema makes it.
func refreshColumnsSQL() string {
	var b strings.Builder
	b.WriteString(`-- The refresh columns of the README's "The columns", added to one kind's
-- table. It must agree with models.Schema, which a test checks
-- (go test ./migrations -run TestRefreshColumnsMatchSchema -update rewrites
-- it). An applied migration is never changed: a new column is a new file.
--
-- {{table}} is replaced by the kind's quoted table name. The runner
-- (refresher migrate) adds only the columns that do not exist yet, in one
-- ALTER TABLE statement, so this migration also succeeds on a table whose
-- application already created some or all of them (models.Refresh).
-- All DATETIME columns hold UTC.
ALTER TABLE {{table}}`)
	for i, c := range models.Schema {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("\n  ADD COLUMN `" + c.Name + "` " + mysqlDefinition(c))
	}
	b.WriteString(";\n")
	return b.String()
}

// mysqlDefinition is c's type with its nullability and default in MySQL,
// as the migration adds it: "DATETIME(6) NULL", "INT NOT NULL DEFAULT 0".
func mysqlDefinition(c models.Column) string {
	if c.Kind == models.IntColumn {
		return c.Type.MySQL + " NOT NULL DEFAULT 0"
	}
	return c.Type.MySQL + " NULL"
}

// TestRefreshColumnsMatchSchema checks that the migration adds exactly the
// columns of models.Schema, in its order, with its MySQL definitions, and
// that 0002 indexes the Indexed ones (the dispatcher's; 0003's indexes
// serve the operator's counts and are not in models.Schema). A migration already applied is never
// edited: a change to the schema needs a new migration, and this test then
// says which.
func TestRefreshColumnsMatchSchema(t *testing.T) {
	t.Parallel()
	if *update {
		require.NoError(t, os.WriteFile(refreshColumnsFile, []byte(refreshColumnsSQL()), 0o644))
	}
	text, err := os.ReadFile(refreshColumnsFile)
	require.NoError(t, err)
	if string(text) != refreshColumnsSQL() {
		t.Fatalf("%s differs from models.Schema:\n got: %s\nwant: %s\n(if the schema changed, add a migration instead of editing an applied one)", refreshColumnsFile, text, refreshColumnsSQL())
	}

	ms, err := Load()
	require.NoError(t, err)
	var indexed []string
	for _, m := range ms[1:2] {
		for _, st := range m.Statements {
			for _, c := range st.Clauses {
				if c.Kind == AddIndex {
					require.Equal(t, 1, len(c.Columns), c.SQL)
					indexed = append(indexed, c.Columns[0])
				}
			}
		}
	}
	var want []string
	for _, c := range models.Schema {
		if c.Indexed {
			want = append(want, c.Name)
		}
	}
	require.Equal(t, want, indexed, "columns the migrations index")
}
