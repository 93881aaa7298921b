package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/refresher/refresher/models"
)

// MaxListLimit caps ListQuery.Limit; DefaultListLimit is its default.
const (
	MaxListLimit     = 1000
	DefaultListLimit = 50
)

// Counts counts t's rows by state at now (see models.Counts), in
// statements that lock nothing. With the indexes of migration 0003 each
// state is answered from its own index (the due and late rows walk the
// refresh_at index over their range; the others are index-only range
// scans over the rows in each state; the highest attempt number is the
// last entry of its index). On a table of more than models.ExactTotalUpTo
// rows they read at most models.ExactStateUpTo+1 entries per state: a
// state with more is the optimizer's estimate of its rows
// (estimateState) and listed in Counts.Estimated. So their cost is
// bounded whatever the table's size; only the total scans the smallest
// index, and only on a table of at most models.ExactTotalUpTo rows by
// InnoDB's estimate (TABLE_ROWS): above it Total is that estimate
// (Counts.TotalEstimated). On a table without those indexes (not migrated
// past 0002) they read the table once instead and count everything.
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
	var oldest sql.NullTime
	if !q.meta.countIndexed {
		var late, running, failing, disabled, maxNo sql.NullInt64
		err = s.db.QueryRowContext(ctx, "SELECT COUNT(*), SUM(`refresh_at` <= ?), MIN(`refresh_at`) FROM "+q.table+force+
			" WHERE `refresh_at` <= ?", dbTime(now.Add(-lateAfter)), dbTime(now)).Scan(&c.Due, &late, &oldest)
		if err != nil {
			return c, fmt.Errorf("count due rows of %s: %w", q.table, err)
		}
		err = s.db.QueryRowContext(ctx, "SELECT COUNT(*), SUM(`refresh_attempt_uid` IS NOT NULL),"+
			" SUM(`refresh_failing_since` IS NOT NULL AND `refresh_disabled_until_update` IS NULL),"+
			" SUM(`refresh_disabled_until_update` IS NOT NULL), MAX(`refresh_attempt_no`) FROM "+q.table).Scan(&c.Total, &running, &failing, &disabled, &maxNo)
		if err != nil {
			return c, fmt.Errorf("count rows of %s by state: %w", q.table, err)
		}
		c.Late, c.OldestDue = late.Int64, nullTime(oldest)
		c.Running, c.Failing, c.Disabled, c.MaxAttemptNo = running.Int64, failing.Int64, disabled.Int64, int(maxNo.Int64)
		return c, nil
	}
	estimate, err := s.estimateRows(ctx, t.Name)
	if err != nil {
		return c, fmt.Errorf("estimate rows of %s: %w", q.table, err)
	}
	total := "(SELECT COUNT(*) FROM " + q.table + ")"
	if estimate > s.exactTotalUpTo {
		total, c.TotalEstimated = "0", true
	}
	// The states in the order of the SELECT below; at is the time a
	// condition on refresh_at compares with (its ?), nil for none.
	states := []struct {
		state models.RowState
		from  string
		cond  string
		at    any
		n     *int64
	}{
		{models.StateDue, q.table + force, "`refresh_at` <= ?", dbTime(now), &c.Due},
		{models.StateLate, q.table + force, "`refresh_at` <= ?", dbTime(now.Add(-lateAfter)), &c.Late},
		{models.StateRunning, q.table, "`refresh_attempt_uid` IS NOT NULL", nil, &c.Running},
		{models.StateFailing, q.table, "`refresh_disabled_until_update` IS NULL AND `refresh_failing_since` IS NOT NULL", nil, &c.Failing},
		{models.StateDisabled, q.table, "`refresh_disabled_until_update` IS NOT NULL", nil, &c.Disabled},
	}
	query := "SELECT " + total
	var args []any
	dest := []any{&c.Total}
	for _, st := range states {
		if !c.TotalEstimated {
			query += ", (SELECT COUNT(*) FROM " + st.from + " WHERE " + st.cond + ")"
		} else {
			// A large table: at most exactStateUpTo+1 entries of the
			// state's index.
			query += ", (SELECT COUNT(*) FROM (SELECT 1 FROM " + st.from + " WHERE " + st.cond + " LIMIT " + strconv.FormatInt(s.exactStateUpTo+1, 10) + ") s)"
		}
		if st.at != nil {
			args = append(args, st.at)
		}
		dest = append(dest, st.n)
	}
	var maxNo sql.NullInt64
	query += ", (SELECT MIN(`refresh_at`) FROM " + q.table + force + " WHERE `refresh_at` <= ?), (SELECT MAX(`refresh_attempt_no`) FROM " + q.table + ")"
	args = append(args, dbTime(now))
	if err := s.db.QueryRowContext(ctx, query, args...).Scan(append(dest, &oldest, &maxNo)...); err != nil {
		return c, fmt.Errorf("count rows of %s by state: %w", q.table, err)
	}
	c.OldestDue, c.MaxAttemptNo = nullTime(oldest), int(maxNo.Int64)
	for _, st := range states {
		if !c.TotalEstimated || *st.n <= s.exactStateUpTo {
			continue
		}
		var at []any
		if st.at != nil {
			at = []any{st.at}
		}
		n, err := s.estimateState(ctx, "SELECT 1 FROM "+st.from+" WHERE "+st.cond, at)
		if err != nil {
			return c, fmt.Errorf("estimate %s rows of %s: %w", st.state, q.table, err)
		}
		*st.n = max(n, s.exactStateUpTo+1)
		c.Estimated = append(c.Estimated, st.state)
	}
	if c.TotalEstimated {
		c.Total = estimate
	}
	return c, nil
}

// estimateState returns the optimizer's estimate of the rows query (a
// SELECT of one table with a state's condition) would return: EXPLAIN's
// rows, from the index's statistics or a dive into the index's range,
// without running it.
func (s *Store) estimateState(ctx context.Context, query string, args []any) (int64, error) {
	rows, err := s.db.QueryContext(ctx, "EXPLAIN "+query, args...)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return 0, err
	}
	at := slices.Index(cols, "rows")
	if at < 0 || !rows.Next() {
		return 0, fmt.Errorf("EXPLAIN gave no rows estimate (columns %v): %w", cols, rows.Err())
	}
	vals := make([]sql.NullInt64, len(cols))
	dest := make([]any, len(cols))
	for i := range vals {
		dest[i] = &sql.RawBytes{}
	}
	dest[at] = &vals[at]
	if err := rows.Scan(dest...); err != nil {
		return 0, err
	}
	return vals[at].Int64, rows.Err()
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
