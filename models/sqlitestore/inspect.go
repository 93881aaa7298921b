package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/refresher/refresher/models"
)

// Counts counts the rows of t by state at now (see models.Counts), exactly
// (SQLite keeps no estimate of a table's rows): see countsQuery.
func (s *Store) Counts(ctx context.Context, t models.Table, now time.Time, lateAfter time.Duration) (models.Counts, error) {
	var c models.Counts
	q, err := s.compile(ctx, s.db, t)
	if err != nil {
		return c, err
	}
	var due, late, running, failing, disabled sql.NullInt64
	var oldest any
	var maxNo sql.NullInt64
	count := func(q compiled) error {
		return s.db.QueryRowContext(ctx, countsQuery(q), dbTime(now), dbTime(now.Add(-lateAfter))).
			Scan(&c.Total, &due, &late, &running, &failing, &disabled, &oldest, &maxNo)
	}
	err = count(q)
	if indexRefused(err) {
		// An index the cached metadata names was dropped, renamed or
		// made partial since: read the table's schema again, once.
		s.forget(t)
		if q, err = s.compile(ctx, s.db, t); err != nil {
			return c, err
		}
		err = count(q)
	}
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

// countsByScan is countsQuery for a table without the state indexes, up
// to its table name: one scan of the table counts everything.
const countsByScan = `SELECT COUNT(*),
  SUM("refresh_at" <= ?1), SUM("refresh_at" <= ?2),
  SUM("refresh_attempt_uid" IS NOT NULL),
  SUM("refresh_disabled_until_update" IS NULL AND "refresh_failing_since" IS NOT NULL),
  SUM("refresh_disabled_until_update" IS NOT NULL),
  MIN(CASE WHEN "refresh_at" <= ?1 THEN "refresh_at" END),
  MAX("refresh_attempt_no")
FROM `

// countsQuery is Counts's SELECT of the total, the due, late, running,
// failing and disabled counts, the oldest due refresh_at and the highest
// attempt number; ?1 is now, ?2 now - lateAfter.
//
// With the indexes of migrations 0002 and 0003 each figure is read from
// an index alone (INDEXED BY, whatever the statistics): the total from
// the smallest index (SQLite's count of its entries), each state from
// its own index over the rows in that state, the oldest due and the
// highest attempt number from one end of theirs. A table whose rows are
// wide reads only those entries: about a sixth of the CPU of one scan of
// a 100,000-row table, when half of it is due and half running, and far
// less when few rows are in any state. (The operator's gauges and
// dashboard count every few seconds beside the service; SQLite runs in
// its process.) Without those indexes it reads the table once and counts
// everything.
func countsQuery(q compiled) string {
	m := q.meta
	if m.refreshIndex == "" || m.attemptUIDIndex == "" || m.disabledIndex == "" {
		return countsByScan + q.table
	}
	by := func(index, where string) string {
		return "(SELECT COUNT(*) FROM " + q.table + " INDEXED BY " + quoteName(index) + " WHERE " + where + ")"
	}
	return "SELECT (SELECT COUNT(*) FROM " + q.table + "),\n  " + strings.Join([]string{
		by(m.refreshIndex, `"refresh_at" <= ?1`),
		by(m.refreshIndex, `"refresh_at" <= ?2`),
		by(m.attemptUIDIndex, `"refresh_attempt_uid" IS NOT NULL`),
		by(m.disabledIndex, `"refresh_disabled_until_update" IS NULL AND "refresh_failing_since" IS NOT NULL`),
		by(m.disabledIndex, `"refresh_disabled_until_update" IS NOT NULL`),
		`(SELECT MIN("refresh_at") FROM ` + q.table + " INDEXED BY " + quoteName(m.refreshIndex) + ` WHERE "refresh_at" <= ?1)`,
		`(SELECT MAX("refresh_attempt_no") FROM ` + q.table + ")",
	}, ",\n  ")
}

// List returns up to q.Limit rows of t in q.State, ordered by key,
// starting after the key q.After, without Payload. Search matches with
// LIKE, which is case-insensitive for ASCII letters, within q.Budget() rows
// of the state (see search).
func (s *Store) List(ctx context.Context, t models.Table, lq models.ListQuery) (models.ListPage, error) {
	q, err := s.compile(ctx, s.db, t)
	if err != nil {
		return models.ListPage{}, err
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
		return models.ListPage{}, fmt.Errorf("list rows of %s: unknown state %q: use due, late, running, failing, disabled or all", q.table, lq.State)
	}
	state, stateArgs := strings.Join(where, " AND "), args
	keyWhere, keyArgs := []string{q.key + " IS NOT NULL"}, []any(nil)
	if lq.After != "" {
		keyWhere, keyArgs = append(keyWhere, q.key+" > ?"), append(keyArgs, lq.After)
	}
	keyCond := strings.Join(keyWhere, " AND ")
	cond := strings.Join(append(where, keyWhere...), " AND ")
	args = append(slices.Clone(args), keyArgs...)
	if lq.Search != "" {
		if state == "" {
			state = "TRUE"
		}
		return s.search(ctx, q, state, stateArgs, keyCond, keyArgs, lq, limit)
	}
	query := q.selectState + " WHERE " + cond + fmt.Sprintf(" ORDER BY %s LIMIT %d", q.key, limit)
	rows, err := queryRows(ctx, s.db, q, query, args, limit)
	if err != nil {
		return models.ListPage{}, withSchemaHint(fmt.Errorf("list rows of %s: %w", q.table, err))
	}
	p := models.ListPage{Rows: rows}
	if len(rows) == limit {
		p.Next = rows[len(rows)-1].Key
	}
	return p, nil
}

// search lists the rows of the state (state) that match lq.Search among
// the next lq.Budget() rows of the table in key order after the key
// (keyCond), so that its cost is bounded whatever the state and the
// matches (a substring cannot use an index). When fewer than limit match,
// one more query finds the budget-th key, where the next request goes on.
func (s *Store) search(ctx context.Context, q compiled, state string, stateArgs []any, keyCond string, keyArgs []any, lq models.ListQuery, limit int) (models.ListPage, error) {
	budget := lq.Budget()
	pat := "%" + strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(lq.Search) + "%"
	var page models.ListPage
	query := q.selectState + " WHERE " + q.key + " IN (SELECT k0 FROM (SELECT " + q.key + " AS k0, (" + state + `) AS s0, "refresh_disabled_user_friendly_reason" AS r0, "refresh_last_error" AS e0 FROM ` + q.table +
		" WHERE " + keyCond + fmt.Sprintf(" ORDER BY %s LIMIT %d", q.key, budget) + `) WHERE s0 AND (k0 LIKE ? ESCAPE '\' OR r0 LIKE ? ESCAPE '\' OR e0 LIKE ? ESCAPE '\')` +
		fmt.Sprintf(" ORDER BY k0 LIMIT %d) ORDER BY %s", limit, q.key)
	rows, err := queryRows(ctx, s.db, q, query, slices.Concat(stateArgs, keyArgs, []any{pat, pat, pat}), limit)
	if err != nil {
		return page, withSchemaHint(fmt.Errorf("search rows of %s: %w", q.table, err))
	}
	page.Rows = rows
	if len(rows) == limit {
		page.Next = rows[len(rows)-1].Key
		return page, nil
	}
	// The budget-th row, and whether any follows it.
	rs, err := s.db.QueryContext(ctx, "SELECT "+q.key+" FROM "+q.table+" WHERE "+keyCond+fmt.Sprintf(" ORDER BY %s LIMIT 2 OFFSET %d", q.key, budget-1), keyArgs...)
	if err != nil {
		return page, withSchemaHint(fmt.Errorf("search rows of %s: find where the scan stopped: %w", q.table, err))
	}
	defer rs.Close()
	var last []string
	for rs.Next() {
		var k string
		if err := rs.Scan(&k); err != nil {
			return page, fmt.Errorf("search rows of %s: find where the scan stopped: %w", q.table, err)
		}
		last = append(last, k)
	}
	if err := rs.Err(); err != nil {
		return page, fmt.Errorf("search rows of %s: find where the scan stopped: %w", q.table, err)
	}
	if len(last) == 2 {
		page.Next, page.ScannedTo = last[0], last[0]
	}
	return page, nil
}

func queryRows(ctx context.Context, db queryer, q compiled, sqlText string, args []any, limit int) ([]models.Row, error) {
	return query(ctx, db, q, sqlText, args, limit, false)
}
