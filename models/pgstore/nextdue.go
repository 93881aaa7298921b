package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/refresher/refresher/models"
)

// NextDue returns the earliest refresh_at of rows with a key, so the
// dispatcher can sleep until then; ok is false when there is none. It may be
// in the past and does not lock. PostgreSQL walks the refresh_at index from
// its start and stops at the first row with a key, so its cost does not
// grow with the table.
func (s *Store) NextDue(ctx context.Context, t models.Table) (next time.Time, ok bool, err error) {
	q, err := s.compile(ctx, t)
	if err != nil {
		return time.Time{}, false, err
	}
	var first time.Time
	err = s.pool.QueryRow(ctx, nextDueSQL(q)).Scan(&first)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return time.Time{}, false, nil
	case err != nil:
		return time.Time{}, false, fmt.Errorf("find next refresh_at of %s: %w", q.table, withSchemaHint(err))
	}
	return first.UTC(), true, nil
}

// NextDueMany is NextDue for each of tables, one statement per
// models.NextDueChunk tables: a UNION ALL of one row per table, its index
// and NextDue's query as a scalar subquery (NULL when no row has a
// refresh_at).
func (s *Store) NextDueMany(ctx context.Context, tables []models.Table) ([]models.Next, error) {
	return models.UnionNextDue(tables, func(t models.Table) (string, error) {
		q, err := s.compile(ctx, t)
		if err != nil {
			return "", err
		}
		return nextDueSQL(q), nil
	}, func(query string, out []models.Next) error {
		return withSchemaHint(s.nextDueChunk(ctx, query, out))
	})
}

// nextDueChunk runs one statement of NextDueMany and fills out by the
// index each row names.
func (s *Store) nextDueChunk(ctx context.Context, query string, out []models.Next) error {
	rows, err := s.pool.Query(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var i int
		var at *time.Time
		if err := rows.Scan(&i, &at); err != nil {
			return err
		}
		if i < 0 || i >= len(out) {
			return fmt.Errorf("row for table %d of %d", i, len(out))
		}
		if at != nil {
			out[i] = models.Next{At: at.UTC(), OK: true}
		}
	}
	return rows.Err()
}

// nextDueSQL is NextDue's query on the compiled table q.
func nextDueSQL(q compiled) string {
	return `SELECT "refresh_at" FROM ` + q.table +
		` WHERE "refresh_at" IS NOT NULL AND ` + q.key + ` IS NOT NULL ORDER BY "refresh_at" LIMIT 1`
}
