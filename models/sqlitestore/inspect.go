package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/refresher/refresher/models"
)

// Counts counts the rows of t by state at now in one scan of the table
// (see models.Counts for the states).
func (s *Store) Counts(ctx context.Context, t models.Table, now time.Time, lateAfter time.Duration) (models.Counts, error) {
	var c models.Counts
	q, err := compileTable(t, tableMeta{})
	if err != nil {
		return c, err
	}
	var due, late, running, failing, disabled sql.NullInt64
	var oldest any
	var maxNo sql.NullInt64
	err = s.db.QueryRowContext(ctx, `SELECT COUNT(*),
  SUM("refresh_at" <= ?1), SUM("refresh_at" <= ?2),
  SUM("refresh_attempt_uid" IS NOT NULL),
  SUM("refresh_disabled_until_update" IS NULL AND "refresh_failing_since" IS NOT NULL),
  SUM("refresh_disabled_until_update" IS NOT NULL),
  MIN(CASE WHEN "refresh_at" <= ?1 THEN "refresh_at" END),
  MAX("refresh_attempt_no")
FROM `+q.table, dbTime(now), dbTime(now.Add(-lateAfter))).Scan(&c.Total, &due, &late, &running, &failing, &disabled, &oldest, &maxNo)
	if err != nil {
		return c, withSchemaHint(fmt.Errorf("count rows of %s: %w", q.table, err))
	}
	c.Due, c.Late, c.Running, c.Failing, c.Disabled = due.Int64, late.Int64, running.Int64, failing.Int64, disabled.Int64
	c.MaxAttemptNo = int(maxNo.Int64)
	if c.OldestDue, err = mustParseTime(oldest, "oldest due refresh_at of "+q.table); err != nil {
		return c, err
	}
	return c, nil
}

// List returns up to q.Limit rows of t in q.State, ordered by key,
// starting after the key q.After, without Payload. Search matches with
// LIKE, which is case-insensitive for ASCII letters.
func (s *Store) List(ctx context.Context, t models.Table, lq models.ListQuery) ([]models.Row, error) {
	q, err := s.compile(ctx, s.db, t)
	if err != nil {
		return nil, err
	}
	limit := lq.Limit
	switch {
	case limit <= 0:
		limit = 50
	case limit > 1000:
		limit = 1000
	}
	var where []string
	var args []any
	switch lq.State {
	case models.StateAll, "":
	case models.StateDue:
		where, args = append(where, `"refresh_at" <= ?`), append(args, dbTime(lq.Now))
	case models.StateLate:
		where, args = append(where, `"refresh_at" <= ?`), append(args, dbTime(lq.Now.Add(-lq.LateAfter)))
	case models.StateRunning:
		where = append(where, `"refresh_attempt_uid" IS NOT NULL`)
	case models.StateFailing:
		where = append(where, `"refresh_disabled_until_update" IS NULL AND "refresh_failing_since" IS NOT NULL`)
	case models.StateDisabled:
		where = append(where, `"refresh_disabled_until_update" IS NOT NULL`)
	default:
		return nil, fmt.Errorf("list rows of %s: unknown state %q: use due, late, running, failing, disabled or all", q.table, lq.State)
	}
	if lq.Search != "" {
		pat := "%" + strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(lq.Search) + "%"
		where = append(where, "("+q.key+` LIKE ? ESCAPE '\' OR "refresh_disabled_user_friendly_reason" LIKE ? ESCAPE '\' OR "refresh_last_error" LIKE ? ESCAPE '\')`)
		args = append(args, pat, pat, pat)
	}
	if lq.After != "" {
		where = append(where, q.key+" > ?")
		args = append(args, lq.After)
	}
	where = append(where, q.key+" IS NOT NULL")
	query := q.selectState + " WHERE " + strings.Join(where, " AND ") + fmt.Sprintf(" ORDER BY %s LIMIT %d", q.key, limit)
	rows, err := queryRows(ctx, s.db, q, query, args, limit)
	if err != nil {
		return nil, withSchemaHint(fmt.Errorf("list rows of %s: %w", q.table, err))
	}
	return rows, nil
}

func queryRows(ctx context.Context, db queryer, q compiled, sqlText string, args []any, limit int) ([]models.Row, error) {
	return query(ctx, db, q, sqlText, args, limit, false)
}
