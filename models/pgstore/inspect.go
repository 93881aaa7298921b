package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/refresher/refresher/models"
)

// Counts counts the rows of t by state at now; see models.Inspector. With
// the indexes of migration 0003 each state is counted from its own index
// entries (the due ones from refresh_at's, the highest attempt number from
// the end of its index); on a table of more than models.ExactTotalUpTo
// rows, at most models.ExactStateUpTo+1 of them: a state with more is the
// planner's estimate (estimateState) and listed in Counts.Estimated. Only
// on a table of at most models.ExactTotalUpTo rows by the planner's
// estimate (estimateRows) does a count read every row: the total, with the
// due and late rows, in one pass (countsQuery); above it Total is that
// estimate (Counts.TotalEstimated).
// Without the indexes it is one scan of the table (count(*) FILTER per
// state), every count exact.
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
		// Each of countStates: its time, if its condition has one, and
		// where its count goes.
		states := []struct {
			at any
			n  *int64
		}{{now.UTC(), &c.Due}, {now.Add(-lateAfter).UTC(), &c.Late}, {nil, &c.Running}, {nil, &c.Failing}, {nil, &c.Disabled}}
		// $1 now, $2 late, $3 the entries a state's count reads at most (a
		// large table only).
		args := []any{states[0].at, states[1].at}
		var estimate int64
		err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			// Serial: the total's index-only scan with parallel workers
			// measured 145-153 ms against 69-107 ms alone on 2 busy cores
			// (1M rows), and counts run beside the refresh cycle, which
			// should keep the other cores.
			if _, err := tx.Exec(ctx, "SET LOCAL max_parallel_workers_per_gather = 0"); err != nil {
				return err
			}
			if err := tx.QueryRow(ctx, estimateRows, q.table).Scan(&estimate); err != nil {
				return fmt.Errorf("estimate rows: %w", err)
			}
			c.TotalEstimated = estimate > s.exactTotalUpTo
			if c.TotalEstimated {
				args = append(args, s.exactStateUpTo+1)
			}
			dest := []any{&c.Total}
			for _, st := range states {
				dest = append(dest, st.n)
			}
			if err := tx.QueryRow(ctx, countsQuery(q.table, !c.TotalEstimated), args...).Scan(append(dest, &oldest, &maxNo)...); err != nil {
				return err
			}
			for i, st := range states {
				if !c.TotalEstimated || *st.n <= s.exactStateUpTo {
					continue
				}
				var at []any
				if st.at != nil {
					at = []any{st.at}
				}
				n, err := estimateState(ctx, tx, "SELECT 1"+tb+countStates[i].cond, at)
				if err != nil {
					return fmt.Errorf("estimate %s rows: %w", countStates[i].state, err)
				}
				*st.n = max(n, s.exactStateUpTo+1)
				c.Estimated = append(c.Estimated, countStates[i].state)
			}
			return nil
		})
		if err != nil {
			return c, fmt.Errorf("count rows of %s: %w", q.table, withSchemaHint(err))
		}
		c.OldestDue = utc(oldest)
		c.MaxAttemptNo = int(maxNo)
		if c.TotalEstimated {
			c.Total = estimate
		}
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

// countStates are the states Counts counts from their indexes, in the
// order of countsQuery's columns. A condition on a time has it as $1,
// which is param in the query.
var countStates = []struct {
	state       models.RowState
	cond, param string
}{
	{models.StateDue, `"refresh_at" <= $1`, "$1"},
	{models.StateLate, `"refresh_at" <= $1`, "$2"},
	{models.StateRunning, `"refresh_attempt_uid" IS NOT NULL`, ""},
	{models.StateFailing, `"refresh_disabled_until_update" IS NULL AND "refresh_failing_since" IS NOT NULL`, ""},
	{models.StateDisabled, `"refresh_disabled_until_update" IS NOT NULL`, ""},
}

// countsQuery is Counts' SELECT on table (quoted) with the indexes of
// migration 0003: the total, each of countStates, the oldest due
// refresh_at and the highest attempt number, on $1 now, $2 the late
// threshold and, unless exact, $3 the entries a state's count reads at
// most.
//
// exact (a table of at most models.ExactTotalUpTo rows): the total and
// the states on refresh_at (due, late) are counted in one pass over the
// table or its refresh_at index, as the planner picks, instead of the
// total from the smallest index and the due and late rows again from
// refresh_at's. While a backlog is worked the rows' pages are not
// all-visible (each update clears the page's bit until the next VACUUM),
// so an index-only count visits the table for every entry: the total
// (live and dead entries) and then the due rows again. On 100,000 rows
// all due and just updated: 16-24 ms against 49-58 ms; 1,000,000: 141
// against 446 ms (once the first count has set the hint bits, which
// costs both alike). An idle, vacuumed table pays for reading every
// entry's refresh_at: 16-18 against 8 ms at 100,000 rows, 55-58 against
// 40-42 ms at 1,000,000.
func countsQuery(table string, exact bool) string {
	tb := " FROM " + table + " WHERE "
	sel := "SELECT 0"
	var pass []string // the one pass's columns (exact)
	if exact {
		sel, pass = "SELECT p.total", []string{"count(*) AS total"}
	}
	for i, st := range countStates {
		cond := st.cond
		if st.param != "" {
			cond = strings.ReplaceAll(cond, "$1", st.param)
		}
		switch {
		case !exact:
			// A large table: at most $3 entries of the state's index,
			// each of which may cost a visit to the table (see
			// models.ExactStateUpTo).
			sel += ",\n\t\t(SELECT count(*) FROM (SELECT 1" + tb + cond + " LIMIT $3) s)"
		case st.param != "":
			name := "s" + strconv.Itoa(i)
			pass = append(pass, "count(*) FILTER (WHERE "+cond+") AS "+name)
			sel += ",\n\t\tp." + name
		default:
			sel += ",\n\t\t(SELECT count(*)" + tb + cond + ")"
		}
	}
	sel += `,
		(SELECT min("refresh_at")` + tb + `"refresh_at" <= $1),
		COALESCE((SELECT max("refresh_attempt_no") FROM ` + table + `), 0)`
	if exact {
		sel += "\n\tFROM (SELECT " + strings.Join(pass, ", ") + " FROM " + table + ") p"
	}
	return sel
}

// estimateRows is the planner's estimate of the rows of the table $1 (its
// quoted name) as the planner makes it: the rows per page of the last
// VACUUM or ANALYZE (pg_class.reltuples / relpages) times the table's
// pages now; -1 when the table has never been vacuumed or analyzed.
const estimateRows = `SELECT CASE WHEN c.reltuples < 0 THEN -1
	WHEN c.relpages = 0 THEN c.reltuples::bigint
	ELSE (c.reltuples / c.relpages * (pg_relation_size(c.oid) / current_setting('block_size')::bigint))::bigint END
	FROM pg_class c WHERE c.oid = $1::text::regclass`

// estimateState returns the planner's estimate of the rows query (SELECT 1
// FROM the table WHERE a state's condition, on the parameters args) would
// return: EXPLAIN's top "Plan Rows", from the table's statistics, without
// running it. The statistics may be as old as the last ANALYZE.
func estimateState(ctx context.Context, tx pgx.Tx, query string, args []any) (int64, error) {
	var plan []struct {
		Plan struct {
			Rows float64 `json:"Plan Rows"`
		}
	}
	var doc []byte
	if err := tx.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+query, args...).Scan(&doc); err != nil {
		return 0, err
	}
	if err := json.Unmarshal(doc, &plan); err != nil || len(plan) == 0 {
		return 0, fmt.Errorf("read EXPLAIN's rows: %v in %.200s", err, doc)
	}
	return int64(plan[0].Plan.Rows), nil
}

// List returns up to q.Limit (default 50, at most 1000) rows of t in
// q.State, ordered by key as the key column's type orders it, after the key
// q.After; see models.Inspector. Search matches the key's text, the
// disabled reason and the last error, case-insensitively (ILIKE), within
// q.Budget() rows of the state (see search). An After that cannot be of the
// key column's type is an error.
func (s *Store) List(ctx context.Context, t models.Table, lq models.ListQuery) (models.ListPage, error) {
	q, err := s.compile(ctx, t)
	if err != nil {
		return models.ListPage{}, err
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
		return models.ListPage{}, fmt.Errorf("list rows of %s: unknown state %q (want due, late, running, failing, disabled or all)", q.table, lq.State)
	}
	if lq.After != "" && !q.keyType.valid(lq.After) {
		return models.ListPage{}, fmt.Errorf("list rows of %s: after %q is not a value of the key column", q.table, lq.After)
	}
	// keyCond is the rows after lq.After, its parameter numbered $n.
	keyCond := func(n int) string {
		c := q.key + " IS NOT NULL"
		switch {
		case lq.After == "":
		case q.keyType.typ == "":
			c += " AND " + q.key + "::text > $" + strconv.Itoa(n)
		default:
			c += " AND " + q.key + " > $" + strconv.Itoa(n) + "::" + q.keyType.typ
		}
		return c
	}
	var keyArgs []any
	if lq.After != "" {
		keyArgs = []any{lq.After}
	}
	state := strings.Join(where, " AND ")
	where = append(where, keyCond(len(args)+1))
	stateArgs := args
	args = append(slices.Clone(args), keyArgs...)
	// Qualified: the output column "k" is the key's text, and ORDER BY
	// would take it for that.
	order := q.table + "." + q.key
	if q.keyType.typ == "" {
		order += "::text"
	}
	cond := strings.Join(where, " AND ")
	if lq.Search != "" {
		if state == "" {
			state = "TRUE"
		}
		return s.search(ctx, q, state, stateArgs, keyCond, keyArgs, order, lq, limit)
	}
	if lq.State == models.StateDue || lq.State == models.StateLate {
		p, ok, err := s.listSmallState(ctx, q, state, stateArgs, keyCond, keyArgs, order, lq.Budget(), limit)
		if err != nil || ok {
			return p, err
		}
	}
	query := q.selectState + " WHERE " + cond + " ORDER BY " + order + " LIMIT " + strconv.Itoa(limit)
	rows, err := queryRows(ctx, s.pool, q, query, args, limit, false)
	if err != nil {
		return models.ListPage{}, fmt.Errorf("list rows of %s: %w", q.table, withSchemaHint(err))
	}
	p := models.ListPage{Rows: rows}
	if len(rows) == limit {
		p.Next = rows[len(rows)-1].Key
	}
	return p, nil
}

// listSmallState lists the page of a state on refresh_at (due, late: the
// condition state on $1) when the state has at most budget rows: it reads
// the state's keys along the refresh_at index, at most budget+1 of them,
// then the page's rows by key. ok is false when the state has more rows,
// and the caller walks the key's index instead, which then soon finds a
// page. Without it, PostgreSQL chose that walk also for a state with few
// or no rows, and read the whole table (1 s on 1M rows, the late list of
// the scaling benchmark): its estimate of refresh_at <= $1 comes from
// statistics that the refresh cycle makes stale within seconds, or from a
// generic plan (a prepared statement's sixth run), which assumes a third
// of the table.
func (s *Store) listSmallState(ctx context.Context, q compiled, state string, stateArgs []any, keyCond func(n int) string, keyArgs []any, order string, budget, limit int) (models.ListPage, bool, error) {
	rs, err := s.pool.Query(ctx, "SELECT "+q.key+"::text FROM "+q.table+" WHERE "+state+" AND "+q.key+` IS NOT NULL ORDER BY "refresh_at" LIMIT `+strconv.Itoa(budget+1), stateArgs...)
	var keys []string
	if err == nil {
		keys, err = pgx.CollectRows(rs, pgx.RowTo[string])
	}
	if err != nil {
		return models.ListPage{}, false, fmt.Errorf("list rows of %s: %w", q.table, withSchemaHint(err))
	}
	if len(keys) > budget {
		return models.ListPage{}, false, nil
	}
	var p models.ListPage
	if len(keys) == 0 {
		return p, true, nil
	}
	query := q.selectState + " WHERE " + q.keyType.match(q.key, "$1") + " AND " + keyCond(2) + " ORDER BY " + order + " LIMIT " + strconv.Itoa(limit)
	if p.Rows, err = queryRows(ctx, s.pool, q, query, append([]any{keys}, keyArgs...), limit, false); err != nil {
		return p, false, fmt.Errorf("list rows of %s by key: %w", q.table, withSchemaHint(err))
	}
	if len(p.Rows) == limit {
		p.Next = p.Rows[len(p.Rows)-1].Key
	}
	return p, true, nil
}

// search lists the rows of the state (state) that match lq.Search among
// the next lq.Budget() rows of the table in key order after lq.After
// (keyCond), so that its cost is bounded whatever the state and the
// matches: a substring cannot use an index, and a search with few matches
// would otherwise read the whole table, or a search within a state all the
// state's rows (up to seconds on 1M rows). The rows are read along the
// key's index, LIMIT budget, and tested; when fewer than limit match, one
// more query (on the key's index) finds the budget-th key, where the next
// request goes on. The page is then read by key.
func (s *Store) search(ctx context.Context, q compiled, state string, stateArgs []any, keyCond func(n int) string, keyArgs []any, order string, lq models.ListQuery, limit int) (models.ListPage, error) {
	budget := lq.Budget()
	keyOrder := "m.k0"
	if q.keyType.typ == "" {
		keyOrder += "::text"
	}
	n := len(stateArgs)
	p := "$" + strconv.Itoa(n+len(keyArgs)+1)
	sargs := slices.Concat(stateArgs, keyArgs, []any{"%" + likeEscape(lq.Search) + "%"})
	var page models.ListPage
	rs, err := s.pool.Query(ctx, "SELECT m.k0::text FROM (SELECT "+q.key+" AS k0, ("+state+`) AS s0, "refresh_disabled_user_friendly_reason" AS r0, "refresh_last_error" AS e0 FROM `+q.table+
		" WHERE "+keyCond(n+1)+" ORDER BY "+order+" LIMIT "+strconv.Itoa(budget)+") m WHERE m.s0 AND (m.k0::text ILIKE "+p+" OR m.r0 ILIKE "+p+" OR m.e0 ILIKE "+p+
		") ORDER BY "+keyOrder+" LIMIT "+strconv.Itoa(limit), sargs...)
	var keys []string
	if err == nil {
		keys, err = pgx.CollectRows(rs, pgx.RowTo[string])
	}
	if err != nil {
		return page, fmt.Errorf("search rows of %s: %w", q.table, withSchemaHint(err))
	}
	if len(keys) == limit {
		page.Next = keys[len(keys)-1]
	} else {
		// The budget-th row, and whether any follows it.
		rs, err := s.pool.Query(ctx, "SELECT "+q.key+"::text FROM "+q.table+" WHERE "+keyCond(1)+" ORDER BY "+order+
			" LIMIT 2 OFFSET "+strconv.Itoa(budget-1), keyArgs...)
		var last []string
		if err == nil {
			last, err = pgx.CollectRows(rs, pgx.RowTo[string])
		}
		if err != nil {
			return page, fmt.Errorf("search rows of %s: find where the scan stopped: %w", q.table, withSchemaHint(err))
		}
		if len(last) == 2 {
			page.Next, page.ScannedTo = last[0], last[0]
		}
	}
	if len(keys) == 0 {
		return page, nil
	}
	page.Rows, err = queryRows(ctx, s.pool, q, q.selectState+" WHERE "+q.keyType.match(q.key, "$1")+" ORDER BY "+order, []any{keys}, len(keys), false)
	if err != nil {
		return page, fmt.Errorf("list rows of %s by key: %w", q.table, withSchemaHint(err))
	}
	return page, nil
}

// likeEscape escapes LIKE's wildcards (and its escape character).
func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}
