package models

import (
	"context"
	"database/sql"
	"fmt"
)

// Querier is what AppliedVersions needs of a *sql.DB, *sql.Conn or *sql.Tx.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// AppliedVersions returns the migration versions recorded for table: query
// selects one integer column and takes the table name as its only
// parameter. It is for the drivers on database/sql (pgx reads its rows
// otherwise).
func AppliedVersions(ctx context.Context, q Querier, query, table string) (map[int]bool, error) {
	done := map[int]bool{}
	rows, err := q.QueryContext(ctx, query, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("read a version: %w", err)
		}
		done[v] = true
	}
	return done, rows.Err()
}
