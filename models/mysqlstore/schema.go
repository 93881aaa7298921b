package mysqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// tableSchema is what information_schema says about one table.
type tableSchema struct {
	exists  bool
	columns map[string]string   // lower-case name -> COLUMN_TYPE ("datetime(6)")
	indexes map[string][]string // lower-case index name -> lower-case columns in order
	unique  map[string]bool     // lower-case index name -> UNIQUE or PRIMARY
}

func newTableSchema() tableSchema {
	return tableSchema{columns: map[string]string{}, indexes: map[string][]string{}, unique: map[string]bool{}}
}

type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// loadSchema reads the columns and indexes of table name in the current
// database; exists is false when there is no such table.
func loadSchema(ctx context.Context, q queryer, name string) (tableSchema, error) {
	s := newTableSchema()
	rows, err := q.QueryContext(ctx, "SELECT COLUMN_NAME, COLUMN_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?", name)
	if err != nil {
		return s, fmt.Errorf("read columns: %w", err)
	}
	for rows.Next() {
		var col, typ string
		if err := rows.Scan(&col, &typ); err != nil {
			rows.Close()
			return s, fmt.Errorf("read columns: %w", err)
		}
		s.columns[strings.ToLower(col)] = strings.ToLower(typ)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return s, fmt.Errorf("read columns: %w", err)
	}
	s.exists = len(s.columns) > 0
	rows, err = q.QueryContext(ctx, "SELECT INDEX_NAME, COLUMN_NAME, NON_UNIQUE FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? ORDER BY INDEX_NAME, SEQ_IN_INDEX", name)
	if err != nil {
		return s, fmt.Errorf("read indexes: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var idx string
		var col sql.NullString // NULL for functional index parts (MySQL 8)
		var nonUnique int
		if err := rows.Scan(&idx, &col, &nonUnique); err != nil {
			return s, fmt.Errorf("read indexes: %w", err)
		}
		k := strings.ToLower(idx)
		s.indexes[k] = append(s.indexes[k], strings.ToLower(col.String))
		s.unique[k] = nonUnique == 0
	}
	if err := rows.Err(); err != nil {
		return s, fmt.Errorf("read indexes: %w", err)
	}
	return s, nil
}
