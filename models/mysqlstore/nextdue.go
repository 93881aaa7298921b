package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/refresher/refresher/models"
)

// NextDue returns the earliest refresh_at of the table, so the dispatcher
// can sleep until then; ok is false when no row has one. It may be in the
// past (rows are due) and does not lock.
//
// It walks the refresh_at index from its start and stops at the first row
// with a key, so its cost does not grow with the table. (MIN(refresh_at)
// with the key condition made MariaDB scan the whole index.)
func (s *Store) NextDue(ctx context.Context, t models.Table) (next time.Time, ok bool, err error) {
	q, err := s.compile(ctx, t)
	if err != nil {
		return time.Time{}, false, err
	}
	query, err := nextDueSQL(q)
	if err != nil {
		return time.Time{}, false, err
	}
	var first time.Time
	err = s.db.QueryRowContext(ctx, query).Scan(&first)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return time.Time{}, false, nil
	case err != nil:
		return time.Time{}, false, fmt.Errorf("find next refresh_at of %s: %w", q.table, err)
	}
	return first.UTC(), true, nil
}

// NextDueMany is NextDue for each of tables, one statement per
// models.NextDueChunk tables: a UNION ALL of one row per table, its index
// and NextDue's query as a scalar subquery (NULL when no row has a
// refresh_at). Each subquery walks its table's index as NextDue does.
func (s *Store) NextDueMany(ctx context.Context, tables []models.Table) ([]models.Next, error) {
	return models.UnionNextDue(tables, func(t models.Table) (string, error) {
		q, err := s.compile(ctx, t)
		if err != nil {
			return "", err
		}
		return nextDueSQL(q)
	}, func(query string, out []models.Next) error {
		return s.nextDueChunk(ctx, query, out)
	})
}

// nextDueChunk runs one statement of NextDueMany and fills out by the
// index each row names.
func (s *Store) nextDueChunk(ctx context.Context, query string, out []models.Next) error {
	rows, err := s.db.QueryContext(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var i int
		var at sql.NullTime
		if err := rows.Scan(&i, &at); err != nil {
			return err
		}
		if i < 0 || i >= len(out) {
			return fmt.Errorf("row for table %d of %d", i, len(out))
		}
		out[i] = models.Next{At: at.Time.UTC(), OK: at.Valid}
	}
	return rows.Err()
}

// nextDueSQL is NextDue's query on the compiled table q. It forces the
// refresh_at index when the table has one. Like ClaimDue, rows whose key is
// NULL do not count: they are never claimed, and counting them would wake
// the dispatcher for nothing.
func nextDueSQL(q compiled) (string, error) {
	force := ""
	if q.meta.refreshIndex != "" {
		idx, err := quoteIdent(q.meta.refreshIndex)
		if err != nil {
			return "", fmt.Errorf("index of table %s: %w", q.table, err)
		}
		force = " FORCE INDEX (" + idx + ")"
	}
	return "SELECT `refresh_at` FROM " + q.table + force +
		" WHERE `refresh_at` IS NOT NULL AND " + q.key + " IS NOT NULL ORDER BY `refresh_at` LIMIT 1", nil
}
