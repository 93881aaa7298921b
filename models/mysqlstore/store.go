package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/refresher/refresher/internal/payload"
	"github.com/refresher/refresher/models"

	"github.com/refresher/refresher/policy"
)

// Store runs the service's queries on one database. It is safe for
// concurrent use. The database should come from Open (UTC, parseTime).
type Store struct {
	// SQLLedgerStore: the ledger's reads, appends and pruning.
	models.SQLLedgerStore

	db *sql.DB

	mu    sync.Mutex
	metas map[string]tableMeta // by table name, loaded once
	// compiled caches compile's result by Table.CacheKey, once the metadata is
	// cached: every NextDue (200 kinds ask every second) would otherwise
	// quote and join the names again.
	compiled map[string]compiled
	// exactTotalUpTo is models.ExactTotalUpTo, exactStateUpTo
	// models.ExactStateUpTo (lowered by tests).
	exactTotalUpTo, exactStateUpTo int64
}

// tableMeta is what Save needs to know of a table's columns.
type tableMeta struct {
	pk   string             // single-column primary key; "" for none or composite
	cols map[string]colMeta // by lower-case column name
	// refreshIndex is an index whose first column is refresh_at; "" when
	// there is none (the table is not migrated yet).
	refreshIndex string
	// priorityIndex and priorityOnceIndex are indexes whose first columns
	// are (refresh_priority, refresh_at) and refresh_priority_once
	// (migration 0004); while either is "" the claim ignores priorities.
	priorityIndex, priorityOnceIndex string
	// priorityAttemptIndex is an index on (refresh_priority,
	// refresh_attempt_no) (migration 0005); "" until then, when the alerts
	// by level read no attempt numbers.
	priorityAttemptIndex string
	// countIndexed: the columns Inspector.Counts counts by (attempt uid,
	// failing since, disabled until update, attempt no) each lead an index
	// (migration 0003).
	countIndexed bool
}

// colMeta describes one column, from information_schema.COLUMNS.
type colMeta struct {
	dataType           string // "int", "char", ...
	unsigned           bool
	charset, collation string // "" for non-text columns
}

// New returns a Store on db, which should come from Open.
func New(db *sql.DB) *Store {
	return &Store{SQLLedgerStore: newLedger(db), db: db, metas: map[string]tableMeta{}, compiled: map[string]compiled{}, exactTotalUpTo: models.ExactTotalUpTo, exactStateUpTo: models.ExactStateUpTo}
}

var _ models.Store = (*Store)(nil)
var _ models.Tx = (*Tx)(nil)

// DB returns the database the Store uses.
func (s *Store) DB() *sql.DB { return s.db }

// Ping checks that the server answers.
func (s *Store) Ping(ctx context.Context) error { return s.db.PingContext(ctx) }

// Close closes the connections.
func (s *Store) Close() error { return s.db.Close() }

// Migrate runs Migrate on the Store's database.
func (s *Store) Migrate(ctx context.Context, tables []string, w io.Writer, dryRun bool) (models.MigrateReport, error) {
	return Migrate(ctx, s.db, tables, w, dryRun)
}

// Tx is a transaction of the Store; see Store.Tx.
type Tx struct {
	s  *Store
	tx *sql.Tx
}

// Tx runs fn in a READ COMMITTED transaction and commits when fn returns
// nil; otherwise (or when fn panics) it rolls back and returns fn's error.
//
// READ COMMITTED, not MySQL's default REPEATABLE READ: the locking reads of
// ClaimDue then lock only the rows they return, without gap locks on the
// refresh_at index that would make the application's INSERT of a new model
// (refresh_at = now, right in the claimed range) wait for the batch. Open
// sets it once per connection, so the transaction begins with START
// TRANSACTION alone (one round trip, not two); a database not from Open
// runs at its session's level.
func (s *Store) Tx(ctx context.Context, fn func(tx models.Tx) error) error {
	return models.InSQLTx(ctx, s.db, nil, func(tx *sql.Tx) error {
		return withSchemaHint(fn(&Tx{s: s, tx: tx}))
	})
}

// Check verifies that t's table exists with its key column (which must have
// a single-column unique index), its payload columns and all 12 refresh
// columns. The error names everything missing and how to fix it.
func (s *Store) Check(ctx context.Context, t models.Table) error {
	q, err := compileTable(t, "")
	if err != nil {
		return err
	}
	schema, err := loadSchema(ctx, s.db, t.Name)
	if err != nil {
		return fmt.Errorf("check table %s: %w", q.table, err)
	}
	if !schema.exists {
		var db sql.NullString
		_ = s.db.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&db)
		return fmt.Errorf("table %s does not exist in database %q: create it in the application, or fix `table:` of the kind in the config", q.table, db.String)
	}
	var problems []error
	if _, ok := schema.columns[strings.ToLower(t.Key)]; !ok {
		problems = append(problems, fmt.Errorf("table %s has no key column %q: fix `key:` of the kind in the config", q.table, t.Key))
	} else if !schema.uniqueOn(t.Key) {
		problems = append(problems, fmt.Errorf("key column %q of table %s has no unique index: pick a unique column as `key:` or add one (ALTER TABLE %s ADD UNIQUE (%s))", t.Key, q.table, q.table, q.key))
	}
	var missing []string
	for _, c := range t.Payload {
		if _, ok := schema.columns[strings.ToLower(c)]; !ok {
			missing = append(missing, strconv.Quote(c))
		}
	}
	if len(missing) > 0 {
		problems = append(problems, fmt.Errorf("table %s has no payload column(s) %s: fix `payload:` of the kind in the config", q.table, strings.Join(missing, ", ")))
	}
	missing = missing[:0]
	for _, c := range models.Columns {
		if _, ok := schema.columns[c]; !ok {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		problems = append(problems, fmt.Errorf("table %s lacks refresh column(s) %s: run `refresher migrate --config FILE` (or `refresher migrate --print` for the SQL)", q.table, strings.Join(missing, ", ")))
	}
	return errors.Join(problems...)
}

func (s tableSchema) uniqueOn(col string) bool {
	col = strings.ToLower(col)
	for name, cols := range s.indexes {
		if s.unique[name] && len(cols) == 1 && cols[0] == col {
			return true
		}
	}
	return false
}

// ClaimDue locks and returns up to limit rows whose refresh_at is due
// (refresh_at <= now), by priority then earliest first (models.ClaimByPriority;
// by refresh_at alone while the table lacks migration 0004), skipping rows
// that another transaction holds (FOR UPDATE SKIP LOCKED), so that several
// dispatchers share the work without waiting for each other or claiming a
// row twice. The locks last until the transaction ends.
//
// from is a cursor: its scan starts at refresh_at >= from.At. After a batch
// the dispatcher can pass models.CursorAfter(last row), so the next scan
// starts there instead of walking, from the start of the index, over the
// entries that earlier batches moved forward (MariaDB purges them lazily;
// PERF-NOTES measured 5-10x). The caller must reset from to zero regularly
// (for instance when a batch comes back short, and every few seconds): rows
// whose refresh_at moved earlier than the cursor are otherwise not seen.
//
// Rows whose key is NULL are never returned: no result could name them.
func (tx *Tx) ClaimDue(ctx context.Context, t models.Table, now time.Time, from models.Cursor, limit int) ([]models.Row, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("claim due rows of %s: limit %d must be positive", t.Name, limit)
	}
	q, err := tx.s.compileOn(ctx, tx.tx, t)
	if err != nil {
		return nil, err
	}
	var rows []models.Row
	if q.meta.priorityIndex == "" || q.meta.priorityOnceIndex == "" {
		if from.UrgentOnly {
			return nil, nil // no priorities: nothing is more urgent than the kind
		}
		rows, err = tx.claimScan(ctx, q, q.meta.refreshIndex, "", nil, now, from.At, limit)
		for i := range rows {
			rows[i].Priority = models.Priority{Level: t.Priority}
		}
	} else {
		rows, err = models.ClaimByPriority(t.Priority, from, limit, models.PriorityScans{
			Probe: func(col string, after int, first bool) (int, bool, error) { return tx.probe(ctx, q, col, after, first) },
			First: func() (models.FirstLevels, error) {
				return models.ScanFirstLevels(tx.tx.QueryRowContext(ctx, q.firstLevels))
			},
			Claim: func(s models.Priority, start time.Time, n int) ([]models.Row, error) {
				index := q.meta.priorityIndex
				if s.Source == models.PriorityOnce {
					index = q.meta.priorityOnceIndex
				}
				filter, args := s.Filter(backquote, "?", true)
				return tx.claimScan(ctx, q, index, filter, args, now, start, n)
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
// (a condition followed by " AND ", or "") along index, from refresh_at >=
// from when from is not zero.
func (tx *Tx) claimScan(ctx context.Context, q compiled, index, filter string, args []any, now, from time.Time, limit int) ([]models.Row, error) {
	var b strings.Builder
	b.WriteString(q.selectClaim)
	if index != "" {
		// ORDER BY refresh_at alone: with the index forced and its first
		// column fixed by the filter, MariaDB walks it in order and stops
		// at limit (EXPLAIN: range, no filesort); ordered by both columns
		// it sorts, and locks every row it reads. When much of the table is due, the optimizer prefers a full scan
		// and a filesort of every due row to return the first `limit`;
		// walking the index returns them in order and stops at limit.
		idx, err := quoteIdent(index)
		if err != nil {
			return nil, fmt.Errorf("index of table %s: %w", q.table, err)
		}
		b.WriteString(" FORCE INDEX (" + idx + ")")
	}
	b.WriteString(" WHERE " + filter + "`refresh_at` <= ?")
	args = append(args, dbTime(now))
	if !from.IsZero() {
		b.WriteString(" AND `refresh_at` >= ?")
		args = append(args, dbTime(from))
	}
	fmt.Fprintf(&b, " AND %s IS NOT NULL ORDER BY `refresh_at` LIMIT %d FOR UPDATE SKIP LOCKED", q.key, limit)
	rows, err := tx.query(ctx, q, b.String(), args, limit, true)
	models.MarkClaimed(rows)
	return rows, err
}

// probe returns the smallest value of the priority column col above after
// (any value when first): one lookup in its index.
func (tx *Tx) probe(ctx context.Context, q compiled, col string, after int, first bool) (level int, ok bool, err error) {
	return probeLevel(ctx, tx.tx, q, col, after, first)
}

// rowQueryer is a *sql.DB or a *sql.Tx.
type rowQueryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func probeLevel(ctx context.Context, db rowQueryer, q compiled, col string, after int, first bool) (level int, ok bool, err error) {
	query := "SELECT `" + col + "` FROM " + q.table + " WHERE `" + col + "` IS NOT NULL ORDER BY `" + col + "` LIMIT 1"
	var args []any
	if !first {
		query = "SELECT `" + col + "` FROM " + q.table + " WHERE `" + col + "` > ? ORDER BY `" + col + "` LIMIT 1"
		args = []any{after}
	}
	err = db.QueryRowContext(ctx, query, args...).Scan(&level)
	if errors.Is(err, sql.ErrNoRows) {
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
	if q.meta.priorityIndex == "" || q.meta.priorityOnceIndex == "" {
		return false, nil
	}
	due, err := models.AnyUrgentDue(t.Priority,
		func(col string, after int, first bool) (int, bool, error) {
			return probeLevel(ctx, s.db, q, col, after, first)
		},
		func(sc models.Priority) (bool, error) {
			filter, args := sc.Filter(backquote, "?", false)
			var one int
			err := s.db.QueryRowContext(ctx, "SELECT 1 FROM "+q.table+" WHERE "+filter+"`refresh_at` <= ? LIMIT 1", append(args, dbTime(now))...).Scan(&one)
			if errors.Is(err, sql.ErrNoRows) {
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
// each level an index-only range count.
func (s *Store) Backlog(ctx context.Context, t models.Table, now time.Time, knownDue *int64) ([]models.LevelCount, error) {
	q, err := s.compile(ctx, t)
	if err != nil {
		return nil, err
	}
	out, err := models.CountByPriority(t.Priority, models.LevelCounts{
		KnownDue:    knownDue,
		Prioritized: q.meta.priorityIndex != "" && q.meta.priorityOnceIndex != "",
		Quote:       backquote,
		Placeholder: "?",
		Probe: func(col string, after int, first bool) (int, bool, error) {
			return probeLevel(ctx, s.db, q, col, after, first)
		},
		Count: func(_ models.Priority, filter string, args []any) (n int64, err error) {
			err = s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+q.table+" WHERE "+filter+"`refresh_at` <= ?", append(args, dbTime(now))...).Scan(&n)
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
// first due entry of its range of the priority index and the last entry of
// its range of the (refresh_priority, refresh_attempt_no) index, both
// forced, as the claim's scans are (with LIMIT 1 the optimizer may walk
// refresh_at's or refresh_attempt_no's own index instead and filter a
// whole level out). A table without migration 0004 has one level, the
// kind's: Counts' figures; without 0005 the levels report no attempts.
func (s *Store) AlertsByLevel(ctx context.Context, t models.Table, now time.Time) ([]models.LevelAlert, error) {
	q, err := s.compile(ctx, t)
	if err != nil {
		return nil, err
	}
	force := func(index string) (string, error) {
		idx, err := quoteIdent(index)
		return " FORCE INDEX (" + idx + ")", err
	}
	out, err := models.AlertsByPriority(t.Priority, models.LevelScans{
		Prioritized:   q.meta.priorityIndex != "" && q.meta.priorityOnceIndex != "",
		Unprioritized: func() (models.Counts, error) { return s.Counts(ctx, t, now, 0) },
		Probe: func(col string, after int, first bool) (int, bool, error) {
			return probeLevel(ctx, s.db, q, col, after, first)
		},
		Oldest: func(sc models.Priority) (time.Time, bool, error) {
			index := q.meta.priorityIndex
			if sc.Source == models.PriorityOnce {
				index = q.meta.priorityOnceIndex
			}
			hint, err := force(index)
			if err != nil {
				return time.Time{}, false, err
			}
			filter, args := sc.Filter(backquote, "?", false)
			var at sql.NullTime
			err = s.db.QueryRowContext(ctx, "SELECT MIN(`refresh_at`) FROM "+q.table+hint+" WHERE "+filter+"`refresh_at` <= ?", append(args, dbTime(now))...).Scan(&at)
			return nullTime(at), at.Valid, err
		},
		MaxAttempt: func(sc models.Priority) (int, error) {
			index := q.meta.priorityAttemptIndex
			if sc.Source == models.PriorityOnce {
				index = q.meta.priorityOnceIndex
			} else if index == "" {
				return 0, nil
			}
			hint, err := force(index)
			if err != nil {
				return 0, err
			}
			filter, args := sc.Filter(backquote, "?", false)
			var n sql.NullInt64
			err = s.db.QueryRowContext(ctx, "SELECT MAX(`refresh_attempt_no`) FROM "+q.table+hint+" WHERE "+filter+"TRUE", args...).Scan(&n)
			return int(n.Int64), err
		},
	})
	if err != nil {
		return nil, fmt.Errorf("read the alerts of %s by priority: %w", q.table, err)
	}
	return out, nil
}

// SetPriorityOnce sets refresh_priority_once of the rows with these keys
// (as the database returns them) to level, or NULL when level is nil.
func (tx *Tx) SetPriorityOnce(ctx context.Context, t models.Table, keys []string, level *int) error {
	q, err := tx.s.compileOn(ctx, tx.tx, t)
	if err != nil {
		return err
	}
	if err := tx.setOnce(ctx, q, keys, level); err != nil {
		return fmt.Errorf("set %s of %s: %w", models.ColPriorityOnce, q.table, err)
	}
	return nil
}

func (tx *Tx) setOnce(ctx context.Context, q compiled, keys []string, level *int) error {
	keys = models.DistinctKeys(keys)
	for len(keys) > 0 {
		chunk := keys[:min(len(keys), placeholdersPerSelect)]
		keys = keys[len(chunk):]
		var b strings.Builder
		b.WriteString("UPDATE " + q.table + " SET `refresh_priority_once` = ? WHERE " + q.key + " IN ")
		args := append([]any{level}, models.AppendInList(&b, chunk)...)
		if _, err := tx.tx.ExecContext(ctx, b.String(), args...); err != nil {
			return err
		}
	}
	return nil
}

// LockByKeys locks (FOR UPDATE, waiting for other transactions: a result
// must be applied, not skipped) and returns the rows with the given keys,
// by Key, without their Payload (nil): applying a result does not need it,
// and reading it is a good part of the cost. Keys that name no row are absent from the map. Duplicate keys
// are fine. The map is keyed by the key as the database returns it, which
// for a case-insensitive CHAR column or an INT column written as "007" may
// differ from the key asked for.
func (tx *Tx) LockByKeys(ctx context.Context, t models.Table, keys []string) (map[string]models.Row, error) {
	q, err := tx.s.compileOn(ctx, tx.tx, t)
	if err != nil {
		return nil, err
	}
	keys = models.DistinctKeys(keys)
	valid, err := keyFilter(ctx, tx.tx, q.meta.cols[strings.ToLower(q.keyName)], keys)
	if err != nil {
		return nil, fmt.Errorf("lock rows of %s by key: %w", q.table, err)
	}
	keys = slices.DeleteFunc(keys, func(k string) bool { return !valid(k) })
	// One lock order for every transaction, so two pollers whose batches
	// overlap wait for each other instead of deadlocking.
	slices.Sort(keys)
	out, err := models.RowsByKeys(keys, placeholdersPerSelect, func(chunk []string) ([]models.Row, error) {
		var b strings.Builder
		b.WriteString(q.selectState)
		b.WriteString(" WHERE " + q.key + " IN ")
		args := models.AppendInList(&b, chunk)
		b.WriteString(" FOR UPDATE")
		return tx.query(ctx, q, b.String(), args, len(chunk), false)
	})
	if err != nil {
		return nil, fmt.Errorf("lock rows of %s by key: %w", q.table, err)
	}
	return out, nil
}

// compiled holds the quoted names and the SELECT of one models.Table.
type compiled struct {
	meta       tableMeta // set by Store.compile only
	keyName    string    // t.Key unquoted
	table, key string
	id         string   // quoted single-column primary key, "" when none or the key
	payload    []string // payload column names as configured
	selectFrom string   // SELECT key, refresh_rrule, state..., payload... [, id] FROM table
	// selectState is selectFrom without the payload columns.
	selectState string
	// selectClaim is selectFrom with models.ClaimRest of running rows only
	// (models.ClaimColumn): ClaimDue's.
	selectClaim string
	// firstLevels is models.FirstLevelsQuery on the table.
	firstLevels string
}

// compile quotes t's names and builds its SELECT; pk is the table's
// single-column primary key ("" when unknown).
func compileTable(t models.Table, pk string) (compiled, error) {
	var c compiled
	names, err := models.QuoteNames(t, quoteIdent)
	if err != nil {
		return c, err
	}
	c.table, c.key, c.keyName, c.payload = names.Table, names.Key, t.Key, t.Payload
	if pk != "" && !strings.EqualFold(pk, t.Key) {
		if c.id, err = quoteIdent(pk); err != nil {
			return c, fmt.Errorf("primary key of table %s: %w", c.table, err)
		}
	}
	c.selectFrom, c.selectState, c.selectClaim = names.Selects(c.key, c.id, quoteIdent)
	c.firstLevels = models.FirstLevelsQuery(c.table, backquote)
	return c, nil
}

// compile compiles t with its table's metadata (primary key, column
// types), looked up once per table name and Store.
func (s *Store) compile(ctx context.Context, t models.Table) (compiled, error) {
	return s.compileOn(ctx, s.db, t)
}

// metaQueryer runs the metadata queries: the Store's pool, or the
// transaction in hand.
type metaQueryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// compileOn is compile with the metadata read through db. A transaction
// passes itself: reading through the pool while holding a connection would
// wait for a second one, and when every connection of a bounded pool
// (max_connections) is held by a transaction doing the same, none is ever
// freed (each waits until its OpTimeout).
func (s *Store) compileOn(ctx context.Context, db metaQueryer, t models.Table) (compiled, error) {
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
		if meta, err = loadMeta(ctx, db, t.Name); err != nil {
			return compiled{}, fmt.Errorf("read columns of %s: %w", t.Name, err)
		}
		if _, migrated := meta.cols[models.ColAttemptUID]; migrated {
			// Not before: `refresher migrate` may still add the columns.
			s.mu.Lock()
			s.metas[t.Name] = meta
			s.mu.Unlock()
		}
	}
	c, err := compileTable(t, meta.pk)
	c.meta = meta
	if err == nil && ok {
		s.mu.Lock()
		s.compiled[key] = c
		s.mu.Unlock()
	}
	return c, err
}

func loadMeta(ctx context.Context, db metaQueryer, table string) (tableMeta, error) {
	meta := tableMeta{cols: map[string]colMeta{}}
	rows, err := db.QueryContext(ctx, "SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, COALESCE(CHARACTER_SET_NAME, ''), COALESCE(COLLATION_NAME, ''), COLUMN_KEY FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?", table)
	if err != nil {
		return meta, err
	}
	defer rows.Close()
	var pks []string
	for rows.Next() {
		var name, colType, key string
		var m colMeta
		if err := rows.Scan(&name, &m.dataType, &colType, &m.charset, &m.collation, &key); err != nil {
			return meta, err
		}
		m.dataType = strings.ToLower(m.dataType)
		m.unsigned = strings.Contains(strings.ToLower(colType), "unsigned")
		meta.cols[strings.ToLower(name)] = m
		if key == "PRI" {
			pks = append(pks, name)
		}
	}
	if len(pks) == 1 {
		meta.pk = pks[0]
	}
	if err := rows.Err(); err != nil {
		return meta, err
	}
	// The table's indexes, their columns in order: one read of the
	// statistics, in the transaction's session (a join of them read ten
	// times as many rows).
	srows, err := db.QueryContext(ctx, "SELECT INDEX_NAME, SEQ_IN_INDEX, COLUMN_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?", table)
	if err != nil {
		return meta, err
	}
	indexes := map[string][]string{}
	for srows.Next() {
		var name, col string
		var seq int
		if err := srows.Scan(&name, &seq, &col); err != nil {
			srows.Close()
			return meta, err
		}
		cols := indexes[name]
		for len(cols) < seq {
			cols = append(cols, "")
		}
		cols[seq-1] = strings.ToLower(col) // as information_schema compares them
		indexes[name] = cols
	}
	srows.Close()
	if err := srows.Err(); err != nil {
		return meta, err
	}
	// indexOn names the first (by name) index whose first columns are
	// lead; "" when there is none.
	indexOn := func(lead ...string) string {
		best := ""
		for name, cols := range indexes {
			if len(cols) >= len(lead) && slices.Equal(cols[:len(lead)], lead) && (best == "" || name < best) {
				best = name
			}
		}
		return best
	}
	meta.refreshIndex = indexOn(models.ColRefreshAt)
	meta.priorityIndex = indexOn(models.ColPriority, models.ColRefreshAt)
	meta.priorityOnceIndex = indexOn(models.ColPriorityOnce)
	meta.priorityAttemptIndex = indexOn(models.ColPriority, models.ColAttemptNo)
	meta.countIndexed = true
	for _, col := range []string{models.ColAttemptUID, models.ColFailingSince, models.ColDisabledUntil, models.ColAttemptNo} {
		meta.countIndexed = meta.countIndexed && indexOn(col) != ""
	}
	return meta, nil
}

// query runs a SELECT built on q.selectFrom (withPayload) or q.selectState
// and scans its rows.
func (tx *Tx) query(ctx context.Context, q compiled, query string, args []any, sizeHint int, withPayload bool) ([]models.Row, error) {
	rs, err := tx.tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []models.Row
	if withPayload {
		out = models.ClaimRows(min(sizeHint, 1024)) // the claim's (Get reads one row)
	} else {
		out = make([]models.Row, 0, min(sizeHint, 1024))
	}
	var (
		key, id models.KeyDest
		rule    sql.NullString
		state   = newStateScan()
		values  []models.ValueDest
		blocks  = payload.Blocks{Hint: sizeHint}
		dest    = append([]any{&key, &rule}, state.dest...)
	)
	if withPayload {
		values = make([]models.ValueDest, len(q.payload))
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
		out = append(out, models.Row{Key: key.S, Rule: rule.String})
		r := &out[len(out)-1]
		zeroDate := state.into(&r.State)
		// A zero date ('0000-00-00', which MariaDB's default SQL mode
		// allows) reads as the zero time, like NULL: such a row is written
		// in full, so that Save replaces it.
		r.Loaded = models.Loaded{State: r.State, OK: !zeroDate}
		if id.Valid {
			r.Loaded.ID = id.S
		}
		if len(values) > 0 {
			r.Payload = blocks.Take(q.payload)
			for i := range values {
				r.Payload[i].Value = values[i].V
			}
		}
	}
	return out, rs.Err()
}

// stateScan holds the scan destinations of models.StateColumns, in order.
// They are sql.Scanners of their own rather than sql.NullTime, NullString
// and *int: database/sql hands a Scanner the driver's value as it is, where
// a NullTime or NullString converts it twice (their Scan calls its
// conversion again) and an *int goes through reflection and a string copy
// of the digits; the claim scans 11 of them per row.
type stateScan struct {
	dest  []any
	times []timeDest
	texts []textDest
	ints  []intDest
}

func newStateScan() *stateScan {
	n := len(models.StateColumns)
	s := &stateScan{dest: make([]any, n), times: make([]timeDest, n), texts: make([]textDest, n), ints: make([]intDest, n)}
	for c, col := range models.StateColumns {
		switch col.Kind {
		case models.TimeColumn:
			s.dest[c] = &s.times[c]
		case models.TextColumn:
			s.dest[c] = &s.texts[c]
		default:
			s.dest[c] = &s.ints[c]
		}
	}
	return s
}

// into stores the scanned values in st (which must live on the heap, see
// models.Column) and reports whether refresh_at held a zero date.
func (s *stateScan) into(st *policy.State) (zeroDate bool) {
	for c := range models.StateColumns {
		col := &models.StateColumns[c]
		switch col.Kind {
		case models.TimeColumn:
			*col.Time(st) = nullTime(s.times[c].NullTime)
			if col.Name == models.ColRefreshAt && s.times[c].Valid && s.times[c].Time.IsZero() {
				zeroDate = true
			}
		case models.TextColumn:
			*col.Text(st) = s.texts[c].String
		default:
			*col.Int(st) = int(s.ints[c])
		}
	}
	return zeroDate
}

// timeDest scans a DATETIME column that may be NULL as sql.NullTime does,
// taking the driver's time.Time (parseTime) without a second conversion.
type timeDest struct{ sql.NullTime }

// Scan implements sql.Scanner.
func (d *timeDest) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		d.NullTime = sql.NullTime{}
	case time.Time:
		d.NullTime = sql.NullTime{Time: v, Valid: true}
	default:
		return d.NullTime.Scan(src)
	}
	return nil
}

// textDest scans a text column that may be NULL as sql.NullString does,
// copying the driver's bytes once.
type textDest struct{ sql.NullString }

// Scan implements sql.Scanner.
func (d *textDest) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		d.NullString = sql.NullString{}
	case []byte:
		d.NullString = sql.NullString{String: string(v), Valid: true}
	default:
		return d.NullString.Scan(src)
	}
	return nil
}

// intDest scans an integer column that is not NULL as database/sql scans
// into an *int, parsing the driver's digits without copying them into a
// string first.
type intDest int

// Scan implements sql.Scanner.
func (d *intDest) Scan(src any) error {
	switch v := src.(type) {
	case int64:
		*d = intDest(v)
		return nil
	case []byte:
		n, err := strconv.ParseInt(unsafe.String(unsafe.SliceData(v), len(v)), 10, strconv.IntSize)
		if err != nil {
			return fmt.Errorf("converting driver.Value type []byte (%q) to a int: %w", v, err)
		}
		*d = intDest(n)
		return nil
	}
	var n int
	if err := convertInt(&n, src); err != nil {
		return err
	}
	*d = intDest(n)
	return nil
}

// convertInt is database/sql's own conversion of src into an *int, for
// the values intDest does not parse itself (NULL among them, an error).
func convertInt(dst *int, src any) error {
	var n sql.Null[int]
	if err := n.Scan(src); err != nil {
		return err
	}
	if !n.Valid {
		return errors.New("converting NULL to int is unsupported")
	}
	*dst = n.V
	return nil
}

func nullTime(t sql.NullTime) time.Time {
	if !t.Valid {
		return time.Time{}
	}
	return t.Time.UTC()
}

// dbTime is how times go to the database: UTC, truncated to the
// microseconds of DATETIME(6) (MySQL would round), NULL for the zero time.
func dbTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Truncate(time.Microsecond)
}
