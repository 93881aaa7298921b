package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

const twoDatabasesYAML = `
database: "mysql://root@127.0.0.1:3306/app"
kinds:
  - name: reports
    schedule: "RRULE:FREQ=HOURLY"
  - name: big-tables
    table: big_tables
    database: "postgres://postgres@127.0.0.1:5432/big"
    schedule: "RRULE:FREQ=DAILY"
  - name: pages
    schedule: "RRULE:FREQ=DAILY"
`

// TestKindDatabase: a kind names its own database or falls back to the
// top-level one, and the service opens one store per distinct URL, in the
// order of the kinds.
func TestKindDatabase(t *testing.T) {
	t.Parallel()
	c, err := load(t, twoDatabasesYAML, nil)
	require.NoError(t, err)
	require.Equal(t, "mysql://root@127.0.0.1:3306/app", c.KindDatabase(&c.Kinds[0]))
	require.Equal(t, "postgres://postgres@127.0.0.1:5432/big", c.KindDatabase(&c.Kinds[1]))
	require.Equal(t, "mysql://root@127.0.0.1:3306/app", c.KindDatabase(&c.Kinds[2]))
	require.Equal(t, []string{"mysql://root@127.0.0.1:3306/app", "postgres://postgres@127.0.0.1:5432/big"}, c.Databases())
}

// TestKindDatabaseEnv: REFRESHER_DATABASE_<NAME> overrides a kind's
// database (a password can stay in a secret), after REFRESHER_KINDS; a
// variable two kinds' names share is refused, naming both.
func TestKindDatabaseEnv(t *testing.T) {
	t.Parallel()
	require.Equal(t, "REFRESHER_DATABASE_BIG_TABLES", KindDatabaseEnv("big-tables"))
	c, err := load(t, twoDatabasesYAML, map[string]string{
		"REFRESHER_DATABASE_BIG_TABLES": "postgres://app:s3cret@db2:5432/big",
		"REFRESHER_DATABASE_PAGES":      "mysql://root@db3:3306/pages",
	})
	require.NoError(t, err)
	require.Equal(t, "postgres://app:s3cret@db2:5432/big", c.KindDatabase(&c.Kinds[1]))
	require.Equal(t, "mysql://root@db3:3306/pages", c.KindDatabase(&c.Kinds[2]))
	require.Equal(t, "mysql://root@127.0.0.1:3306/app", c.KindDatabase(&c.Kinds[0]))

	c, err = load(t, "", map[string]string{
		"REFRESHER_KINDS":      `[{name: a, schedule: "RRULE:FREQ=DAILY"}]`,
		"REFRESHER_DATABASE_A": "postgres://postgres@127.0.0.1:5432/a",
	})
	require.NoError(t, err)
	require.Equal(t, "postgres://postgres@127.0.0.1:5432/a", c.Kinds[0].Database)

	_, err = load(t, `
kinds:
  - {name: big-tables, table: bt, schedule: "RRULE:FREQ=DAILY"}
  - {name: big_tables, table: other, schedule: "RRULE:FREQ=DAILY"}
`, map[string]string{"REFRESHER_DATABASE_BIG_TABLES": "mysql://root@db2:3306/x"})
	require.ErrorContains(t, err, "REFRESHER_DATABASE_BIG_TABLES: names kinds big-tables and big_tables alike")
}

// TestSameTableOnTwoDatabases: one table name may be refreshed by one kind
// per database; twice on one database is refused as before.
func TestSameTableOnTwoDatabases(t *testing.T) {
	t.Parallel()
	_, err := load(t, `
kinds:
  - {name: a, table: items, schedule: "RRULE:FREQ=DAILY"}
  - {name: b, table: items, database: "postgres://postgres@127.0.0.1:5432/b", schedule: "RRULE:FREQ=DAILY"}
`, nil)
	require.NoError(t, err)
	_, err = load(t, `
kinds:
  - {name: a, table: items, schedule: "RRULE:FREQ=DAILY"}
  - {name: b, table: Items, schedule: "RRULE:FREQ=DAILY"}
`, nil)
	require.ErrorContains(t, err, "kinds a and b both refresh table Items")
}
