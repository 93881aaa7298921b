package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/refresher/refresher/models"
)

// NextDue returns the earliest refresh_at of rows with a key, so the
// dispatcher can sleep until then; ok is false when there is none. It may
// be in the past and does not lock. It reads the refresh_at index from its
// start and stops at the first row with a key.
func (s *Store) NextDue(ctx context.Context, t models.Table) (next time.Time, ok bool, err error) {
	q, err := s.compile(ctx, s.db, t)
	if err != nil {
		return time.Time{}, false, err
	}
	var first any
	err = s.db.QueryRowContext(ctx, nextDueSQL(q)).Scan(&first)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return time.Time{}, false, nil
	case err != nil:
		s.forgetIfIndexGone(err, t)
		return time.Time{}, false, withSchemaHint(fmt.Errorf("find next refresh_at of %s: %w", q.table, err))
	}
	next, err = mustParseTime(first, "next refresh_at of "+q.table)
	if err != nil {
		return time.Time{}, false, err
	}
	return next, true, nil
}

// NextDueMany is NextDue for each of tables, one statement per
// models.NextDueChunk tables: a compound SELECT (UNION ALL) of one row per
// table, its index and NextDue's query as a scalar subquery (NULL when no
// row has a refresh_at).
func (s *Store) NextDueMany(ctx context.Context, tables []models.Table) ([]models.Next, error) {
	return models.UnionNextDue(tables, func(t models.Table) (string, error) {
		q, err := s.compile(ctx, s.db, t)
		if err != nil {
			return "", err
		}
		return nextDueSQL(q), nil
	}, func(query string, out []models.Next) error {
		err := s.nextDueChunk(ctx, query, out)
		s.forgetIfIndexGone(err, tables...)
		return withSchemaHint(err)
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
		var v any
		if err := rows.Scan(&i, &v); err != nil {
			return err
		}
		if i < 0 || i >= len(out) {
			return fmt.Errorf("row for table %d of %d", i, len(out))
		}
		if v == nil {
			continue
		}
		at, err := mustParseTime(v, "next refresh_at")
		if err != nil {
			return err
		}
		out[i] = models.Next{At: at, OK: true}
	}
	return rows.Err()
}

// nextDueSQL is NextDue's query on the compiled table q, through its
// refresh_at index when it has one.
func nextDueSQL(q compiled) string {
	indexed := ""
	if q.meta.refreshIndex != "" {
		indexed = " INDEXED BY " + quoteName(q.meta.refreshIndex)
	}
	return `SELECT "refresh_at" FROM ` + q.table + indexed +
		` WHERE "refresh_at" IS NOT NULL AND ` + q.key + ` IS NOT NULL ORDER BY "refresh_at" LIMIT 1`
}
