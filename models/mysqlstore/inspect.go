package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/refresher/refresher/models"
)

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
// size; only the total scans the smallest index, and only on a table of
// at most models.ExactTotalUpTo rows by InnoDB's estimate (TABLE_ROWS):
// above it Total is that estimate (Counts.TotalEstimated). On a table
// without those indexes (not migrated past 0002) they read the table once
// instead, and count the total too.
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
	var estimate int64
	if q.meta.countIndexed {
		if estimate, err = s.estimateRows(ctx, t.Name); err != nil {
			return c, fmt.Errorf("estimate rows of %s: %w", q.table, err)
		}
		total := "(SELECT COUNT(*) FROM " + q.table + ")"
		if estimate > s.exactTotalUpTo {
			total, c.TotalEstimated = "0", true
		}
		tb := " FROM " + q.table + " WHERE "
		query = "SELECT " + total + "," +
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
	if c.TotalEstimated {
		c.Total = estimate
	}
	return c, nil
}

// estimateRows returns the storage engine's estimate of the rows of the
// table name (information_schema's TABLE_ROWS: for InnoDB, from its
// statistics, without reading the table), -1 when there is none.
func (s *Store) estimateRows(ctx context.Context, name string) (int64, error) {
	var n sql.NullInt64
	err := s.db.QueryRowContext(ctx, "SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?", name).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) || !n.Valid {
		return -1, nil
	}
	return n.Int64, err
}

// List returns up to q.Limit rows of t in q.State ordered by key, after
// q.After, without payload (see models.Inspector). It reads in a read-only
// transaction and locks nothing. Search matches with LIKE '%...%', its
// wildcards escaped, under the columns' collations, within q.Budget() rows
// of the state (see search).
func (s *Store) List(ctx context.Context, t models.Table, lq models.ListQuery) (models.ListPage, error) {
	q, err := s.compile(ctx, t)
	if err != nil {
		return models.ListPage{}, err
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
		return models.ListPage{}, fmt.Errorf("list rows of %s: unknown state %q (use due, late, running, failing, disabled or all)", q.table, lq.State)
	}
	state, stateArgs := strings.Join(where, " AND "), args
	keyWhere, keyArgs := []string{q.key + " IS NOT NULL"}, []any(nil)
	if lq.After != "" {
		keyWhere, keyArgs = append(keyWhere, q.key+" > ?"), append(keyArgs, lq.After)
	}
	keyCond := strings.Join(keyWhere, " AND ")
	cond := strings.Join(append(where, keyWhere...), " AND ")
	args = append(slices.Clone(args), keyArgs...)
	query := q.selectState + " WHERE " + cond + " ORDER BY " + q.key + fmt.Sprintf(" LIMIT %d", limit)

	var page models.ListPage
	err = s.readOnly(ctx, func(tx *Tx) error {
		if lq.Search != "" {
			if state == "" {
				state = "TRUE"
			}
			page, err = tx.search(ctx, q, state, stateArgs, keyCond, keyArgs, lq, limit)
			return err
		}
		page.Rows, err = tx.query(ctx, q, query, args, limit, false)
		if len(page.Rows) == limit {
			page.Next = page.Rows[len(page.Rows)-1].Key
		}
		return err
	})
	if err != nil {
		return models.ListPage{}, fmt.Errorf("list %s rows of %s: %w", lq.State, q.table, err)
	}
	return page, nil
}

// search lists the rows of the state (state) that match lq.Search among
// the next lq.Budget() rows of the table in key order after the key
// (keyCond), so that its cost is bounded whatever the state and the
// matches: a substring cannot use an index, and a search with few matches
// would otherwise read the whole table, and a search within a state all
// the state's rows, each looked up in the table (seconds on 1M rows). The
// rows are read along the key's index, LIMIT budget, in a derived table,
// and tested; when fewer than limit match, one more query (on the key's
// index only) finds the budget-th key, where the next request goes on. The
// page is then read by key.
func (tx *Tx) search(ctx context.Context, q compiled, state string, stateArgs []any, keyCond string, keyArgs []any, lq models.ListQuery, limit int) (models.ListPage, error) {
	budget := lq.Budget()
	like := "%" + likeEscaper.Replace(lq.Search) + "%"
	var page models.ListPage
	keys, err := tx.keys(ctx, "SELECT k0 FROM (SELECT "+q.key+" AS k0, ("+state+") AS s0, `refresh_disabled_user_friendly_reason` AS r0, `refresh_last_error` AS e0 FROM "+q.table+
		" WHERE "+keyCond+" ORDER BY "+q.key+fmt.Sprintf(" LIMIT %d", budget)+") m WHERE s0 AND (CAST(k0 AS CHAR) LIKE ? OR r0 LIKE ? OR e0 LIKE ?) ORDER BY k0"+fmt.Sprintf(" LIMIT %d", limit),
		slices.Concat(stateArgs, keyArgs, []any{like, like, like}))
	if err != nil {
		return page, fmt.Errorf("search: %w", err)
	}
	if len(keys) == limit {
		page.Next = keys[len(keys)-1]
	} else {
		// The budget-th row, and whether any follows it.
		last, err := tx.keys(ctx, "SELECT "+q.key+" FROM "+q.table+" WHERE "+keyCond+" ORDER BY "+q.key+fmt.Sprintf(" LIMIT %d, 2", budget-1), keyArgs)
		if err != nil {
			return page, fmt.Errorf("search: find where the scan stopped: %w", err)
		}
		if len(last) == 2 {
			page.Next, page.ScannedTo = last[0], last[0]
		}
	}
	if len(keys) == 0 {
		return page, nil
	}
	var b strings.Builder
	b.WriteString(q.selectState + " WHERE " + q.key + " IN ")
	inArgs := models.AppendInList(&b, keys)
	b.WriteString(" ORDER BY " + q.key)
	page.Rows, err = tx.query(ctx, q, b.String(), inArgs, len(keys), false)
	return page, err
}

// keys runs a query of one column of keys.
func (tx *Tx) keys(ctx context.Context, query string, args []any) ([]string, error) {
	rs, err := tx.tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var keys []string
	for rs.Next() {
		var k string
		if err := rs.Scan(&k); err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, rs.Err()
}

// likeEscaper escapes LIKE's wildcards and its escape character ('\').
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// readOnly runs fn in a read-only transaction, rolled back at the end; it
// is READ COMMITTED, as Open sets every connection (see Store.Tx).
func (s *Store) readOnly(ctx context.Context, fn func(tx *Tx) error) error {
	sqlTx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("begin read-only transaction: %w", err)
	}
	defer func() { _ = sqlTx.Rollback() }()
	return fn(&Tx{s: s, tx: sqlTx})
}
