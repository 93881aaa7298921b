package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/models/mysqlstore"
	"github.com/refresher/refresher/models/pgstore"
)

// hugeRows is the table size --huge adds to --scaling.
const hugeRows = 10_000_000

// readBudget is what every read call of the gauges, the dashboard and the
// API should take at most (docs/performance.md), at every size.
const readBudget = 200 * time.Millisecond

// scalingSizes are the table sizes of --scaling: --scaling-rows if given,
// else 100k and 1M, and 10M with --huge.
func (o options) scalingSizes() ([]int64, error) {
	if o.scalingRows != "" {
		var sizes []int64
		for _, f := range strings.Split(o.scalingRows, ",") {
			n, err := strconv.ParseInt(strings.ReplaceAll(strings.TrimSpace(f), "_", ""), 10, 64)
			if err != nil || n <= 0 {
				return nil, fmt.Errorf("--scaling-rows: %q is not a row count", f)
			}
			sizes = append(sizes, n)
		}
		return sizes, nil
	}
	sizes := []int64{100_000, 1_000_000}
	if o.huge {
		sizes = append(sizes, hugeRows)
	}
	return sizes, nil
}

// scaleRow is one table size of --scaling.
type scaleRow struct {
	rows, due          int64
	seed               time.Duration
	dataMB, indexMB    int64 // on disk as the server reports it; -1 unknown
	explain            string
	examined           string // what the claim read when run (claimExamined)
	reads              []readCall
	settled            []readCall // the same once the database settled (benchStore.settle)
	res                map[string]runResult
	loadStart, loadEnd string // /proc/loadavg's 1-minute figure
}

// scaling runs the full cycle with the same number of due rows in tables
// of each size, and times the read calls of the gauges, the dashboard and
// the API on each table.
func (e *env) scaling(ctx context.Context) error {
	o := e.o
	sizes, err := o.scalingSizes()
	if err != nil {
		return err
	}
	how := "as configured on this server (the bench changes nothing)"
	if o.bufferPool != "" {
		how = "with the buffer pool --buffer-pool " + o.bufferPool + " set for this run"
	}
	fmt.Printf("database memory %s: %s\n\n", how, e.st.describe(ctx))
	var table []scaleRow
	for _, rows := range sizes {
		r := scaleRow{rows: rows, due: min(o.scalingDue, rows), loadStart: loadAvg()}
		start := time.Now()
		if err := e.seedScaling(ctx, rows); err != nil {
			return err
		}
		r.seed = time.Since(start)
		r.dataMB, r.indexMB = e.tableMB(ctx)
		fmt.Printf("seeded %d rows in %s (table %d MB, indexes %d MB; load %s)\n", rows, round(r.seed), r.dataMB, r.indexMB, loadAvg())
		if err := e.st.applyPlan(ctx, e.backlogPlan(r.due)); err != nil {
			return err
		}
		if r.explain, r.examined, err = e.explainClaim(ctx, o.batch); err != nil {
			return err
		}
		fmt.Print(r.explain)
		fmt.Printf("the claim run once (rolled back): %s\n\n", r.examined)
		if r.reads, err = e.timeReads(ctx, r.due); err != nil {
			return err
		}
		printReads(os.Stdout, r.reads)
		// Again once the database has cleaned up after the plan's UPDATE
		// (PostgreSQL: VACUUM, which sets the visibility map that
		// index-only counts need; MariaDB: purge), as after a quiet spell.
		e.st.settle(ctx)
		if r.settled, err = e.timeReads(ctx, r.due); err != nil {
			return err
		}
		fmt.Println("after settle (PostgreSQL VACUUM ANALYZE, MariaDB purge):")
		printReads(os.Stdout, r.settled)
		if r.res, err = e.fullRuns(ctx, r.due, e.impls()); err != nil {
			return err
		}
		r.loadEnd = loadAvg()
		table = append(table, r)
		fmt.Println()
	}
	printScalingTable(os.Stdout, o.store, e.impls(), table)
	return nil
}

// seedScaling (re)creates the table with rows models as an application's
// existing table would be when `refresher migrate` first runs on it: its
// rows are loaded first, then the store's migration adds the refresh
// columns (instantly: they are nullable or have a constant default) and
// builds the indexes over the loaded rows, which is several times faster
// than inserting into the indexes row by row. A few refresh columns are
// in the table from the start so that the load gives rows in every state
// the dashboard counts (none of them due): 0.5% running, 2% failing, 1%
// disabled (and failing). SQLite keeps the standard seed.
func (e *env) seedScaling(ctx context.Context, rows int64) error {
	var err error
	switch s := e.st.(type) {
	case *mysqlStore:
		err = s.seedLoaded(ctx, rows)
	case *pgStore:
		err = s.seedLoaded(ctx, rows)
	default:
		return e.seed(ctx, rows)
	}
	if err != nil {
		return err
	}
	e.rows = rows
	return nil
}

// The state mix of seedScaling, by id: running when id % 200 = 1, failing
// when id % 50 = 3 or id % 100 = 5, disabled when id % 100 = 5. Only odd
// ids, which no plan of 100k/1M/10M rows with 50k due makes due (due ids
// are the multiples of rows/due), so applyPlan's reset leaves them as they
// are at every size.
const (
	mixRunning  = "%[1]s %% 200 = 1"
	mixFailing  = "%[1]s %% 50 = 3 OR %[1]s %% 100 = 5"
	mixDisabled = "%[1]s %% 100 = 5"
)

func mix(cond, col string) string { return "(" + fmt.Sprintf(cond, col) + ")" }

func (s *mysqlStore) seedLoaded(ctx context.Context, rows int64) error {
	stmts := []string{
		"DROP TABLE IF EXISTS " + benchTable,
		"DROP TABLE IF EXISTS " + mysqlstore.MigrationsTable,
		// The refresh columns here have migration 0001's types.
		"CREATE TABLE " + benchTable + ` (
			id BIGINT NOT NULL PRIMARY KEY,
			input_url VARCHAR(255) NOT NULL,
			name VARCHAR(64) NULL,
			updated_at DATETIME(6) NULL,
			refresh_at DATETIME(6) NULL,
			refresh_attempt_uid CHAR(20) NULL,
			refresh_attempt_at DATETIME(6) NULL,
			refresh_attempt_no INT NOT NULL DEFAULT 0,
			refresh_failing_since DATETIME(6) NULL,
			refresh_last_error VARCHAR(1024) NULL,
			refresh_disabled_until_update DATETIME(6) NULL,
			refresh_disabled_user_friendly_reason VARCHAR(1024) NULL)`,
	}
	for _, q := range stmts {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("seed: %s: %w", firstLine(q), err)
		}
	}
	run, fail, dis := mix(mixRunning, "seq"), mix(mixFailing, "seq"), mix(mixDisabled, "seq")
	const chunk = 500_000
	for lo := int64(1); lo <= rows; lo += chunk {
		hi := min(lo+chunk-1, rows)
		q := fmt.Sprintf(`INSERT INTO %s (id, input_url, name, updated_at, refresh_at,
				refresh_attempt_uid, refresh_attempt_at, refresh_attempt_no,
				refresh_failing_since, refresh_last_error, refresh_disabled_until_update, refresh_disabled_user_friendly_reason)
			SELECT seq, CONCAT('https://example.com/exports/', seq, '.csv'), CONCAT('model ', seq),
			       '2026-01-01', ? + INTERVAL seq SECOND,
			       IF(%[2]s, CONCAT('d1v5bqh6n88c', LPAD(seq %% 100000000, 8, '0')), NULL), IF(%[2]s, '2026-01-01', NULL), IF(%[2]s, 1, 0),
			       IF(%[3]s, '2026-01-01', NULL), IF(%[3]s, 'upstream answered 503', NULL),
			       IF(%[4]s, '2026-01-02', NULL), IF(%[4]s, 'the export was deleted', NULL)
			FROM seq_1_to_%[5]d WHERE seq BETWEEN %[6]d AND %[7]d`, benchTable, run, fail, dis, rows, lo, hi)
		if _, err := s.db.ExecContext(ctx, q, farFuture); err != nil {
			return fmt.Errorf("seed rows %d-%d: %w", lo, hi, err)
		}
	}
	if _, err := mysqlstore.Migrate(ctx, s.db, []string{benchTable}, io.Discard, false); err != nil {
		return fmt.Errorf("seed: migrate: %w", err)
	}
	if _, err := s.db.ExecContext(ctx, "ANALYZE TABLE "+benchTable); err != nil {
		return fmt.Errorf("seed: analyze: %w", err)
	}
	return nil
}

func (s *pgStore) seedLoaded(ctx context.Context, rows int64) error {
	stmts := []string{
		"DROP TABLE IF EXISTS " + benchTable,
		"DROP TABLE IF EXISTS " + pgstore.MigrationsTable,
		// The refresh columns here have migration 0001's types.
		"CREATE TABLE " + benchTable + ` (
			id bigint NOT NULL PRIMARY KEY,
			input_url varchar(255) NOT NULL,
			name varchar(64) NULL,
			updated_at timestamp(6) with time zone NULL,
			refresh_at timestamp(6) with time zone NULL,
			refresh_attempt_uid character(20) NULL,
			refresh_attempt_at timestamp(6) with time zone NULL,
			refresh_attempt_no integer NOT NULL DEFAULT 0,
			refresh_failing_since timestamp(6) with time zone NULL,
			refresh_last_error varchar(1024) NULL,
			refresh_disabled_until_update timestamp(6) with time zone NULL,
			refresh_disabled_user_friendly_reason varchar(1024) NULL)`,
	}
	for _, q := range stmts {
		if _, err := s.pool.Exec(ctx, q); err != nil {
			return fmt.Errorf("seed: %s: %w", firstLine(q), err)
		}
	}
	run, fail, dis := mix(mixRunning, "g"), mix(mixFailing, "g"), mix(mixDisabled, "g")
	when := func(cond, v string) string { return "CASE WHEN " + cond + " THEN " + v + " END" }
	q := `INSERT INTO ` + benchTable + ` (id, input_url, name, updated_at, refresh_at,
			refresh_attempt_uid, refresh_attempt_at, refresh_attempt_no,
			refresh_failing_since, refresh_last_error, refresh_disabled_until_update, refresh_disabled_user_friendly_reason)
		SELECT g, 'https://example.com/exports/' || g || '.csv', 'model ' || g,
		       '2026-01-01', $1::timestamptz + g * interval '1 second',
		       ` + when(run, "'d1v5bqh6n88c' || lpad((g % 100000000)::text, 8, '0')") + `, ` + when(run, "'2026-01-01'::timestamptz") + `,
		       CASE WHEN ` + run + ` THEN 1 ELSE 0 END,
		       ` + when(fail, "'2026-01-01'::timestamptz") + `, ` + when(fail, "'upstream answered 503'") + `,
		       ` + when(dis, "'2026-01-02'::timestamptz") + `, ` + when(dis, "'the export was deleted'") + `
		FROM generate_series(1, $2::bigint) AS g`
	if _, err := s.pool.Exec(ctx, q, farFuture, rows); err != nil {
		return fmt.Errorf("seed rows: %w", err)
	}
	if _, err := pgstore.Migrate(ctx, s.pool, []string{benchTable}, io.Discard, false); err != nil {
		return fmt.Errorf("seed: migrate: %w", err)
	}
	if _, err := s.pool.Exec(ctx, "VACUUM ANALYZE "+benchTable); err != nil {
		return fmt.Errorf("seed: vacuum: %w", err)
	}
	return nil
}

// tableMB returns the table's data and index sizes as the server reports
// them (MariaDB: information_schema's estimates after ANALYZE), -1 when
// unknown.
func (e *env) tableMB(ctx context.Context) (data, index int64) {
	data, index = -1, -1
	switch s := e.st.(type) {
	case *mysqlStore:
		_ = s.db.QueryRowContext(ctx, "SELECT DATA_LENGTH >> 20, INDEX_LENGTH >> 20 FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?",
			benchTable).Scan(&data, &index)
	case *pgStore:
		_ = s.pool.QueryRow(ctx, "SELECT pg_table_size($1::regclass) >> 20, pg_indexes_size($1::regclass) >> 20", pgx.Identifier{benchTable}.Sanitize()).Scan(&data, &index)
	}
	return data, index
}

var pgActual = regexp.MustCompile(`(Index Scan|Index Only Scan|Seq Scan)( using \S+)?[^(]*\(cost=[^)]*\) \(actual time=[^ ]+ rows=(\d+)`)

// claimSQL is the service's claim of the kind's own priority level (the
// only level of the benchmark's rows), written as models/mysqlstore and
// models/pgstore's claimScan write it for a table with migration 0004:
// FORCE INDEX (idx_refresh_priority) on MariaDB, ORDER BY the composite
// index's columns on PostgreSQL. cursor adds the scan's lower bound.
func (e *env) claimSQL(batch int, cursor bool) (string, bool) {
	var quote func(string) string
	switch e.st.(type) {
	case *mysqlStore:
		quote = func(c string) string { return "`" + c + "`" }
	case *pgStore:
		quote = func(c string) string { return `"` + c + `"` }
	default:
		return "", false
	}
	cols := []string{quote("id"), quote(models.ColRRule)}
	for _, c := range models.StateColumns {
		cols = append(cols, quote(c.Name))
	}
	cols = append(cols, quote("input_url"))
	q := "SELECT " + strings.Join(cols, ", ") + " FROM " + quote(benchTable)
	order := quote(models.ColRefreshAt)
	ph := []string{"?", "?"}
	if _, ok := e.st.(*pgStore); ok {
		order = quote(models.ColPriority) + ", " + order
		ph = []string{"$1", "$2"}
	} else {
		q += " FORCE INDEX (`idx_refresh_priority`)"
	}
	q += " WHERE " + quote(models.ColPriority) + " IS NULL AND " + quote(models.ColPriorityOnce) + " IS NULL AND " +
		quote(models.ColRefreshAt) + " <= " + ph[0]
	if cursor {
		q += " AND " + quote(models.ColRefreshAt) + " >= " + ph[1]
	}
	return q + " AND " + quote("id") + " IS NOT NULL ORDER BY " + order + " LIMIT " + strconv.Itoa(batch) + " FOR UPDATE SKIP LOCKED", true
}

// explainClaim prints EXPLAIN of the service's claim (claimSQL), without
// and with the cursor, and returns what the claim read when run once, in
// a transaction rolled back: MariaDB ANALYZE's r_rows, PostgreSQL EXPLAIN
// ANALYZE's actual rows of the scan and the buffers it touched. Neither
// may grow with the table.
func (e *env) explainClaim(ctx context.Context, batch int) (plan, examined string, err error) {
	now := time.Now().UTC()
	var out strings.Builder
	for _, cursor := range []bool{false, true} {
		q, ok := e.claimSQL(batch, cursor)
		if !ok {
			own, ok := e.st.(ownExplainer)
			if !ok {
				return "", "", fmt.Errorf("no claim to explain for --store %s", e.o.store)
			}
			ex, err := own.explain(ctx, batch)
			return ex, "n/a", err
		}
		args := []any{now}
		label := "claim (the kind's level)"
		if cursor {
			args, label = append(args, now.Add(-time.Minute)), "claim from cursor"
		}
		fmt.Fprintf(&out, "EXPLAIN %s\n  %s\n", label, q)
		lines, err := e.queryLines(ctx, "EXPLAIN "+q, args)
		if err != nil {
			return "", "", fmt.Errorf("explain the claim: %w", err)
		}
		for _, l := range lines {
			fmt.Fprintf(&out, "  -> %s\n", l)
		}
	}
	q, _ := e.claimSQL(batch, false)
	switch e.st.(type) {
	case *mysqlStore:
		lines, err := e.queryLines(ctx, "ANALYZE "+q, []any{now})
		if err != nil {
			return "", "", fmt.Errorf("analyze the claim: %w", err)
		}
		var keep []string
		for _, f := range strings.Fields(strings.Join(lines, " ")) {
			if strings.HasPrefix(f, "type=") || strings.HasPrefix(f, "key=") || strings.HasPrefix(f, "r_rows=") {
				keep = append(keep, f)
			}
		}
		examined = strings.Join(keep, " ")
	case *pgStore:
		lines, err := e.queryLines(ctx, "EXPLAIN (ANALYZE, BUFFERS) "+q, []any{now})
		if err != nil {
			return "", "", fmt.Errorf("explain analyze the claim: %w", err)
		}
		var keep []string
		scan := false // within the scan's node
		for _, line := range lines {
			line = strings.TrimSpace(line)
			if m := pgActual.FindStringSubmatch(line); m != nil {
				keep, scan = append(keep, m[1]+m[2]+": actual rows="+m[3]), true
				continue
			}
			if scan && strings.HasPrefix(line, "Buffers:") {
				keep, scan = append(keep, line), false
			}
			scan = scan && !strings.HasPrefix(line, "->")
		}
		examined = strings.Join(keep, ", ")
	}
	return out.String(), examined, nil
}

// queryLines runs q in a transaction that it rolls back (the claim locks
// what it reads) and returns each row as one line: PostgreSQL's EXPLAIN
// text as is, MariaDB's rows as name=value of their non-NULL columns.
func (e *env) queryLines(ctx context.Context, q string, args []any) ([]string, error) {
	var out []string
	switch s := e.st.(type) {
	case *mysqlStore:
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return nil, err
		}
		defer func() { _ = tx.Rollback() }()
		rows, err := tx.QueryContext(ctx, q, args...)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		names, _ := rows.Columns()
		for rows.Next() {
			vals := make([]sql.NullString, len(names))
			ptrs := make([]any, len(names))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				return nil, err
			}
			var parts []string
			for i, n := range names {
				if n != "id" && n != "select_type" && vals[i].Valid {
					parts = append(parts, n+"="+vals[i].String)
				}
			}
			out = append(out, strings.Join(parts, " "))
		}
		return out, rows.Err()
	case *pgStore:
		tx, err := s.pool.Begin(ctx)
		if err != nil {
			return nil, err
		}
		defer func() { _ = tx.Rollback(ctx) }()
		rows, err := tx.Query(ctx, q, args...)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				return nil, err
			}
			out = append(out, line)
		}
		return out, rows.Err()
	}
	return nil, nil
}

// pageReads returns, for --scaling, the database's count of pages read
// from storage rather than found in its buffer pool: MariaDB's
// Innodb_buffer_pool_reads (the whole server's, other users' included),
// PostgreSQL's blocks of the benchmark's table and its indexes not found
// in shared_buffers (pg_statio_user_tables; they may still come from the
// OS's page cache). -1 when unknown or not --scaling.
func (e *env) pageReads(ctx context.Context) int64 {
	n := int64(-1)
	if !e.o.scaling {
		return n
	}
	switch s := e.st.(type) {
	case *mysqlStore:
		var name string
		if s.db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_reads'").Scan(&name, &n) != nil {
			return -1
		}
	case *pgStore:
		// A backend reports its reads when it ends, or up to 10 s after a
		// transaction (PGSTAT_IDLE_INTERVAL): the bench's own connections
		// end here, so that the plan's UPDATE and the VACUUM before it
		// (scans of the whole table) are counted before the run, not in it.
		// Then until the count stays the same for half a second (at most 5 s).
		s.pool.Reset()
		for i := range 10 {
			time.Sleep(500 * time.Millisecond)
			last := n
			if s.pool.QueryRow(ctx, "SELECT COALESCE(heap_blks_read, 0) + COALESCE(idx_blks_read, 0) FROM pg_statio_user_tables WHERE relname = $1",
				benchTable).Scan(&n) != nil {
				return -1
			}
			s.pool.Reset()
			if i > 0 && n == last {
				break
			}
		}
		e.pgReadsBy = pgReadsByRelation(ctx, s)
	}
	return n
}

// pgReadsByRelation returns the blocks read from outside shared_buffers
// of the table's heap and of each of its indexes.
func pgReadsByRelation(ctx context.Context, s *pgStore) map[string]int64 {
	out := map[string]int64{}
	rows, err := s.pool.Query(ctx, `SELECT 'heap', COALESCE(heap_blks_read, 0) FROM pg_statio_user_tables WHERE relname = $1
		UNION ALL SELECT indexrelname, COALESCE(idx_blks_read, 0) FROM pg_statio_user_indexes WHERE relname = $1`, benchTable)
	if err != nil {
		return out
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var n int64
		if rows.Scan(&name, &n) == nil {
			out[name] = n
		}
	}
	return out
}

// pageReadsSince returns the pages read since pageReads returned start;
// call it once the child has exited (PostgreSQL's backends report their
// last reads when they end; pageReads waits for that).
func (e *env) pageReadsSince(ctx context.Context, start int64) int64 {
	if start < 0 {
		return -1
	}
	before := e.pgReadsBy
	end := e.pageReads(ctx)
	if end < 0 {
		return -1
	}
	if after := e.pgReadsBy; before != nil && after != nil {
		var parts []string
		for name, n := range after {
			if d := n - before[name]; d > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", strings.TrimPrefix(name, benchTable+"_"), d))
			}
		}
		slices.Sort(parts)
		fmt.Printf("    blocks read by relation: %s\n", strings.Join(parts, ", "))
	}
	return end - start
}

// readCall is one read of the gauges, the dashboard or the API, timed on
// the benchmark's table.
type readCall struct {
	name, who string
	first     time.Duration // the first call (cold caches)
	median    time.Duration // median of the next readRepeats calls
	n         int           // rows it returned (lists), or the count it gave
	note      string        // "estimated total" when Counts estimated it
}

const readRepeats = 5

// timeReads opens the service's store, as `refresher run` opens it for the
// gauges and the operator's server, and times each read call they make on
// a table with due rows due (the plan just applied) and the seed's state
// mix.
func (e *env) timeReads(ctx context.Context, due int64) ([]readCall, error) {
	store, err := e.st.openService(ctx)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	t := models.Table{Name: benchTable, Key: "id", Payload: []string{"input_url"}}
	now := time.Now().UTC()
	lq := func(state models.RowState) models.ListQuery {
		return models.ListQuery{State: state, Now: now, LateAfter: models.DefaultLateAfter, Limit: 50}
	}
	list := func(q models.ListQuery) func() (int, string, error) {
		return func() (int, string, error) {
			p, err := store.List(ctx, t, q)
			return len(p.Rows), "", err
		}
	}
	middle := strconv.FormatInt(e.rows/2, 10)
	calls := []struct {
		name, who string
		fn        func() (n int, note string, err error)
	}{
		{"Counts", "gauges, overview, /api/v1/kinds", func() (int, string, error) {
			c, err := store.Counts(ctx, t, now, models.DefaultLateAfter)
			var est []string
			if c.TotalEstimated {
				est = append(est, "total")
			}
			byState := map[models.RowState]int64{models.StateDue: c.Due, models.StateLate: c.Late, models.StateRunning: c.Running,
				models.StateFailing: c.Failing, models.StateDisabled: c.Disabled}
			for _, st := range c.Estimated {
				est = append(est, fmt.Sprintf("%s %d", st, byState[st]))
			}
			if len(est) > 0 {
				return int(c.Total), "estimated: " + strings.Join(est, ", "), err
			}
			return int(c.Total), "", err
		}},
		{"Backlog", "gauges, /api/v1/kinds", func() (int, string, error) {
			b, err := store.Backlog(ctx, t, now, nil)
			n := int64(0)
			for _, l := range b {
				n += l.Due
			}
			return int(n), "", err
		}},
		{"List all", "models?state=all", list(lq(models.StateAll))},
		{"List all, middle page", "models?state=all&after=N/2", list(func() models.ListQuery {
			q := lq(models.StateAll)
			q.After = middle
			return q
		}())},
		{"List due", "models?state=due", list(lq(models.StateDue))},
		{"List late", "models?state=late", list(lq(models.StateLate))},
		{"List running", "models?state=running", list(lq(models.StateRunning))},
		{"List failing", "models?state=failing", list(lq(models.StateFailing))},
		{"List disabled", "models?state=disabled", list(lq(models.StateDisabled))},
		{"List disabled, middle page", "models?state=disabled&after=N/2", list(func() models.ListQuery {
			q := lq(models.StateDisabled)
			q.After = middle
			return q
		}())},
		{"Search, no match", "models?q=nomatch", list(func() models.ListQuery {
			q := lq(models.StateAll)
			q.Search = "nomatch"
			return q
		}())},
		{"Search failing", "models?state=failing&q=503", list(func() models.ListQuery {
			q := lq(models.StateFailing)
			q.Search = "503"
			return q
		}())},
		{"Get", "models/{uid}", func() (int, string, error) {
			_, ok, err := store.Get(ctx, t, middle)
			if !ok && err == nil {
				err = fmt.Errorf("row %s not found", middle)
			}
			return 1, "", err
		}},
	}
	var out []readCall
	for _, c := range calls {
		rc := readCall{name: c.name, who: c.who}
		var times []time.Duration
		for i := range readRepeats + 1 {
			start := time.Now()
			n, note, err := c.fn()
			d := time.Since(start)
			if err != nil {
				return nil, fmt.Errorf("read call %s: %w", c.name, err)
			}
			if i == 0 {
				rc.first, rc.n, rc.note = d, n, note
				continue
			}
			times = append(times, d)
		}
		slices.Sort(times)
		rc.median = times[len(times)/2]
		out = append(out, rc)
	}
	return out, nil
}

func printReads(w io.Writer, reads []readCall) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "read call\tused by\tfirst\tmedian of %d\trows/count\t\t\n", readRepeats)
	for _, r := range reads {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s%s\t%d\t%s\t\n", r.name, r.who, readDur(r.first), readDur(r.median), overBudget(r.median), r.n, r.note)
	}
	tw.Flush()
}

// readDur shows a read call's time to a tenth of a millisecond below 10 ms.
func readDur(d time.Duration) string {
	if d < 10*time.Millisecond {
		return fmt.Sprintf("%.1fms", float64(d.Microseconds())/1000)
	}
	return round(d)
}

func overBudget(d time.Duration) string {
	if d > readBudget {
		return " OVER"
	}
	return ""
}

// loadAvg is the machine's 1-minute load average.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

var (
	mysqlPlanRow = regexp.MustCompile(`type=(\S+)( possible_keys=\S+)? key=(\S+)`)
	pgScan       = regexp.MustCompile(`(Index Only Scan|Index Scan|Bitmap Heap Scan|Seq Scan)( using (\S+))?`)
)

// explainSummary names the access path of the first EXPLAIN (the claim
// without cursor) in a few words.
func explainSummary(ex string) string {
	first, _, _ := strings.Cut(ex, "EXPLAIN claim from cursor")
	if m := mysqlPlanRow.FindStringSubmatch(first); m != nil {
		s := "type=" + m[1] + " key=" + m[3]
		if strings.Contains(first, "filesort") {
			s += " + filesort"
		}
		return s
	}
	if m := pgScan.FindStringSubmatch(first); m != nil {
		s := m[1]
		if m[3] != "" {
			s += " on " + m[3]
		}
		if strings.Contains(first, "Sort") {
			s += " + Sort"
		}
		return s
	}
	return "?"
}

func printScalingTable(w io.Writer, store string, impls []string, table []scaleRow) {
	if len(table) == 0 {
		return
	}
	base := table[0]
	fmt.Fprintf(w, "SCALING (--store %s): the same due models in tables of %s rows (full cycle); cost ratio = cost per due model at %d rows / at N (target >= 0.80)\n",
		store, sizesText(table), base.rows)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "implementation\trows\tdue\twall\twall per due model\tratio\tprocess CPU/model\tratio\t"+dbName(store)+" CPU/model\tratio\tpage reads/model\tpeak RSS\tload\t")
	for _, impl := range impls {
		b := base.res[impl]
		for _, r := range table {
			x := r.res[impl]
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%.1f µs\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s-%s\t\n", impl, r.rows, x.n, round(x.wall),
				float64(x.wall.Microseconds())/float64(x.n), ratio(b.wall.Seconds()/float64(b.n), x.wall.Seconds()/float64(x.n)),
				perDue(x.cpu, x.n), ratio(b.cpu/float64(b.n), x.cpu/float64(x.n)),
				perDue(x.dbCPU, x.n), ratio(b.dbCPU/float64(b.n), x.dbCPU/float64(x.n)),
				perModel(x.pageReads, x.n), mb(x.rssKB), r.loadStart, r.loadEnd)
		}
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "rows\tseed\ttable\tindexes\tclaim's plan (EXPLAIN)\tclaim run once\t")
	for _, r := range table {
		fmt.Fprintf(tw, "%d\t%s\t%d MB\t%d MB\t%s\t%s\t\n", r.rows, round(r.seed), r.dataMB, r.indexMB, explainSummary(r.explain), r.examined)
	}
	tw.Flush()
	fmt.Fprintln(w)
	over := printReadTable(w, table, "", func(r scaleRow) []readCall { return r.reads })
	over += printReadTable(w, table, ", after settle", func(r scaleRow) []readCall { return r.settled })
	fmt.Fprintf(w, "read calls over the %s budget: %d\n", readBudget, over)
	fmt.Fprintln(w, "target: cost per due model at the largest size >= 0.80x of the smallest's; peak RSS flat; claim an index range scan; every read call under 200 ms.")
}

// printReadTable prints the read calls of each size side by side and
// returns how many are over the budget.
func printReadTable(w io.Writer, table []scaleRow, label string, reads func(scaleRow) []readCall) int {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "read call (median of " + strconv.Itoa(readRepeats) + "; first call" + label + ")\t"
	for _, r := range table {
		head += strconv.FormatInt(r.rows, 10) + " rows\t"
	}
	fmt.Fprintln(tw, head)
	over := 0
	for i, c := range reads(table[0]) {
		line := c.name + "\t"
		for _, r := range table {
			if rs := reads(r); i < len(rs) {
				x := rs[i]
				line += readDur(x.median) + overBudget(x.median) + "; " + readDur(x.first)
				if x.note != "" {
					line += " (" + x.note + ")"
				}
				line += "\t"
				if x.median > readBudget {
					over++
				}
			}
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
	fmt.Fprintln(w)
	return over
}

// perModel is a count per due model, "n/a" when unknown.
func perModel(n, models int64) string {
	if n < 0 || models <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", float64(n)/float64(models))
}

func sizesText(table []scaleRow) string {
	var s []string
	for _, r := range table {
		s = append(s, strconv.FormatInt(r.rows, 10))
	}
	return strings.Join(s, ", ")
}
