package migrations

import (
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
)

func TestLoadEmbedded(t *testing.T) {
	t.Parallel()
	ms, err := Load()
	require.NoError(t, err)
	require.Len(t, ms, 5)

	require.Equal(t, 1, ms[0].Version)
	require.Equal(t, "0001_refresh_columns", ms[0].Name)
	require.Len(t, ms[0].Statements, 1)
	// The columns and their types are those of models.Schema
	// (TestRefreshColumnsMatchSchema); here the parse.
	for _, c := range ms[0].Statements[0].Clauses {
		require.Equal(t, AddColumn, c.Kind, c.SQL)
	}
	require.Equal(t, "refresh_at", ms[0].Statements[0].Clauses[0].Name)
	require.Equal(t, "DATETIME(6)", ms[0].Statements[0].Clauses[0].Type)

	require.Equal(t, 2, ms[1].Version)
	require.Equal(t, "0002_refresh_at_index", ms[1].Name)
	idx := ms[1].Statements[0].Clauses
	require.Len(t, idx, 1)
	require.Equal(t, AddIndex, idx[0].Kind)
	require.Equal(t, "idx_refresh_at", idx[0].Name)
	require.Equal(t, []string{"refresh_at"}, idx[0].Columns)

	require.Equal(t, 3, ms[2].Version)
	require.Equal(t, "0003_state_count_indexes", ms[2].Name)
	idx = ms[2].Statements[0].Clauses
	require.Len(t, idx, 4)
	for _, c := range idx {
		require.Equal(t, AddIndex, c.Kind, c.SQL)
	}
	require.Equal(t, []string{"refresh_disabled_until_update", "refresh_failing_since"}, idx[1].Columns)
}

func TestStatementSQL(t *testing.T) {
	t.Parallel()
	ms, err := Load()
	require.NoError(t, err)
	st := ms[0].Statements[0]

	all := st.SQL("`big_tables`", nil)
	require.True(t, strings.HasPrefix(all, "ALTER TABLE `big_tables`\n  ADD COLUMN `refresh_at` DATETIME(6) NULL,\n"), all)
	require.Equal(t, 12, strings.Count(all, "ADD COLUMN"))
	require.NotContains(t, all, TablePlaceholder)
	require.NotContains(t, all, "--")

	some := st.SQL("`t`", func(c Clause) bool { return c.Name == "refresh_status" || c.Name == "refresh_rrule" })
	require.Equal(t, "ALTER TABLE `t`\n  ADD COLUMN `refresh_rrule` TEXT NULL,\n  ADD COLUMN `refresh_status` VARCHAR(255) NULL", some)

	require.Empty(t, st.SQL("`t`", func(Clause) bool { return false }))
}

func TestParse(t *testing.T) {
	t.Parallel()
	m, err := Parse("0007_misc.sql", "-- a comment; with a semicolon\n"+
		"ALTER TABLE {{table}} ADD COLUMN `a``b` DECIMAL(10,2) NOT NULL DEFAULT '0;1', ADD KEY k2 (`x`, y), DROP COLUMN z;\n"+
		"UPDATE {{table}} SET x = 'it''s; fine' -- trailing\n;")
	require.NoError(t, err)
	require.Equal(t, 7, m.Version)
	require.Len(t, m.Statements, 2)
	cs := m.Statements[0].Clauses
	require.Len(t, cs, 3)
	require.Equal(t, Clause{Kind: AddColumn, Name: "a`b", Type: "DECIMAL(10,2)", SQL: "ADD COLUMN `a``b` DECIMAL(10,2) NOT NULL DEFAULT '0;1'"}, cs[0])
	require.Equal(t, AddIndex, cs[1].Kind)
	require.Equal(t, []string{"x", "y"}, cs[1].Columns)
	require.Equal(t, Other, cs[2].Kind)
	require.Nil(t, m.Statements[1].Clauses)
	require.Equal(t, "UPDATE `q` SET x = 'it''s; fine'", m.Statements[1].SQL("`q`", nil))

	for name, tc := range map[string]struct{ file, text, want string }{
		"bad name":       {"1_x.sql", "ALTER TABLE {{table}} ADD COLUMN a INT", "name must look like"},
		"version zero":   {"0000_x.sql", "ALTER TABLE {{table}} ADD COLUMN a INT", "start at 0001"},
		"no placeholder": {"0001_x.sql", "ALTER TABLE big ADD COLUMN a INT", "does not name the table"},
		"empty":          {"0001_x.sql", "-- nothing\n", "has no statement"},
		"no type":        {"0001_x.sql", "ALTER TABLE {{table}} ADD COLUMN a", "no column type"},
		"unbalanced":     {"0001_x.sql", "ALTER TABLE {{table}} ADD INDEX i (a", "unterminated"},
		"index expr":     {"0001_x.sql", "ALTER TABLE {{table}} ADD INDEX i (a(10))", "plain column name"},
	} {
		_, err := Parse(tc.file, tc.text)
		require.ErrorContains(t, err, tc.want, name)
	}
}

func TestLoadFSDuplicateVersion(t *testing.T) {
	t.Parallel()
	_, err := LoadFS(fstest.MapFS{
		"0001_a.sql": {Data: []byte("ALTER TABLE {{table}} ADD COLUMN a INT")},
		"0001_b.sql": {Data: []byte("ALTER TABLE {{table}} ADD COLUMN b INT")},
	})
	require.ErrorContains(t, err, "same version 1")
}

// require is a minimal stand-in for testify's require: testify v1.12 needs
// go.yaml.in/yaml/v3, which go.sum does not list yet.
var require requireT

type requireT struct{}

func (requireT) NoError(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

func (requireT) Len(t *testing.T, v any, n int) {
	t.Helper()
	if l := reflect.ValueOf(v).Len(); l != n {
		t.Fatalf("len = %d, want %d: %#v", l, n, v)
	}
}

func (requireT) Equal(t *testing.T, want, got any, msg ...any) {
	t.Helper()
	if !reflect.DeepEqual(want, got) {
		t.Fatalf("got  %#v\nwant %#v %v", got, want, msg)
	}
}

func (requireT) True(t *testing.T, ok bool, msg ...any) {
	t.Helper()
	if !ok {
		t.Fatalf("not true: %v", msg)
	}
}

func (requireT) Nil(t *testing.T, v any) {
	t.Helper()
	if !reflect.ValueOf(v).IsNil() {
		t.Fatalf("not nil: %#v", v)
	}
}

func (requireT) Empty(t *testing.T, s string) {
	t.Helper()
	if s != "" {
		t.Fatalf("not empty: %q", s)
	}
}

func (requireT) Contains(t *testing.T, s, sub string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Fatalf("%q does not contain %q", s, sub)
	}
}

func (requireT) NotContains(t *testing.T, s, sub string) {
	t.Helper()
	if strings.Contains(s, sub) {
		t.Fatalf("%q contains %q", s, sub)
	}
}

func (requireT) ErrorContains(t *testing.T, err error, sub string, msg ...any) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), sub) {
		t.Fatalf("error %v does not contain %q %v", err, sub, msg)
	}
}
