// Package migrations holds refresher's schema changes as numbered SQL files,
// embedded in the binary. Each file is a template over one kind's table: the
// placeholder {{table}} stands for the kind's quoted table name, because every
// kind keeps its refresh columns on its own application table.
//
// Files are named NNNN_name.sql (0001_refresh_columns.sql) and applied in
// version order by Run (runner.go), which each driver's Migrate (and so
// models.Store.Migrate) calls with its Dialect; Run records each (table,
// version) it applied. An ALTER TABLE {{table}} statement is parsed into its
// clauses so that the runner can leave out ADD COLUMN / ADD INDEX clauses
// whose column or index already exists: MySQL 8 has no ADD COLUMN IF NOT
// EXISTS, and an application that embeds models.Refresh may have created the
// columns itself. Any other statement is run as written, once per table
// (where the Dialect can translate it).
package migrations

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// FS holds the migration files.
//
//go:embed *.sql
var FS embed.FS

// TablePlaceholder is replaced by the kind's quoted table name.
const TablePlaceholder = "{{table}}"

// Migration is one parsed file.
type Migration struct {
	// Version is the file's number: 1 for 0001_refresh_columns.sql.
	Version int
	// Name is the file name without ".sql": "0001_refresh_columns".
	Name string
	// Text is the file as written, placeholder included.
	Text string
	// Statements are the file's statements in order, comments removed.
	Statements []Statement
}

// Statement is one SQL statement of a migration.
type Statement struct {
	// Clauses is set when the statement is "ALTER TABLE {{table}} c1, c2, ...";
	// the runner may leave out clauses that are already satisfied.
	Clauses []Clause
	// Template is the whole statement, placeholder included, without the
	// final semicolon.
	Template string
}

// ClauseKind says what an ALTER TABLE clause does.
type ClauseKind int

const (
	// Other is any clause the runner does not check; it always runs.
	Other ClauseKind = iota
	// AddColumn is "ADD [COLUMN] name type ...".
	AddColumn
	// AddIndex is "ADD INDEX|KEY name (col, ...)".
	AddIndex
)

// Clause is one clause of an ALTER TABLE statement.
type Clause struct {
	Kind ClauseKind
	// Name is the column or index name, unquoted.
	Name string
	// Type is an AddColumn's declared type as written, e.g. "DATETIME(6)".
	Type string
	// Columns are an AddIndex's columns, unquoted, in order.
	Columns []string
	// SQL is the clause as written, e.g. "ADD COLUMN `refresh_at` DATETIME(6) NULL".
	SQL string
}

// SQL renders the statement for one table. quotedTable must already be a
// quoted identifier (`big_tables`). For an ALTER TABLE statement only the
// clauses for which keep returns true are included (keep nil keeps all); it
// returns "" when no clause is left.
func (s Statement) SQL(quotedTable string, keep func(Clause) bool) string {
	if s.Clauses == nil {
		return strings.ReplaceAll(s.Template, TablePlaceholder, quotedTable)
	}
	var kept []string
	for _, c := range s.Clauses {
		if keep == nil || keep(c) {
			kept = append(kept, c.SQL)
		}
	}
	if len(kept) == 0 {
		return ""
	}
	return "ALTER TABLE " + quotedTable + "\n  " + strings.Join(kept, ",\n  ")
}

var fileName = regexp.MustCompile(`^(\d{4})_[a-z0-9_]+\.sql$`)

// Load reads and parses every migration in FS, ordered by version.
func Load() ([]Migration, error) {
	return LoadFS(FS)
}

// LoadFS reads and parses the *.sql files at the root of fsys, ordered by
// version. Versions must be unique.
func LoadFS(fsys fs.FS) ([]Migration, error) {
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return nil, fmt.Errorf("list migrations: %w", err)
	}
	var ms []Migration
	seen := map[int]string{}
	for _, name := range names {
		text, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", name, err)
		}
		m, err := Parse(name, string(text))
		if err != nil {
			return nil, err
		}
		if other, dup := seen[m.Version]; dup {
			return nil, fmt.Errorf("migrations %s and %s have the same version %d", other, name, m.Version)
		}
		seen[m.Version] = name
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	return ms, nil
}

// Parse parses one migration file named like 0001_refresh_columns.sql.
func Parse(name, text string) (Migration, error) {
	base := path.Base(name)
	match := fileName.FindStringSubmatch(base)
	if match == nil {
		return Migration{}, fmt.Errorf("migration file %q: name must look like 0001_snake_case.sql", name)
	}
	version, _ := strconv.Atoi(match[1])
	if version == 0 {
		return Migration{}, fmt.Errorf("migration file %q: versions start at 0001", name)
	}
	m := Migration{Version: version, Name: strings.TrimSuffix(base, ".sql"), Text: text}
	stmts, err := split(stripComments(text), ';')
	if err != nil {
		return Migration{}, fmt.Errorf("migration %s: %w", m.Name, err)
	}
	for _, st := range stmts {
		st = strings.TrimSpace(st)
		if st == "" {
			continue
		}
		if !strings.Contains(st, TablePlaceholder) {
			return Migration{}, fmt.Errorf("migration %s: statement %q does not name the table as %s", m.Name, abbrev(st), TablePlaceholder)
		}
		s := Statement{Template: st}
		if rest, ok := cutPrefixFold(st, "ALTER TABLE "+TablePlaceholder); ok {
			parts, err := split(rest, ',')
			if err != nil {
				return Migration{}, fmt.Errorf("migration %s: %w", m.Name, err)
			}
			for _, p := range parts {
				c, err := parseClause(strings.TrimSpace(p))
				if err != nil {
					return Migration{}, fmt.Errorf("migration %s: %w", m.Name, err)
				}
				s.Clauses = append(s.Clauses, c)
			}
		}
		m.Statements = append(m.Statements, s)
	}
	if len(m.Statements) == 0 {
		return Migration{}, fmt.Errorf("migration %s has no statement", m.Name)
	}
	return m, nil
}

func parseClause(sql string) (Clause, error) {
	c := Clause{Kind: Other, SQL: sql}
	if sql == "" {
		return c, fmt.Errorf("empty ALTER TABLE clause")
	}
	if rest, ok := cutPrefixFold(sql, "ADD COLUMN "); ok {
		return parseAddColumn(c, rest)
	}
	for _, p := range []string{"ADD INDEX ", "ADD KEY "} {
		if rest, ok := cutPrefixFold(sql, p); ok {
			return parseAddIndex(c, rest)
		}
	}
	return c, nil
}

func parseAddColumn(c Clause, rest string) (Clause, error) {
	name, rest, err := ident(rest)
	if err != nil {
		return c, fmt.Errorf("clause %q: %w", c.SQL, err)
	}
	rest = strings.TrimSpace(rest)
	// The type runs to the first space outside parentheses.
	end := len(rest)
	depth := 0
	for i, r := range rest {
		if r == '(' {
			depth++
		} else if r == ')' {
			depth--
		} else if r == ' ' && depth == 0 {
			end = i
			break
		}
	}
	if end == 0 {
		return c, fmt.Errorf("clause %q: no column type", c.SQL)
	}
	c.Kind, c.Name, c.Type = AddColumn, name, rest[:end]
	return c, nil
}

func parseAddIndex(c Clause, rest string) (Clause, error) {
	name, rest, err := ident(rest)
	if err != nil {
		return c, fmt.Errorf("clause %q: %w", c.SQL, err)
	}
	rest = strings.TrimSpace(rest)
	if !strings.HasPrefix(rest, "(") || !strings.HasSuffix(rest, ")") {
		return c, fmt.Errorf("clause %q: index columns must follow the name in parentheses", c.SQL)
	}
	cols, err := split(rest[1:len(rest)-1], ',')
	if err != nil {
		return c, fmt.Errorf("clause %q: %w", c.SQL, err)
	}
	for _, col := range cols {
		n, tail, err := ident(strings.TrimSpace(col))
		if err != nil || strings.TrimSpace(tail) != "" {
			return c, fmt.Errorf("clause %q: index column %q must be a plain column name", c.SQL, col)
		}
		c.Columns = append(c.Columns, n)
	}
	c.Kind, c.Name = AddIndex, name
	return c, nil
}

// ident reads one identifier, backquoted or bare, at the start of s.
func ident(s string) (name, rest string, err error) {
	s = strings.TrimLeft(s, " \t\n")
	if strings.HasPrefix(s, "`") {
		var b strings.Builder
		for i := 1; i < len(s); i++ {
			if s[i] == '`' {
				if i+1 < len(s) && s[i+1] == '`' {
					b.WriteByte('`')
					i++
					continue
				}
				return b.String(), s[i+1:], nil
			}
			b.WriteByte(s[i])
		}
		return "", "", fmt.Errorf("unterminated identifier in %q", s)
	}
	end := strings.IndexFunc(s, func(r rune) bool {
		return !(r == '_' || r == '$' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	})
	if end == -1 {
		end = len(s)
	}
	if end == 0 {
		return "", "", fmt.Errorf("expected an identifier at %q", abbrev(s))
	}
	return s[:end], s[end:], nil
}

// stripComments removes "-- " comments to the end of the line, outside quotes.
func stripComments(s string) string {
	var b strings.Builder
	var quote byte
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case quote != 0:
			if ch == quote {
				quote = 0
			}
		case ch == '\'' || ch == '"' || ch == '`':
			quote = ch
		case ch == '-' && strings.HasPrefix(s[i:], "--") && (i+2 == len(s) || s[i+2] == ' ' || s[i+2] == '\t' || s[i+2] == '\n'):
			for i < len(s) && s[i] != '\n' {
				i++
			}
			if i < len(s) {
				b.WriteByte('\n')
			}
			continue
		}
		b.WriteByte(ch)
	}
	return b.String()
}

// split cuts s at sep outside quotes and parentheses.
func split(s string, sep byte) ([]string, error) {
	var parts []string
	var quote byte
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case quote != 0:
			if ch == quote {
				quote = 0
			}
		case ch == '\'' || ch == '"' || ch == '`':
			quote = ch
		case ch == '(':
			depth++
		case ch == ')':
			depth--
			if depth < 0 {
				return nil, fmt.Errorf("unbalanced ) in %q", abbrev(s))
			}
		case ch == sep && depth == 0:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	if quote != 0 || depth != 0 {
		return nil, fmt.Errorf("unterminated quote or parenthesis in %q", abbrev(s))
	}
	return append(parts, s[start:]), nil
}

func cutPrefixFold(s, prefix string) (string, bool) {
	s = strings.TrimSpace(s)
	if len(s) < len(prefix) || !strings.EqualFold(s[:len(prefix)], prefix) {
		return s, false
	}
	return s[len(prefix):], true
}

func abbrev(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return s
}
