package mysqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/refresher/refresher/models"
)

var _ models.Inspector = (*Store)(nil)

// MaxListLimit caps ListQuery.Limit; DefaultListLimit is its default.
const (
	MaxListLimit     = 1000
	DefaultListLimit = 50
)

// Counts counts t's rows by state at now (see models.Counts) in two
// statements, neither of which locks. The due and late rows and the oldest
// due time walk the refresh_at index over the due range only. The others
// are answered from the indexes of migration 0003 (index-only range scans
// over the rows in each state, and the last entry of the attempt number's
// index), so their cost follows the rows in each state, not the table's
// size; only the total scans the smallest index. On a table without those
// indexes (not migrated past 0002) they read the table once instead.
func (s *Store) Counts(ctx context.Context, t models.Table, now time.Time, lateAfter time.Duration) (models.Counts, error) {
	var c models.Counts
	q, err := s.compile(ctx, t)
	if err != nil {
		return c, err
	}
	force := ""
	if q.meta.refreshIndex != "" {
		idx, err := quoteIdent(q.meta.refreshIndex)
		if err != nil {
			return c, fmt.Errorf("index of table %s: %w", q.table, err)
		}
		force = " FORCE INDEX (" + idx + ")"
	}
	var late sql.NullInt64
	var oldest sql.NullTime
	err = s.db.QueryRowContext(ctx, "SELECT COUNT(*), SUM(`refresh_at` <= ?), MIN(`refresh_at`) FROM "+q.table+force+
		" WHERE `refresh_at` <= ?", dbTime(now.Add(-lateAfter)), dbTime(now)).Scan(&c.Due, &late, &oldest)
	if err != nil {
		return c, fmt.Errorf("count due rows of %s: %w", q.table, err)
	}
	c.Late, c.OldestDue = late.Int64, nullTime(oldest)
	var running, failing, disabled, maxNo sql.NullInt64
	query := "SELECT COUNT(*), SUM(`refresh_attempt_uid` IS NOT NULL)," +
		" SUM(`refresh_failing_since` IS NOT NULL AND `refresh_disabled_until_update` IS NULL)," +
		" SUM(`refresh_disabled_until_update` IS NOT NULL), MAX(`refresh_attempt_no`) FROM " + q.table
	if q.meta.countIndexed {
		tb := " FROM " + q.table + " WHERE "
		query = "SELECT (SELECT COUNT(*) FROM " + q.table + ")," +
			" (SELECT COUNT(*)" + tb + "`refresh_attempt_uid` IS NOT NULL)," +
			" (SELECT COUNT(*)" + tb + "`refresh_failing_since` IS NOT NULL) -" +
			" (SELECT COUNT(*)" + tb + "`refresh_disabled_until_update` IS NOT NULL AND `refresh_failing_since` IS NOT NULL)," +
			" (SELECT COUNT(*)" + tb + "`refresh_disabled_until_update` IS NOT NULL)," +
			" (SELECT MAX(`refresh_attempt_no`) FROM " + q.table + ")"
	}
	err = s.db.QueryRowContext(ctx, query).Scan(&c.Total, &running, &failing, &disabled, &maxNo)
	if err != nil {
		return c, fmt.Errorf("count rows of %s by state: %w", q.table, err)
	}
	c.Running, c.Failing, c.Disabled, c.MaxAttemptNo = running.Int64, failing.Int64, disabled.Int64, int(maxNo.Int64)
	return c, nil
}

// List returns up to q.Limit rows of t in q.State ordered by key, after
// q.After, without payload (see models.Inspector). It reads in a read-only
// transaction and locks nothing. Search matches with LIKE '%...%', its
// wildcards escaped, under the columns' collations.
func (s *Store) List(ctx context.Context, t models.Table, lq models.ListQuery) ([]models.Row, error) {
	q, err := s.compile(ctx, t)
	if err != nil {
		return nil, err
	}
	limit := lq.Limit
	switch {
	case limit <= 0:
		limit = DefaultListLimit
	case limit > MaxListLimit:
		limit = MaxListLimit
	}
	var where []string
	var args []any
	switch lq.State {
	case models.StateDue:
		where, args = append(where, "`refresh_at` <= ?"), append(args, dbTime(lq.Now))
	case models.StateLate:
		where, args = append(where, "`refresh_at` <= ?"), append(args, dbTime(lq.Now.Add(-lq.LateAfter)))
	case models.StateRunning:
		where = append(where, "`refresh_attempt_uid` IS NOT NULL")
	case models.StateFailing:
		where = append(where, "`refresh_failing_since` IS NOT NULL AND `refresh_disabled_until_update` IS NULL")
	case models.StateDisabled:
		where = append(where, "`refresh_disabled_until_update` IS NOT NULL")
	case models.StateAll, "":
	default:
		return nil, fmt.Errorf("list rows of %s: unknown state %q (use due, late, running, failing, disabled or all)", q.table, lq.State)
	}
	if lq.Search != "" {
		like := "%" + likeEscaper.Replace(lq.Search) + "%"
		where = append(where, "(CAST("+q.key+" AS CHAR) LIKE ? OR `refresh_disabled_user_friendly_reason` LIKE ? OR `refresh_last_error` LIKE ?)")
		args = append(args, like, like, like)
	}
	if lq.After != "" {
		where, args = append(where, q.key+" > ?"), append(args, lq.After)
	}
	where = append(where, q.key+" IS NOT NULL")
	query := q.selectState + " WHERE " + strings.Join(where, " AND ") + " ORDER BY " + q.key + fmt.Sprintf(" LIMIT %d", limit)

	var rows []models.Row
	err = s.readOnly(ctx, func(tx *Tx) error {
		rows, err = tx.query(ctx, q, query, args, limit, false)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list %s rows of %s: %w", lq.State, q.table, err)
	}
	return rows, nil
}

// likeEscaper escapes LIKE's wildcards and its escape character ('\').
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// readOnly runs fn in a read-only transaction, rolled back at the end.
func (s *Store) readOnly(ctx context.Context, fn func(tx *Tx) error) error {
	sqlTx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true, Isolation: sql.LevelReadCommitted})
	if err != nil {
		return fmt.Errorf("begin read-only transaction: %w", err)
	}
	defer func() { _ = sqlTx.Rollback() }()
	return fn(&Tx{s: s, tx: sqlTx})
}
