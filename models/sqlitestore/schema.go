package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/refresher/refresher/models"
)

// tableSchema is what SQLite's pragmas say about one table.
type tableSchema struct {
	exists  bool
	columns map[string]string   // lower-case name -> declared type, lower-case ("datetime(6)")
	pk      []string            // lower-case primary key columns, in order
	intPK   bool                // the primary key is an INTEGER PRIMARY KEY: the rowid
	rowid   bool                // the table has a rowid (not WITHOUT ROWID)
	indexes map[string][]string // lower-case index name -> lower-case columns in order
	names   map[string]string   // lower-case index name -> index name as created
	unique  map[string]bool     // lower-case index name -> UNIQUE (or PRIMARY KEY)
	partial map[string]bool     // lower-case index name -> has a WHERE clause
}

func newTableSchema() tableSchema {
	return tableSchema{columns: map[string]string{}, indexes: map[string][]string{}, names: map[string]string{}, unique: map[string]bool{}, partial: map[string]bool{}}
}

// loadSchema reads the columns and indexes of table name in the main
// database; exists is false when there is no such table (or it is a view).
func loadSchema(ctx context.Context, q queryer, name string) (tableSchema, error) {
	s := newTableSchema()
	var typ string
	var wr bool
	err := q.QueryRowContext(ctx, `SELECT type, wr FROM pragma_table_list WHERE schema = 'main' AND name = ? COLLATE NOCASE`, name).Scan(&typ, &wr)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && typ != "table") {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("read table list: %w", err)
	}
	s.exists, s.rowid = true, !wr
	rows, err := q.QueryContext(ctx, `SELECT name, type, pk FROM pragma_table_info(?) ORDER BY cid`, name)
	if err != nil {
		return s, fmt.Errorf("read columns: %w", err)
	}
	pkTypes := map[int]string{}
	pks := map[int]string{}
	for rows.Next() {
		var col, ctype string
		var pk int
		if err := rows.Scan(&col, &ctype, &pk); err != nil {
			rows.Close()
			return s, fmt.Errorf("read columns: %w", err)
		}
		s.columns[strings.ToLower(col)] = strings.ToLower(ctype)
		if pk > 0 {
			pks[pk], pkTypes[pk] = strings.ToLower(col), ctype
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return s, fmt.Errorf("read columns: %w", err)
	}
	for i := 1; i <= len(pks); i++ {
		s.pk = append(s.pk, pks[i])
	}
	// Only a column declared exactly INTEGER PRIMARY KEY aliases the rowid.
	s.intPK = s.rowid && len(pks) == 1 && strings.EqualFold(pkTypes[1], "integer")

	rows, err = q.QueryContext(ctx, `SELECT il.name, il."unique", il.partial, ii.name FROM pragma_index_list(?) AS il, pragma_index_info(il.name) AS ii ORDER BY il.name, ii.seqno`, name)
	if err != nil {
		return s, fmt.Errorf("read indexes: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var idx string
		var unique, partial bool
		var col sql.NullString // NULL for an expression
		if err := rows.Scan(&idx, &unique, &partial, &col); err != nil {
			return s, fmt.Errorf("read indexes: %w", err)
		}
		k := strings.ToLower(idx)
		s.indexes[k] = append(s.indexes[k], strings.ToLower(col.String))
		s.names[k] = idx
		s.unique[k] = unique
		s.partial[k] = partial
	}
	if err := rows.Err(); err != nil {
		return s, fmt.Errorf("read indexes: %w", err)
	}
	return s, nil
}

// plainIndexes are the indexes that are neither partial nor on an
// expression, by lower-case name: the only ones that do what a
// migration's index does, since the store's statements use no other
// (indexOn). A partial index on refresh_at would otherwise count as the
// migration's, which then left the table without the index its claims
// need.
func (s tableSchema) plainIndexes() map[string][]string {
	out := make(map[string][]string, len(s.indexes))
	for name, cols := range s.indexes {
		if !s.partial[name] && !slices.Contains(cols, "") {
			out[name] = cols
		}
	}
	return out
}

// uniqueOn reports whether col alone is unique: the INTEGER PRIMARY KEY,
// or the only column of a unique index (a one-column PRIMARY KEY has one)
// that is not partial (a partial one leaves the rows outside it free to
// repeat a key), as on PostgreSQL.
func (s tableSchema) uniqueOn(col string) bool {
	col = strings.ToLower(col)
	if s.intPK && s.pk[0] == col {
		return true
	}
	for name, cols := range s.indexes {
		if s.unique[name] && !s.partial[name] && len(cols) == 1 && cols[0] == col {
			return true
		}
	}
	return false
}

// meta is what the queries need, for key column key.
func (s tableSchema) meta(key string) tableMeta {
	m := tableMeta{cols: s.columns}
	_, m.migrated = s.columns[models.ColAttemptUID]
	m.intKey = s.intPK && s.pk[0] == strings.ToLower(key)
	m.rowid = s.rowid && !m.intKey
	for _, shadow := range []string{"rowid", "_rowid_", "oid"} {
		if _, ok := s.columns[shadow]; ok {
			m.rowid = false // a column hides the rowid: write by key
		}
	}
	m.refreshIndex = s.indexLedBy(models.ColRefreshAt)
	m.priorityIndex = s.indexLedBy(models.ColPriority, models.ColRefreshAt)
	m.priorityOnceIndex = s.indexLedBy(models.ColPriorityOnce)
	m.priorityAttemptIndex = s.indexLedBy(models.ColPriority, models.ColAttemptNo)
	m.attemptUIDIndex = s.indexLedBy(models.ColAttemptUID)
	m.disabledIndex = s.indexLedBy(models.ColDisabledUntil, models.ColFailingSince)
	return m
}

// indexLedBy names the first (by name) index whose first columns are
// lead; "" when there is none. A partial index (CREATE INDEX ... WHERE)
// is never one: it holds only some rows, and the queries name their
// index with INDEXED BY, which SQLite refuses ("no query solution") when
// their WHERE does not imply the index's.
func (s tableSchema) indexLedBy(lead ...string) string {
	var best string
	for name, cols := range s.indexes {
		if !s.partial[name] && len(cols) >= len(lead) && slices.Equal(cols[:len(lead)], lead) && (best == "" || name < best) {
			best = name
		}
	}
	if best == "" {
		return ""
	}
	return s.names[best]
}
