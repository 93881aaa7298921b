package pgstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/refresher/refresher/models"
)

// Counts counts the rows of t by state at now; see models.Inspector. With
// the indexes of migration 0003 each state is counted from its own index
// entries (the due ones from refresh_at's, the highest attempt number from
// the end of its index), and only the total reads a whole index; without
// them it is one scan of the table (count(*) FILTER per state).
func (s *Store) Counts(ctx context.Context, t models.Table, now time.Time, lateAfter time.Duration) (models.Counts, error) {
	q, err := s.compile(ctx, t)
	if err != nil {
		return models.Counts{}, err
	}
	var c models.Counts
	var oldest *time.Time
	var maxNo int64
	if q.meta.countIndexed() {
		tb := " FROM " + q.table + " WHERE "
		err = s.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM `+q.table+`),
		(SELECT count(*)`+tb+`"refresh_at" <= $1),
		(SELECT count(*)`+tb+`"refresh_at" <= $2),
		(SELECT count(*)`+tb+`"refresh_attempt_uid" IS NOT NULL),
		(SELECT count(*)`+tb+`"refresh_failing_since" IS NOT NULL) -
		(SELECT count(*)`+tb+`"refresh_disabled_until_update" IS NOT NULL AND "refresh_failing_since" IS NOT NULL),
		(SELECT count(*)`+tb+`"refresh_disabled_until_update" IS NOT NULL),
		(SELECT min("refresh_at")`+tb+`"refresh_at" <= $1),
		COALESCE((SELECT max("refresh_attempt_no") FROM `+q.table+`), 0)`, now.UTC(), now.Add(-lateAfter).UTC()).Scan(
			&c.Total, &c.Due, &c.Late, &c.Running, &c.Failing, &c.Disabled, &oldest, &maxNo)
		if err != nil {
			return c, fmt.Errorf("count rows of %s: %w", q.table, withSchemaHint(err))
		}
		c.OldestDue = utc(oldest)
		c.MaxAttemptNo = int(maxNo)
		return c, nil
	}
	err = s.pool.QueryRow(ctx, `SELECT count(*),
		count(*) FILTER (WHERE "refresh_at" <= $1),
		count(*) FILTER (WHERE "refresh_at" <= $2),
		count(*) FILTER (WHERE "refresh_attempt_uid" IS NOT NULL),
		count(*) FILTER (WHERE "refresh_disabled_until_update" IS NULL AND "refresh_failing_since" IS NOT NULL),
		count(*) FILTER (WHERE "refresh_disabled_until_update" IS NOT NULL),
		min("refresh_at") FILTER (WHERE "refresh_at" <= $1),
		COALESCE(max("refresh_attempt_no"), 0)
		FROM `+q.table, now.UTC(), now.Add(-lateAfter).UTC()).Scan(
		&c.Total, &c.Due, &c.Late, &c.Running, &c.Failing, &c.Disabled, &oldest, &maxNo)
	if err != nil {
		return c, fmt.Errorf("count rows of %s: %w", q.table, withSchemaHint(err))
	}
	c.OldestDue = utc(oldest)
	c.MaxAttemptNo = int(maxNo)
	return c, nil
}

// List returns up to q.Limit (default 50, at most 1000) rows of t in
// q.State, ordered by key as the key column's type orders it, after the key
// q.After; see models.Inspector. Search matches the key's text, the
// disabled reason and the last error, case-insensitively (ILIKE). An After
// that cannot be of the key column's type is an error.
func (s *Store) List(ctx context.Context, t models.Table, lq models.ListQuery) ([]models.Row, error) {
	q, err := s.compile(ctx, t)
	if err != nil {
		return nil, err
	}
	limit := lq.Limit
	if limit <= 0 {
		limit = 50
	}
	limit = min(limit, 1000)
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	switch lq.State {
	case models.StateDue:
		where = append(where, `"refresh_at" <= `+arg(lq.Now.UTC()))
	case models.StateLate:
		where = append(where, `"refresh_at" <= `+arg(lq.Now.Add(-lq.LateAfter).UTC()))
	case models.StateRunning:
		where = append(where, `"refresh_attempt_uid" IS NOT NULL`)
	case models.StateFailing:
		where = append(where, `"refresh_disabled_until_update" IS NULL AND "refresh_failing_since" IS NOT NULL`)
	case models.StateDisabled:
		where = append(where, `"refresh_disabled_until_update" IS NOT NULL`)
	case models.StateAll, "":
	default:
		return nil, fmt.Errorf("list rows of %s: unknown state %q (want due, late, running, failing, disabled or all)", q.table, lq.State)
	}
	if lq.Search != "" {
		p := arg("%" + likeEscape(lq.Search) + "%")
		where = append(where, "("+q.key+"::text ILIKE "+p+` OR "refresh_disabled_user_friendly_reason" ILIKE `+p+` OR "refresh_last_error" ILIKE `+p+")")
	}
	if lq.After != "" {
		if !q.keyType.valid(lq.After) {
			return nil, fmt.Errorf("list rows of %s: after %q is not a value of the key column", q.table, lq.After)
		}
		if q.keyType.typ == "" {
			where = append(where, q.key+"::text > "+arg(lq.After))
		} else {
			where = append(where, q.key+" > "+arg(lq.After)+"::"+q.keyType.typ)
		}
	}
	where = append(where, q.key+" IS NOT NULL")
	// Qualified: the output column "k" is the key's text, and ORDER BY
	// would take it for that.
	order := q.table + "." + q.key
	if q.keyType.typ == "" {
		order += "::text"
	}
	query := q.selectState + " WHERE " + strings.Join(where, " AND ") + " ORDER BY " + order + " LIMIT " + strconv.Itoa(limit)
	rows, err := queryRows(ctx, s.pool, q, query, args, limit, false)
	if err != nil {
		return nil, fmt.Errorf("list rows of %s: %w", q.table, withSchemaHint(err))
	}
	return rows, nil
}

// likeEscape escapes LIKE's wildcards (and its escape character).
func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}
