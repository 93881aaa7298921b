package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/refresher/refresher/internal/payload"
	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
)

// Store runs the service's queries on one PostgreSQL database. It is safe
// for concurrent use. The pool should come from Open (TimeZone UTC).
type Store struct {
	pool *pgxpool.Pool

	mu    sync.Mutex
	metas map[string]tableMeta // by table name, loaded once per migrated table
	// compiled caches compile's result by Table.CacheKey once the
	// metadata is cached: each statement of a batch compiles its table.
	compiled map[string]compiled
	// exactTotalUpTo is models.ExactTotalUpTo, exactStateUpTo
	// models.ExactStateUpTo (lowered by tests).
	exactTotalUpTo, exactStateUpTo int64
	// textArrays: the pool's exec mode cannot encode array (see
	// encodable).
	textArrays bool
}

// New returns a Store on pool, which should come from Open.
func New(pool *pgxpool.Pool) *Store {
	return &Store{pool: pool, metas: map[string]tableMeta{}, compiled: map[string]compiled{}, exactTotalUpTo: models.ExactTotalUpTo, exactStateUpTo: models.ExactStateUpTo,
		textArrays: textArrays(pool.Config().ConnConfig.DefaultQueryExecMode)}
}

var (
	_ models.Store = (*Store)(nil)
	_ models.Tx    = (*Tx)(nil)
)

// Pool returns the pool the Store uses.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Ping checks that the server answers.
func (s *Store) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }

// Close closes the connections.
func (s *Store) Close() error { s.pool.Close(); return nil }

// Migrate runs Migrate on the Store's database.
func (s *Store) Migrate(ctx context.Context, tables []string, w io.Writer, dryRun bool) (models.MigrateReport, error) {
	return Migrate(ctx, s.pool, tables, w, dryRun)
}

// Tx is a transaction of the Store; see Store.Tx.
type Tx struct {
	s  *Store
	tx pgx.Tx
}

// Tx runs fn in a READ COMMITTED transaction (PostgreSQL's default, asked
// for explicitly so a server default of REPEATABLE READ cannot make
// concurrent claims fail with serialization errors) and commits when fn
// returns nil; otherwise (or when fn panics) it rolls back and returns fn's
// error.
func (s *Store) Tx(ctx context.Context, fn func(tx models.Tx) error) (err error) {
	pgTx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	done := false
	defer func() {
		if !done {
			_ = pgTx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	if err := fn(&Tx{s: s, tx: pgTx}); err != nil {
		done = true
		err = withSchemaHint(err)
		if rbErr := pgTx.Rollback(context.WithoutCancel(ctx)); rbErr != nil && !errors.Is(rbErr, pgx.ErrTxClosed) {
			return errors.Join(err, fmt.Errorf("roll back: %w", rbErr))
		}
		return err
	}
	done = true
	if err := pgTx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", withSchemaHint(err))
	}
	return nil
}

// Check verifies that t's table exists with its key column (which must have
// a single-column unique index or be the primary key), its payload columns
// and all 12 refresh columns. The error names everything missing and how to
// fix it.
func (s *Store) Check(ctx context.Context, t models.Table) error {
	q, err := compileTable(t, tableMeta{})
	if err != nil {
		return err
	}
	meta, err := loadMeta(ctx, s.pool, t.Name)
	if err != nil {
		return fmt.Errorf("check table %s: %w", q.table, err)
	}
	if !meta.exists {
		var db, schema string
		_ = s.pool.QueryRow(ctx, "SELECT current_database(), current_schema()").Scan(&db, &schema)
		return tableErrorf("table %s does not exist in schema %q of database %q: create it in the application, or fix `table:` of the kind in the config", q.table, schema, db)
	}
	var problems []error
	has := func(c string) bool { _, ok := meta.cols[c]; return ok }
	for _, p := range models.CheckColumns(t, q.table, has, meta.uniqueOn, "CREATE UNIQUE INDEX ON "+q.table+" ("+q.key+")") {
		problems = append(problems, tableErrorf("%s", p))
	}
	return errors.Join(problems...)
}

// ClaimDue locks and returns up to limit rows whose refresh_at is due
// (refresh_at <= now), by priority then earliest first
// (models.ClaimByPriority; by refresh_at alone while the table lacks
// migration 0004), skipping rows that another transaction holds (FOR
// UPDATE SKIP LOCKED), so that several dispatchers share the work without
// waiting for each other or claiming a row twice. The locks last until the
// transaction ends. from is a cursor (see models.Tx). Rows whose key is
// NULL are never returned. Each scan walks one index range and stops after
// limit rows.
func (tx *Tx) ClaimDue(ctx context.Context, t models.Table, now time.Time, from models.Cursor, limit int) ([]models.Row, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("claim due rows of %s: limit %d must be positive", t.Name, limit)
	}
	q, err := tx.s.compile(ctx, t)
	if err != nil {
		return nil, err
	}
	var rows []models.Row
	if !q.meta.prioritized() {
		if from.UrgentOnly {
			return nil, nil // no priorities: nothing is more urgent than the kind
		}
		rows, err = tx.claimScan(ctx, q, "", "", nil, now, from.At, limit)
		for i := range rows {
			rows[i].Priority = models.Priority{Level: t.Priority}
		}
	} else {
		// The kind's scan rides with the first levels' lookup (see
		// kindAhead) unless the claim is of urgent rows only.
		var ahead *kindAhead
		kind := models.Priority{Level: t.Priority, Source: models.PriorityKind}
		rows, err = models.ClaimByPriority(t.Priority, from, limit, models.PriorityScans{
			Probe: func(col string, after int, first bool) (int, bool, error) { return tx.probe(ctx, q, col, after, first) },
			First: func() (models.FirstLevels, error) {
				if from.UrgentOnly {
					return tx.firstLevels(ctx, q)
				}
				ahead = &kindAhead{limit: limit}
				if from.Scan == kind {
					ahead.from = from.At
				}
				return tx.firstLevelsAndKind(ctx, q, t.Priority, now, ahead)
			},
			Claim: func(s models.Priority, start time.Time, n int) ([]models.Row, error) {
				if rows, ok := ahead.take(s, start, n); ok {
					return rows, nil
				}
				lead := models.ColPriority
				if s.Source == models.PriorityOnce {
					lead = models.ColPriorityOnce
				}
				filter, args := s.Filter(doubleQuote, "$1", true)
				return tx.claimScan(ctx, q, lead, filter, args, now, start, n)
			},
			ClearOnce: func(keys []string) error { return tx.setOnce(ctx, q, keys, nil) },
		})
	}
	if err != nil {
		return nil, fmt.Errorf("claim due rows of %s: %w", q.table, err)
	}
	return rows, nil
}

// claimScan is one range scan of the claim: the due rows matching filter
// (conditions on $1..$len(args), followed by " AND ", or ""), from
// refresh_at >= from when from is not zero.
func (tx *Tx) claimScan(ctx context.Context, q compiled, lead, filter string, args []any, now, from time.Time, limit int) ([]models.Row, error) {
	query, args := claimQuery(q, lead, filter, args, now, from, limit)
	rows, err := tx.query(ctx, q, query, args, limit, true)
	models.MarkClaimed(rows)
	return rows, err
}

// claimQuery is the statement of claimScan and its arguments.
func claimQuery(q compiled, lead, filter string, args []any, now, from time.Time, limit int) (string, []any) {
	var b strings.Builder
	b.WriteString(q.selectClaim)
	at := dueAt(lead == models.ColPriorityOnce)
	args = append(args, now.UTC())
	fmt.Fprintf(&b, ` WHERE %s%s <= $%d`, filter, at, len(args))
	if !from.IsZero() {
		args = append(args, from.UTC())
		fmt.Fprintf(&b, ` AND %s >= $%d`, at, len(args))
	}
	fmt.Fprintf(&b, ` AND %s IS NOT NULL ORDER BY %s%s LIMIT %d FOR UPDATE SKIP LOCKED`, q.key, leadOrder(lead), at, limit)
	return b.String(), args
}

// dueAt is the refresh_at term of a scan's conditions and order; once
// says the scan is of a one-shot level (refresh_priority_once = level).
// That column's index has no refresh_at, and when refresh_at can serve as
// an index condition PostgreSQL may walk the refresh_at index instead and
// filter on the level: it does when its statistics say little is due (a
// backlog that built up since the last ANALYZE, while the dead entries of
// the rows a drain moved hide the index's actual first values from it),
// and then reads every due row of the backlog to find the few triggered
// ones, in every claim and urgent probe while a triggered row waits (on
// 200,000 due rows, 5 million index entries read in a drain instead of
// 0.4 million). Adding a zero interval hides refresh_at from its index, so
// a one-shot scan is its own index's range: the rows triggered at that
// level and not yet claimed, a few, sorted. MariaDB forces the index
// instead (FORCE INDEX).
func dueAt(once bool) string {
	if once {
		return `("refresh_at" + interval '0')`
	}
	return `"refresh_at"`
}

// claimSettings are terms of the first statement of a claim in a table
// with the priority columns (firstLevels): two settings until the
// transaction ends (SET LOCAL, in the same round trip).
//
// enable_sort off: each scan of the claim is ordered by its composite
// index's columns (see leadOrder), which that index returns in order, so
// the claim reads its LIMIT and stops. With a sort allowed, PostgreSQL may
// instead walk the refresh_at index over every due row, filter them on the
// level and sort them all for the LIMIT: it does when its statistics say
// almost nothing is due (they were gathered before the backlog came due,
// and the refresh_at range asked lies past their histogram), and then
// every claim of a drain reads and sorts the whole rest of the backlog
// (100,000 due rows: 3 million index entries read and 70 ms per claim
// instead of 0.1 million and a few ms). A sort is only made costly, not
// forbidden: a table without the index still sorts.
//
// plan_cache_mode force_generic_plan: the claim's statements (its scans
// and probes, the Save of the started attempts) run on the plan their
// prepared statement keeps, not one planned again for each batch's
// values. Planned for a batch's 1000 keys, the Save joined them to the
// whole table by hash (a sequential scan of it, 150-450 ms on 100,000
// rows) in the first executions on each connection, until PostgreSQL
// settled on the generic plan (an index lookup per key, a few ms); the
// scans' plans, with sorts off, walk their index whatever the values; and
// no claim pays its planning (0.1-0.5 ms, and looking up the actual
// bounds of the refresh_at index through the dead entries a drain leaves).
const claimSettings = `set_config('enable_sort', 'off', true), set_config('plan_cache_mode', 'force_generic_plan', true)`

// leadOrder is the ORDER BY term of a scan's leading index column ("" for
// none). PostgreSQL has no index hint: with "refresh_priority IS NULL"
// and ORDER BY refresh_at alone it may walk the refresh_at index and filter
// out the rows of other priorities, however many; ordered by the
// composite index's columns it walks that index's range.
func leadOrder(lead string) string {
	if lead == "" {
		return ""
	}
	return `"` + lead + `", `
}

// probe returns the smallest value of the priority column col above after
// (any value when first): one lookup in its index.
func (tx *Tx) probe(ctx context.Context, q compiled, col string, after int, first bool) (level int, ok bool, err error) {
	return probeLevel(ctx, tx.tx, q, col, after, first)
}

// firstLevels asks the smallest value of both priority columns in one
// statement (models.FirstLevelsQuery), and sets claimSettings for the rest
// of the claim's transaction.
func (tx *Tx) firstLevels(ctx context.Context, q compiled) (models.FirstLevels, error) {
	return scanFirstLevels(tx.tx.QueryRow(ctx, q.firstLevels))
}

// scanFirstLevels reads the answer of q.firstLevels.
func scanFirstLevels(row pgx.Row) (models.FirstLevels, error) {
	var once, own pgtype.Int8
	if err := row.Scan(&once, &own, nil, nil); err != nil {
		return models.FirstLevels{}, fmt.Errorf("find the first priority levels: %w", err)
	}
	return models.FirstLevels{Once: int(once.Int64), OnceOK: once.Valid, Row: int(own.Int64), RowOK: own.Valid}, nil
}

// kindAhead is the scan of the kind's level sent with the first levels'
// lookup, in one round trip (firstLevelsAndKind): most claims are of the
// kind's level alone, and the lookup only tells that they are. The scan is
// guarded in SQL by the condition under which models.ClaimByPriority
// starts with it: no row holds a one-shot priority or a priority of its
// own at the kind's level or below (more urgent; see models.Priority). It
// claims nothing otherwise, and the claim then scans as before.
//
// The two statements read two snapshots (READ COMMITTED): a row triggered
// or claimed in between can make the lookup and the guard disagree. The
// rows claimed ahead are used only when the claim asks the kind's scan
// with the same start and limit (take) and the guard let rows through;
// otherwise the claim scans again, and finds the rows it locked ahead
// among the others (SKIP LOCKED skips only other transactions' locks).
type kindAhead struct {
	from  time.Time // the scan's start, as the cursor gives it
	limit int
	rows  []models.Row
	used  bool
}

// take returns the rows claimed ahead when scan s from start for n rows is
// the one claimed ahead and claimed any, once.
func (a *kindAhead) take(s models.Priority, start time.Time, n int) ([]models.Row, bool) {
	if a == nil || a.used || s.Source != models.PriorityKind || !start.Equal(a.from) || n != a.limit || len(a.rows) == 0 {
		return nil, false
	}
	a.used = true
	return a.rows, true
}

// firstLevelsAndKind is firstLevels with the kind's guarded scan (see
// kindAhead) in the same round trip: a pipeline of the two statements,
// the lookup (and its claimSettings) first.
func (tx *Tx) firstLevelsAndKind(ctx context.Context, q compiled, level int, now time.Time, a *kindAhead) (models.FirstLevels, error) {
	kind, _ := models.Priority{Level: level, Source: models.PriorityKind}.Filter(doubleQuote, "", true)
	query, args := claimQuery(q, models.ColPriority, q.kindGuard+kind, []any{level}, now, a.from, a.limit)
	var batch pgx.Batch
	batch.Queue(q.firstLevels)
	batch.Queue(query, args...)
	br := tx.tx.SendBatch(ctx, &batch)
	first, err := scanFirstLevels(br.QueryRow())
	if err == nil {
		var rs pgx.Rows
		if rs, err = br.Query(); err == nil {
			a.rows, err = readRows(rs, q, a.limit, true)
			rs.Close()
			models.MarkClaimed(a.rows)
		}
		if len(a.rows) == 0 {
			models.ReleaseRows(a.rows) // for the claim's scans
			a.rows = nil
		}
	}
	if cerr := br.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("claim due rows: %w", cerr)
	}
	return first, err
}

func probeLevel(ctx context.Context, qr querier, q compiled, col string, after int, first bool) (level int, ok bool, err error) {
	query := `SELECT "` + col + `" FROM ` + q.table + ` WHERE "` + col + `" IS NOT NULL ORDER BY "` + col + `" LIMIT 1`
	var args []any
	if !first {
		query = `SELECT "` + col + `" FROM ` + q.table + ` WHERE "` + col + `" > $1 ORDER BY "` + col + `" LIMIT 1`
		args = []any{after}
	}
	err = qr.QueryRow(ctx, query, args...).Scan(&level)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("find the next %s: %w", col, err)
	}
	return level, true, nil
}

// UrgentDue reports whether a row more urgent than the kind's is due at
// now (models.Store), with a few index lookups and no transaction.
func (s *Store) UrgentDue(ctx context.Context, t models.Table, now time.Time) (bool, error) {
	q, err := s.compile(ctx, t)
	if err != nil {
		return false, err
	}
	if !q.meta.prioritized() {
		return false, nil
	}
	due, err := models.AnyUrgentDue(t.Priority,
		func(col string, after int, first bool) (int, bool, error) {
			return probeLevel(ctx, s.pool, q, col, after, first)
		},
		func(sc models.Priority) (bool, error) {
			filter, args := sc.Filter(doubleQuote, "$1", false)
			var one int
			err := s.pool.QueryRow(ctx, "SELECT 1 FROM "+q.table+" WHERE "+filter+dueAt(sc.Source == models.PriorityOnce)+" <= $2 LIMIT 1",
				append(args, now.UTC())...).Scan(&one)
			if errors.Is(err, pgx.ErrNoRows) {
				return false, nil
			}
			return err == nil, err
		})
	if err != nil {
		return false, fmt.Errorf("look for urgent due rows of %s: %w", q.table, err)
	}
	return due, nil
}

// Backlog counts the due rows of t by priority level (models.Inspector),
// each level a range count of its index.
func (s *Store) Backlog(ctx context.Context, t models.Table, now time.Time, knownDue *int64) ([]models.LevelCount, error) {
	q, err := s.compile(ctx, t)
	if err != nil {
		return nil, err
	}
	out, err := models.CountByPriority(t.Priority, models.LevelCounts{
		KnownDue:    knownDue,
		Prioritized: q.meta.prioritized(),
		Quote:       doubleQuote,
		Placeholder: "$1",
		Probe: func(col string, after int, first bool) (int, bool, error) {
			return probeLevel(ctx, s.pool, q, col, after, first)
		},
		Count: func(sc models.Priority, filter string, args []any) (n int64, err error) {
			args = append(args, now.UTC())
			err = s.pool.QueryRow(ctx, "SELECT COUNT(*) FROM "+q.table+" WHERE "+filter+dueAt(sc.Source == models.PriorityOnce)+" <= $"+strconv.Itoa(len(args)), args...).Scan(&n)
			return n, err
		},
	})
	if err != nil {
		return nil, fmt.Errorf("count the backlog of %s by priority: %w", q.table, err)
	}
	return out, nil
}

// AlertsByLevel returns the oldest due refresh_at and the highest attempt
// number of each priority level of t (models.Inspector): per level, the
// first due entry of its range of the (refresh_priority, refresh_at) index
// and the last of its range of the (refresh_priority, refresh_attempt_no)
// index, each ORDER BY the index's columns with LIMIT 1 so that the
// planner walks that index (see leadOrder), backwards for the highest. A table without migration
// 0004 has one level, the kind's: Counts' figures; without 0005 the levels
// report no attempts.
func (s *Store) AlertsByLevel(ctx context.Context, t models.Table, now time.Time) ([]models.LevelAlert, error) {
	q, err := s.compile(ctx, t)
	if err != nil {
		return nil, err
	}
	// The leading column in the ORDER BY, in the direction of the rest:
	// refresh_priority IS NULL is no constant to the planner, so only a
	// walk of the index in one direction gives the kind's level in order.
	lead := func(sc models.Priority, dir string) string {
		col := models.ColPriority
		if sc.Source == models.PriorityOnce {
			col = models.ColPriorityOnce
		}
		return `"` + col + `"` + dir + ", "
	}
	attempts := q.meta.priorityAttempt()
	out, err := models.AlertsByPriority(t.Priority, models.LevelScans{
		Prioritized:   q.meta.prioritized(),
		Unprioritized: func() (models.Counts, error) { return s.Counts(ctx, t, now, 0) },
		Probe: func(col string, after int, first bool) (int, bool, error) {
			return probeLevel(ctx, s.pool, q, col, after, first)
		},
		Oldest: func(sc models.Priority) (time.Time, bool, error) {
			filter, args := sc.Filter(doubleQuote, "$1", false)
			args = append(args, now.UTC())
			var at time.Time
			due := dueAt(sc.Source == models.PriorityOnce)
			err := s.pool.QueryRow(ctx, "SELECT "+`"refresh_at" FROM `+q.table+" WHERE "+filter+due+" <= $"+strconv.Itoa(len(args))+
				" ORDER BY "+lead(sc, "")+due+" LIMIT 1", args...).Scan(&at)
			if errors.Is(err, pgx.ErrNoRows) {
				return time.Time{}, false, nil
			}
			return at.UTC(), err == nil, err
		},
		MaxAttempt: func(sc models.Priority) (int, error) {
			if !attempts && sc.Source != models.PriorityOnce {
				return 0, nil
			}
			filter, args := sc.Filter(doubleQuote, "$1", false)
			// A one-shot level's index has no refresh_attempt_no: as in
			// dueAt, the term is hidden from refresh_attempt_no's own
			// index, which the planner could walk from the highest
			// attempt down, filtering every row on the level.
			no := `"refresh_attempt_no"`
			if sc.Source == models.PriorityOnce {
				no = `("refresh_attempt_no" + 0)`
			}
			var n *int
			err := s.pool.QueryRow(ctx, "SELECT "+no+" FROM "+q.table+" WHERE "+filter+no+" IS NOT NULL"+
				" ORDER BY "+lead(sc, " DESC")+no+" DESC LIMIT 1", args...).Scan(&n)
			if errors.Is(err, pgx.ErrNoRows) || n == nil {
				return 0, nil
			}
			return *n, err
		},
	})
	if err != nil {
		return nil, fmt.Errorf("read the alerts of %s by priority: %w", q.table, err)
	}
	return out, nil
}

// SetPriorityOnce sets refresh_priority_once of the rows with these keys
// (as the database prints them) to level, or NULL when level is nil.
func (tx *Tx) SetPriorityOnce(ctx context.Context, t models.Table, keys []string, level *int) error {
	q, err := tx.s.compile(ctx, t)
	if err != nil {
		return err
	}
	if err := tx.setOnce(ctx, q, keys, level); err != nil {
		return fmt.Errorf("set %s of %s: %w", models.ColPriorityOnce, q.table, err)
	}
	return nil
}

func (tx *Tx) setOnce(ctx context.Context, q compiled, keys []string, level *int) error {
	keys = q.keyType.filter(models.DistinctKeys(keys))
	if len(keys) == 0 {
		return nil
	}
	_, err := tx.tx.Exec(ctx, `UPDATE `+q.table+` SET "refresh_priority_once" = $2 WHERE `+q.keyType.match(q.key, "$1"), keys, level)
	return err
}

// LockByKeys locks (FOR UPDATE, waiting for other transactions: a result
// must be applied, not skipped) and returns the rows with the given keys,
// by the key as PostgreSQL prints it, without their Payload. Keys are
// compared as the key column's type (key = ANY($1::type[]), which uses its
// index); keys that cannot be of that type, like keys naming no row, are
// absent from the map. Rows are locked in key order, one order for every
// transaction, so two pollers whose batches overlap wait for each other
// instead of deadlocking.
func (tx *Tx) LockByKeys(ctx context.Context, t models.Table, keys []string) (map[string]models.Row, error) {
	q, err := tx.s.compile(ctx, t)
	if err != nil {
		return nil, err
	}
	keys = q.keyType.filter(models.DistinctKeys(keys))
	out := make(map[string]models.Row, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	query := q.selectState + " WHERE " + q.keyType.match(q.key, "$1") + " ORDER BY " + q.table + "." + q.key + " FOR UPDATE"
	rows, err := tx.query(ctx, q, query, []any{keys}, len(keys), false)
	if err != nil {
		return nil, fmt.Errorf("lock rows of %s by key: %w", q.table, err)
	}
	for _, r := range rows {
		out[r.Key] = r
	}
	return out, nil
}

// compiled holds the quoted names and the SELECTs of one models.Table.
type compiled struct {
	meta       tableMeta
	table, key string
	keyType    keyType
	id         string // quoted single-column primary key, "" when none or the key
	idType     keyType
	payload    []string // payload column names as configured
	selectFrom string   // SELECT key::text, refresh_rrule, state..., payload... [, id::text] FROM table
	// selectState is selectFrom without the payload columns.
	selectState string
	// selectClaim is selectFrom with models.ClaimRest of running rows only
	// (models.ClaimColumn): ClaimDue's.
	selectClaim string
	// firstLevels is models.FirstLevelsQuery on the table, with claimSettings.
	firstLevels string
	// kindGuard is the condition of the kind's scan sent ahead (kindAhead)
	// on $1, the kind's level, followed by " AND ": no row is more urgent.
	kindGuard string
}

// compileTable quotes t's names and builds its SELECTs with the table's
// metadata m (zero when unknown).
func compileTable(t models.Table, m tableMeta) (compiled, error) {
	c := compiled{meta: m}
	names, err := models.QuoteNames(t, quoteIdent)
	if err != nil {
		return c, err
	}
	c.table, c.key, c.payload = names.Table, names.Key, t.Payload
	c.keyType = m.cols[t.Key].keyType()
	if m.pk != "" && m.pk != t.Key {
		if c.id, err = quoteIdent(m.pk); err != nil {
			return c, fmt.Errorf("primary key of table %s: %w", c.table, err)
		}
		c.idType = m.cols[m.pk].keyType()
	}
	id := ""
	if c.id != "" {
		id = c.id + "::text"
	}
	c.selectFrom, c.selectState, c.selectClaim = names.Selects(c.key+"::text", id, quoteIdent)
	c.firstLevels = models.FirstLevelsQuery(c.table, doubleQuote) + ", " + claimSettings
	// Each level as firstLevels finds it, a walk of its column's index that
	// stops at the first entry (a comparison with the parameter in the
	// subquery could be a sequential scan of the table in the generic plan).
	for _, col := range []string{models.ColPriorityOnce, models.ColPriority} {
		q := doubleQuote(col)
		c.kindGuard += "COALESCE((SELECT " + q + " FROM " + c.table + " WHERE " + q + " IS NOT NULL ORDER BY " + q + " LIMIT 1) > $1, true) AND "
	}
	return c, nil
}

// compile compiles t with its table's metadata (primary key, column
// types), looked up once per table name and Store once the table is
// migrated. A missing table is a TableRefused error that says how to fix it.
func (s *Store) compile(ctx context.Context, t models.Table) (compiled, error) {
	key := t.CacheKey()
	s.mu.Lock()
	if c, ok := s.compiled[key]; ok {
		s.mu.Unlock()
		return c, nil
	}
	meta, ok := s.metas[t.Name]
	s.mu.Unlock()
	if !ok {
		var err error
		if meta, err = loadMeta(ctx, s.pool, t.Name); err != nil {
			return compiled{}, fmt.Errorf("read columns of %s: %w", t.Name, err)
		}
		if !meta.exists {
			return compiled{}, tableErrorf("table %q does not exist (create the table or fix `table:` of the kind in the config, then run `refresher migrate`; results wait in Redis meanwhile)", t.Name)
		}
		if _, migrated := meta.cols[models.ColAttemptUID]; migrated {
			// Not before: `refresher migrate` may still add the columns.
			s.mu.Lock()
			s.metas[t.Name] = meta
			s.mu.Unlock()
		}
	}
	if _, ok := meta.cols[t.Key]; !ok {
		return compiled{}, tableErrorf("table %q has no key column %q (fix `key:` of the kind in the config; results wait in Redis meanwhile)", t.Name, t.Key)
	}
	c, err := compileTable(t, meta)
	if err == nil && ok {
		s.mu.Lock()
		s.compiled[key] = c
		s.mu.Unlock()
	}
	return c, err
}

// query runs a SELECT built on q.selectFrom (withPayload) or q.selectState
// and scans its rows.
func (tx *Tx) query(ctx context.Context, q compiled, query string, args []any, sizeHint int, withPayload bool) ([]models.Row, error) {
	return queryRows(ctx, tx.tx, q, query, args, sizeHint, withPayload)
}

// queryRows runs the query on qr and scans its rows.
func queryRows(ctx context.Context, qr querier, q compiled, query string, args []any, sizeHint int, withPayload bool) ([]models.Row, error) {
	rs, err := qr.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	return readRows(rs, q, sizeHint, withPayload)
}

// readRows reads the rows of rs, a query built on q.selectFrom
// (withPayload) or q.selectState.
func readRows(rs pgx.Rows, q compiled, sizeHint int, withPayload bool) ([]models.Row, error) {
	var out []models.Row
	if withPayload {
		out = models.ClaimRows(min(sizeHint, 1024)) // the claim's (Get reads one row)
	} else {
		out = make([]models.Row, 0, min(sizeHint, 1024))
	}
	var (
		key                                  string
		id, rule, uid, reason, lastErr, st   pgtype.Text
		at, attemptAt, timeoutAt, disabledAt nullTime
		failingSince, lastSuccess            nullTime
		attemptNo                            pgtype.Int8
		values                               []any
		blocks                               = payload.Blocks{Hint: sizeHint}
		dest                                 = []any{&key, &rule, &at, &uid, &attemptAt, &attemptNo, &timeoutAt, &disabledAt, &reason, &failingSince, &lastSuccess, &lastErr, &st}
	)
	if withPayload {
		values = make([]any, len(q.payload))
		for i := range values {
			dest = append(dest, &values[i])
		}
	}
	if q.id != "" {
		dest = append(dest, &id)
	}
	for rs.Next() {
		if err := rs.Scan(dest...); err != nil {
			return nil, err
		}
		// Filled in place: a Row is half a kilobyte, built on the stack
		// and then copied into out it cost a copy per row.
		out = append(out, models.Row{Key: key, Rule: rule.String})
		r := &out[len(out)-1]
		r.State = policy.State{
			RefreshAt:      at.utc(),
			AttemptUID:     strings.TrimRight(uid.String, " "), // char(20) pads
			AttemptAt:      attemptAt.utc(),
			AttemptNo:      int(attemptNo.Int64),
			TimeoutAt:      timeoutAt.utc(),
			DisabledAt:     disabledAt.utc(),
			DisabledReason: reason.String,
			FailingSince:   failingSince.utc(),
			LastSuccessAt:  lastSuccess.utc(),
			LastError:      lastErr.String,
			Status:         st.String,
		}
		r.Loaded = models.Loaded{State: r.State, OK: true}
		if id.Valid {
			r.Loaded.ID = id.String
		}
		if len(values) > 0 {
			r.Payload = blocks.Take(q.payload)
			for i, v := range values {
				r.Payload[i].Value = jsonValue(v)
			}
		}
	}
	return out, rs.Err()
}

// nullTime is the scan destination of a timestamp or timestamptz column
// that may be NULL. pgx scans it through its own interfaces, where a
// *time.Time destination cost a reflect.New (an allocation) per value.
type nullTime struct {
	t     time.Time
	valid bool
}

// ScanTimestamptz implements pgtype.TimestamptzScanner.
func (n *nullTime) ScanTimestamptz(v pgtype.Timestamptz) error {
	return n.set(v.Time, v.InfinityModifier, v.Valid)
}

// ScanTimestamp implements pgtype.TimestampScanner.
func (n *nullTime) ScanTimestamp(v pgtype.Timestamp) error {
	return n.set(v.Time, v.InfinityModifier, v.Valid)
}

// set refuses infinity, as scanning into a time.Time does.
func (n *nullTime) set(t time.Time, inf pgtype.InfinityModifier, valid bool) error {
	if valid && inf != pgtype.Finite {
		return fmt.Errorf("cannot scan %v into a time", inf)
	}
	n.t, n.valid = t, valid
	return nil
}

// utc is the time in UTC, or the zero time for NULL.
func (n nullTime) utc() time.Time {
	if !n.valid {
		return time.Time{}
	}
	return n.t.UTC()
}

func utc(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}
