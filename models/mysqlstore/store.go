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

	"github.com/refresher/refresher/models"

	"github.com/refresher/refresher/policy"
)

// Store runs the service's queries on one database. It is safe for
// concurrent use. The database should come from Open (UTC, parseTime).
type Store struct {
	db *sql.DB

	mu    sync.Mutex
	metas map[string]tableMeta // by table name, loaded once
	// compiled caches compile's result by Table.CacheKey, once the metadata is
	// cached: every NextDue (200 kinds ask every second) would otherwise
	// quote and join the names again.
	compiled map[string]compiled
}

// tableMeta is what Save needs to know of a table's columns.
type tableMeta struct {
	pk   string             // single-column primary key; "" for none or composite
	cols map[string]colMeta // by lower-case column name
	// refreshIndex is an index whose first column is refresh_at; "" when
	// there is none (the table is not migrated yet).
	refreshIndex string
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
	return &Store{db: db, metas: map[string]tableMeta{}, compiled: map[string]compiled{}}
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
// (refresh_at = now, right in the claimed range) wait for the batch.
func (s *Store) Tx(ctx context.Context, fn func(tx models.Tx) error) error {
	return models.InSQLTx(ctx, s.db, &sql.TxOptions{Isolation: sql.LevelReadCommitted}, func(tx *sql.Tx) error {
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
// (refresh_at <= now), earliest first, skipping rows that another
// transaction holds (FOR UPDATE SKIP LOCKED), so that several dispatchers
// share the work without waiting for each other or claiming a row twice.
// The locks last until the transaction ends.
//
// from is an optional cursor: when not zero, only rows with
// refresh_at >= from are considered. After a batch the dispatcher can pass
// the last row's RefreshAt as from, so the next scan starts there instead
// of walking, from the start of the index, over the entries that earlier
// batches moved forward (MariaDB purges them lazily; PERF-NOTES measured
// 5-10x). The caller must reset from to zero regularly (for instance when
// a batch comes back short, and every few seconds): rows whose refresh_at
// moved earlier than the cursor are otherwise not seen.
//
// Rows whose key is NULL are never returned: no result could name them.
func (tx *Tx) ClaimDue(ctx context.Context, t models.Table, now, from time.Time, limit int) ([]models.Row, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("claim due rows of %s: limit %d must be positive", t.Name, limit)
	}
	q, err := tx.s.compileOn(ctx, tx.tx, t)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString(q.selectFrom)
	if q.meta.refreshIndex != "" {
		// When much of the table is due, the optimizer prefers a full scan
		// and a filesort of every due row to return the first `limit`;
		// walking the index returns them in order and stops at limit.
		idx, err := quoteIdent(q.meta.refreshIndex)
		if err != nil {
			return nil, fmt.Errorf("index of table %s: %w", q.table, err)
		}
		b.WriteString(" FORCE INDEX (" + idx + ")")
	}
	b.WriteString(" WHERE `refresh_at` <= ?")
	args := []any{dbTime(now)}
	if !from.IsZero() {
		b.WriteString(" AND `refresh_at` >= ?")
		args = append(args, dbTime(from))
	}
	fmt.Fprintf(&b, " AND %s IS NOT NULL ORDER BY `refresh_at` LIMIT %d FOR UPDATE SKIP LOCKED", q.key, limit)
	rows, err := tx.query(ctx, q, b.String(), args, limit, true)
	if err != nil {
		return nil, fmt.Errorf("claim due rows of %s: %w", q.table, err)
	}
	return rows, nil
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
	c.selectFrom, c.selectState = names.Selects(c.key, c.id, quoteIdent)
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
	err = db.QueryRowContext(ctx, "SELECT INDEX_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = ? AND SEQ_IN_INDEX = 1 ORDER BY INDEX_NAME LIMIT 1", table, models.ColRefreshAt).Scan(&meta.refreshIndex)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return meta, err
	}
	var led int
	err = db.QueryRowContext(ctx, "SELECT COUNT(DISTINCT COLUMN_NAME) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND SEQ_IN_INDEX = 1 AND COLUMN_NAME IN (?, ?, ?, ?)",
		table, models.ColAttemptUID, models.ColFailingSince, models.ColDisabledUntil, models.ColAttemptNo).Scan(&led)
	if err != nil {
		return meta, err
	}
	meta.countIndexed = led == 4
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
	out := make([]models.Row, 0, min(sizeHint, 1024))
	var (
		key, id any
		rule    sql.NullString
		state   = newStateScan()
		payload []any
		dest    = append([]any{&key, &rule}, state.dest...)
	)
	if withPayload {
		payload = make([]any, len(q.payload))
		for i := range payload {
			dest = append(dest, &payload[i])
		}
	}
	if q.id != "" {
		dest = append(dest, &id)
	}
	for rs.Next() {
		if err := rs.Scan(dest...); err != nil {
			return nil, err
		}
		out = append(out, models.Row{Key: models.KeyString(key), Rule: rule.String})
		r := &out[len(out)-1]
		zeroDate := state.into(&r.State)
		// A zero date ('0000-00-00', which MariaDB's default SQL mode
		// allows) reads as the zero time, like NULL: such a row is written
		// in full, so that Save replaces it.
		r.Loaded = models.Loaded{State: r.State, OK: !zeroDate}
		if id != nil {
			r.Loaded.ID = models.KeyString(id)
		}
		if len(payload) > 0 {
			r.Payload = make(map[string]any, len(payload))
			for i, name := range q.payload {
				r.Payload[name] = models.JSONValue(payload[i])
			}
		}
	}
	return out, rs.Err()
}

// stateScan holds the scan destinations of models.StateColumns, in order.
type stateScan struct {
	dest  []any
	times []sql.NullTime
	texts []sql.NullString
	ints  []int
}

func newStateScan() *stateScan {
	n := len(models.StateColumns)
	s := &stateScan{dest: make([]any, n), times: make([]sql.NullTime, n), texts: make([]sql.NullString, n), ints: make([]int, n)}
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
			*col.Time(st) = nullTime(s.times[c])
			if col.Name == models.ColRefreshAt && s.times[c].Valid && s.times[c].Time.IsZero() {
				zeroDate = true
			}
		case models.TextColumn:
			*col.Text(st) = s.texts[c].String
		default:
			*col.Int(st) = s.ints[c]
		}
	}
	return zeroDate
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
