package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/refresher/refresher/internal/payload"
	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
)

// Store runs the service's queries on one SQLite database. It is safe for
// concurrent use. Get one from Open.
type Store struct {
	// SQLLedgerStore: the ledger's reads, appends and pruning.
	models.SQLLedgerStore

	db     *sql.DB
	path   string       // absolute file path; "" in memory
	unlock func() error // releases the instance lock; nil in memory

	// writer orders the Store's writes and gives outside writers their
	// turn (see writeLock).
	writer *writeLock

	mu    sync.Mutex
	metas map[string]tableMeta // by table name, loaded once migrated
	// compiled caches compile's result by Table.CacheKey once the
	// metadata is cached: each statement of a batch compiles its table.
	compiled map[string]compiled
}

var (
	_ models.Store = (*Store)(nil)
	_ models.Tx    = (*Tx)(nil)
)

// New returns a Store on db, which must use the "sqlite" driver with
// _txlock=immediate (Open sets it up); it takes no instance lock.
func New(db *sql.DB) *Store {
	return &Store{SQLLedgerStore: newLedger(db), db: db, writer: newWriteLock(), metas: map[string]tableMeta{}, compiled: map[string]compiled{}}
}

// DB returns the database the Store uses.
func (s *Store) DB() *sql.DB { return s.db }

// Path returns the database file's absolute path; "" in memory.
func (s *Store) Path() string { return s.path }

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.db.PingContext(ctx) }

// Close closes the connections, then releases the instance lock.
func (s *Store) Close() error {
	err := s.db.Close()
	if s.unlock != nil {
		err = errors.Join(err, s.unlock())
		s.unlock = nil
	}
	return err
}

// Migrate runs Migrate on the Store's database.
func (s *Store) Migrate(ctx context.Context, tables []string, w io.Writer, dryRun bool) (models.MigrateReport, error) {
	return Migrate(ctx, s.db, tables, w, dryRun)
}

// queryer is *sql.DB, *sql.Tx or *sql.Conn.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// Tx is a transaction of the Store; see Store.Tx.
type Tx struct {
	s  *Store
	tx *sql.Tx
}

// Tx runs fn in a transaction begun with BEGIN IMMEDIATE: it holds SQLite's
// write lock from the start, so transactions run one at a time (each waits
// up to BusyTimeout for the previous one; the Store's own hand the lock
// over in the process and leave outside writers a turn, see writeLock)
// and what a transaction reads stays as read until it commits. That is
// what FOR UPDATE SKIP LOCKED gives on a server, for a single instance. It
// commits when fn returns nil; otherwise (or when fn panics) it rolls back
// and returns fn's error.
func (s *Store) Tx(ctx context.Context, fn func(tx models.Tx) error) error {
	release, err := s.writer.acquire(ctx)
	if err != nil {
		return err
	}
	defer release()
	return models.InSQLTx(ctx, s.db, nil, func(tx *sql.Tx) error {
		return withSchemaHint(fn(&Tx{s: s, tx: tx}))
	})
}

// Check verifies that t's table exists with its key column (which must be
// unique: the INTEGER PRIMARY KEY, or a single-column unique index), its
// payload columns and all 12 refresh columns. The error names everything
// missing and how to fix it.
func (s *Store) Check(ctx context.Context, t models.Table) error {
	q, err := compileTable(t, tableMeta{})
	if err != nil {
		return err
	}
	schema, err := loadSchema(ctx, s.db, t.Name)
	if err != nil {
		return fmt.Errorf("check table %s: %w", q.table, err)
	}
	if !schema.exists {
		return fmt.Errorf("table %s does not exist in SQLite database %s: create it in the application, or fix `table:` of the kind in the config", q.table, s.where())
	}
	var problems []error
	has := func(c string) bool { _, ok := schema.columns[strings.ToLower(c)]; return ok }
	addUnique := "CREATE UNIQUE INDEX " + quoteName("uk_"+t.Name+"_"+t.Key) + " ON " + q.table + " (" + q.key + ")"
	for _, p := range models.CheckColumns(t, q.table, has, schema.uniqueOn, addUnique) {
		problems = append(problems, errors.New(p))
	}
	return errors.Join(problems...)
}

func (s *Store) where() string {
	if s.path == "" {
		return Memory
	}
	return s.path
}

// quoteName quotes a name built here (never refused: for messages).
func quoteName(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

// ClaimDue returns up to limit rows whose refresh_at is due (refresh_at <=
// now), by priority then earliest first (models.ClaimByPriority; by
// refresh_at alone while the table lacks migration 0004), each scan
// walking one index range. The transaction holds SQLite's write lock, so
// no other transaction can claim them or change them before it ends:
// SQLite needs no SKIP LOCKED.
//
// from is a cursor (see models.Tx). Rows whose key is NULL are never
// returned: no result could name them.
func (tx *Tx) ClaimDue(ctx context.Context, t models.Table, now time.Time, from models.Cursor, limit int) ([]models.Row, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("claim due rows of %s: limit %d must be positive", t.Name, limit)
	}
	q, err := tx.s.compile(ctx, tx.tx, t)
	if err != nil {
		return nil, err
	}
	var rows []models.Row
	if q.meta.priorityIndex == "" || q.meta.priorityOnceIndex == "" {
		if from.UrgentOnly {
			return nil, nil // no priorities: nothing is more urgent than the kind
		}
		rows, err = tx.claimScan(ctx, q, q.meta.refreshIndex, "", "", nil, now, from.At, limit)
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
				index, lead := q.meta.priorityIndex, models.ColPriority
				if s.Source == models.PriorityOnce {
					index, lead = q.meta.priorityOnceIndex, models.ColPriorityOnce
				}
				filter, args := s.Filter(quoteName, "?", true)
				return tx.claimScan(ctx, q, index, lead, filter, args, now, start, n)
			},
			ClearOnce: func(keys []string) error { return tx.setOnce(ctx, q, keys, nil) },
		})
	}
	if err != nil {
		tx.s.forgetIfIndexGone(err, t)
		return nil, fmt.Errorf("claim due rows of %s: %w", q.table, err)
	}
	return rows, nil
}

// claimScan is one range scan of the claim: the due rows matching filter
// (a condition followed by " AND ", or "") along index, from refresh_at >=
// from when from is not zero.
func (tx *Tx) claimScan(ctx context.Context, q compiled, index, lead, filter string, args []any, now, from time.Time, limit int) ([]models.Row, error) {
	var b strings.Builder
	b.WriteString(q.selectClaim)
	if index != "" {
		// The planner would do the same; saying so keeps it from a full
		// scan and a sort when most of the table is due.
		b.WriteString(" INDEXED BY " + quoteName(index))
	}
	b.WriteString(" WHERE " + filter + `"refresh_at" <= ?`)
	args = append(args, dbTime(now))
	if !from.IsZero() {
		b.WriteString(` AND "refresh_at" >= ?`)
		args = append(args, fromBound(from))
	}
	fmt.Fprintf(&b, ` AND %s IS NOT NULL ORDER BY %s"refresh_at" LIMIT %d`, q.key, leadOrder(lead), limit)
	rows, err := query(ctx, tx.tx, q, b.String(), args, limit, true)
	models.MarkClaimed(rows)
	return rows, err
}

// leadOrder is the ORDER BY term of a scan's leading index column ("" for
// none): it makes the order that of the index the scan walks.
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

func probeLevel(ctx context.Context, db queryer, q compiled, col string, after int, first bool) (level int, ok bool, err error) {
	query := `SELECT "` + col + `" FROM ` + q.table + ` WHERE "` + col + `" IS NOT NULL ORDER BY "` + col + `" LIMIT 1`
	var args []any
	if !first {
		query = `SELECT "` + col + `" FROM ` + q.table + ` WHERE "` + col + `" > ? ORDER BY "` + col + `" LIMIT 1`
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
	q, err := s.compile(ctx, s.db, t)
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
			filter, args := sc.Filter(quoteName, "?", false)
			var one int
			err := s.db.QueryRowContext(ctx, "SELECT 1 FROM "+q.table+" WHERE "+filter+`"refresh_at" <= ? LIMIT 1`, append(args, dbTime(now))...).Scan(&one)
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
// each level a range count of its index.
func (s *Store) Backlog(ctx context.Context, t models.Table, now time.Time, knownDue *int64) ([]models.LevelCount, error) {
	q, err := s.compile(ctx, s.db, t)
	if err != nil {
		return nil, err
	}
	out, err := models.CountByPriority(t.Priority, models.LevelCounts{
		KnownDue:    knownDue,
		Prioritized: q.meta.priorityIndex != "" && q.meta.priorityOnceIndex != "",
		Quote:       quoteName,
		Placeholder: "?",
		Probe: func(col string, after int, first bool) (int, bool, error) {
			return probeLevel(ctx, s.db, q, col, after, first)
		},
		Count: func(_ models.Priority, filter string, args []any) (n int64, err error) {
			err = s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+q.table+" WHERE "+filter+`"refresh_at" <= ?`, append(args, dbTime(now))...).Scan(&n)
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
// index (INDEXED BY each, ORDER BY ... LIMIT 1). A table without migration
// 0004 has one level, the kind's: Counts' figures; without 0005 the levels
// report no attempts.
func (s *Store) AlertsByLevel(ctx context.Context, t models.Table, now time.Time) ([]models.LevelAlert, error) {
	q, err := s.compile(ctx, s.db, t)
	if err != nil {
		return nil, err
	}
	indexed := func(sc models.Priority, index string) string {
		if sc.Source == models.PriorityOnce {
			index = q.meta.priorityOnceIndex
		}
		return " INDEXED BY " + quoteName(index)
	}
	out, err := models.AlertsByPriority(t.Priority, models.LevelScans{
		Prioritized:   q.meta.priorityIndex != "" && q.meta.priorityOnceIndex != "",
		Unprioritized: func() (models.Counts, error) { return s.Counts(ctx, t, now, 0) },
		Probe: func(col string, after int, first bool) (int, bool, error) {
			return probeLevel(ctx, s.db, q, col, after, first)
		},
		Oldest: func(sc models.Priority) (time.Time, bool, error) {
			filter, args := sc.Filter(quoteName, "?", false)
			var v any
			err := s.db.QueryRowContext(ctx, `SELECT "refresh_at" FROM `+q.table+indexed(sc, q.meta.priorityIndex)+" WHERE "+filter+
				`"refresh_at" <= ? ORDER BY "refresh_at" LIMIT 1`, append(args, dbTime(now))...).Scan(&v)
			if errors.Is(err, sql.ErrNoRows) {
				return time.Time{}, false, nil
			}
			if err != nil {
				return time.Time{}, false, err
			}
			at, err := mustParseTime(v, "oldest due refresh_at of "+q.table)
			return at, err == nil, err
		},
		MaxAttempt: func(sc models.Priority) (int, error) {
			if q.meta.priorityAttemptIndex == "" && sc.Source != models.PriorityOnce {
				return 0, nil
			}
			filter, args := sc.Filter(quoteName, "?", false)
			var n sql.NullInt64
			err := s.db.QueryRowContext(ctx, `SELECT "refresh_attempt_no" FROM `+q.table+indexed(sc, q.meta.priorityAttemptIndex)+" WHERE "+filter+
				`"refresh_attempt_no" IS NOT NULL ORDER BY "refresh_attempt_no" DESC LIMIT 1`, args...).Scan(&n)
			if errors.Is(err, sql.ErrNoRows) {
				return 0, nil
			}
			return int(n.Int64), err
		},
	})
	if err != nil {
		s.forgetIfIndexGone(err, t)
		return nil, fmt.Errorf("read the alerts of %s by priority: %w", q.table, err)
	}
	return out, nil
}

// SetPriorityOnce sets refresh_priority_once of the rows with these keys
// (as SQLite returns them) to level, or NULL when level is nil.
func (tx *Tx) SetPriorityOnce(ctx context.Context, t models.Table, keys []string, level *int) error {
	q, err := tx.s.compile(ctx, tx.tx, t)
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
		chunk := keys[:min(len(keys), keysPerSelect)]
		keys = keys[len(chunk):]
		var b strings.Builder
		b.WriteString(`UPDATE ` + q.table + ` SET "refresh_priority_once" = ? WHERE ` + q.key + ` IN `)
		args := append([]any{level}, models.AppendInList(&b, chunk)...)
		if _, err := tx.tx.ExecContext(ctx, b.String(), args...); err != nil {
			return err
		}
	}
	return nil
}

// LockByKeys returns the rows with the given keys, by Key, without their
// Payload (nil). The transaction already holds SQLite's write lock, so
// they stay as read until it ends. Keys that name no row are absent;
// duplicates are fine. The map is keyed by the key as SQLite returns it,
// which for an INTEGER key asked as "007" is "7".
func (tx *Tx) LockByKeys(ctx context.Context, t models.Table, keys []string) (map[string]models.Row, error) {
	q, err := tx.s.compile(ctx, tx.tx, t)
	if err != nil {
		return nil, err
	}
	keys = models.DistinctKeys(keys)
	slices.Sort(keys)
	out, err := models.RowsByKeys(keys, keysPerSelect, func(chunk []string) ([]models.Row, error) {
		var b strings.Builder
		b.WriteString(q.selectState)
		b.WriteString(" WHERE " + q.key + " IN ")
		args := models.AppendInList(&b, chunk)
		return query(ctx, tx.tx, q, b.String(), args, len(chunk), false)
	})
	if err != nil {
		return nil, fmt.Errorf("lock rows of %s by key: %w", q.table, err)
	}
	return out, nil
}

// tableMeta is what the queries need to know of a table.
type tableMeta struct {
	// rowid is set when rows are written by rowid: the table has one, and
	// the key column is not it.
	rowid bool
	// intKey is set when the key column is the INTEGER PRIMARY KEY (the
	// rowid's alias): every value it holds is a 64-bit integer, which
	// SQLite prints as models.CanonicalInt spells one.
	intKey bool
	// refreshIndex is an index whose first column is refresh_at; "" when
	// there is none (not migrated yet).
	refreshIndex string
	// priorityIndex and priorityOnceIndex are indexes whose first column is
	// refresh_priority and refresh_priority_once (migration 0004); while
	// either is "" the claim ignores priorities.
	priorityIndex, priorityOnceIndex string
	// priorityAttemptIndex is an index on (refresh_priority,
	// refresh_attempt_no) (migration 0005); "" until then, when the alerts
	// by level read no attempt numbers.
	priorityAttemptIndex string
	// attemptUIDIndex is an index led by refresh_attempt_uid, and
	// disabledIndex one led by (refresh_disabled_until_update,
	// refresh_failing_since) (migration 0003): Counts reads the running,
	// failing and disabled rows from them; "" until then.
	attemptUIDIndex, disabledIndex string
	migrated                       bool
	cols                           map[string]string // lower-case name -> declared type
}

// compiled holds the quoted names and the SELECTs of one models.Table.
type compiled struct {
	meta       tableMeta
	table, key string
	payload    []string // payload column names as configured
	// payloadTime marks payload columns declared as a date or time, whose
	// text is sent as RFC 3339 like the other drivers'.
	payloadTime []bool
	selectFrom  string // SELECT key, refresh_rrule, state..., payload... [, rowid] FROM table
	// selectState is selectFrom without the payload columns.
	selectState string
	// selectClaim is selectFrom with models.ClaimRest of running rows only
	// (models.ClaimColumn): ClaimDue's.
	selectClaim string
	// firstLevels is models.FirstLevelsQuery on the table.
	firstLevels string
}

func compileTable(t models.Table, meta tableMeta) (compiled, error) {
	c := compiled{meta: meta}
	names, err := models.QuoteNames(t, quoteIdent)
	if err != nil {
		return c, err
	}
	c.table, c.key, c.payload = names.Table, names.Key, t.Payload
	id := ""
	if meta.rowid {
		id = "rowid"
	}
	c.payloadTime = make([]bool, len(t.Payload))
	for i, p := range t.Payload {
		typ := meta.cols[strings.ToLower(p)]
		c.payloadTime[i] = strings.HasPrefix(typ, "date") || strings.HasPrefix(typ, "time")
	}
	c.selectFrom, c.selectState, c.selectClaim = names.Selects(c.key, id, noDeclType)
	c.firstLevels = models.FirstLevelsQuery(c.table, quoteName)
	return c, nil
}

// noDeclType quotes a column of the refresh columns as the SELECTs read
// it: as the expression +"name" (SQLite's no-op unary plus: the same value
// and type), which has no declared type. The driver then returns a
// DATETIME column's text as it is, for parseTime, instead of trying its own
// layouts on each value first (a parse error and its allocations per
// layout that fails), and looks up no declared type for a text value.
func noDeclType(name string) (string, error) {
	q, err := quoteIdent(name)
	return "+" + q, err
}

// compile compiles t with its table's metadata, read with q (the
// transaction's connection inside a Tx: an in-memory Store has only one)
// and kept once the table is migrated.
func (s *Store) compile(ctx context.Context, q queryer, t models.Table) (compiled, error) {
	key := t.CacheKey()
	s.mu.Lock()
	if c, ok := s.compiled[key]; ok {
		s.mu.Unlock()
		return c, nil
	}
	meta, ok := s.metas[t.Name]
	s.mu.Unlock()
	if !ok {
		schema, err := loadSchema(ctx, q, t.Name)
		if err != nil {
			return compiled{}, fmt.Errorf("read columns of %s: %w", t.Name, err)
		}
		meta = schema.meta(t.Key)
		if meta.migrated {
			// Not before: `refresher migrate` may still add the columns.
			s.mu.Lock()
			s.metas[t.Name] = meta
			s.mu.Unlock()
		}
	}
	c, err := compileTable(t, meta)
	if err == nil && ok {
		s.mu.Lock()
		s.compiled[key] = c
		s.mu.Unlock()
	}
	return c, err
}

// forget drops the cached metadata of t's table and every compiled
// query, so that the next compile reads the schema again: an index the
// metadata names was dropped or renamed while the Store ran.
func (s *Store) forget(t models.Table) {
	s.mu.Lock()
	delete(s.metas, t.Name)
	clear(s.compiled)
	s.mu.Unlock()
}

// forgetIfIndexGone forgets tables (see forget) when err is SQLite's
// refusal of an index their statements name (INDEXED BY, indexRefused):
// dropped, renamed or made partial while the Store ran. The call that met
// it fails; the next one (the service tries a failed pass or batch again)
// compiles from the schema as it is now, instead of failing the same way
// until a restart. Counts, a read, tries again at once.
func (s *Store) forgetIfIndexGone(err error, tables ...models.Table) {
	if indexRefused(err) {
		for _, t := range tables {
			s.forget(t)
		}
	}
}

// query runs a SELECT built on q.selectFrom (withPayload) or q.selectState
// and scans its rows.
func query(ctx context.Context, db queryer, q compiled, query string, args []any, sizeHint int, withPayload bool) ([]models.Row, error) {
	rs, err := db.QueryContext(ctx, query, args...)
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
		key, id                            any
		rule, uid, reason, lastErr, status sql.NullString
		times                              [7]any
		attemptNo                          sql.NullInt64
		values                             []any
		blocks                             = payload.Blocks{Hint: sizeHint}
		dest                               = []any{&key, &rule, &times[0], &uid, &times[1], &attemptNo, &times[2], &times[3], &reason, &times[4], &times[5], &lastErr, &status}
	)
	if withPayload {
		values = make([]any, len(q.payload))
		for i := range values {
			dest = append(dest, &values[i])
		}
	}
	if q.meta.rowid {
		dest = append(dest, &id)
	}
	for rs.Next() {
		if err := rs.Scan(dest...); err != nil {
			return nil, err
		}
		var parsed [7]time.Time
		ok := true
		for i, v := range times {
			var good bool
			parsed[i], good = parseTime(v)
			ok = ok && good
		}
		r := models.Row{
			Key:  models.KeyString(key),
			Rule: rule.String,
			State: policy.State{
				RefreshAt:      parsed[0],
				AttemptUID:     uid.String,
				AttemptAt:      parsed[1],
				AttemptNo:      int(attemptNo.Int64),
				TimeoutAt:      parsed[2],
				DisabledAt:     parsed[3],
				DisabledReason: reason.String,
				FailingSince:   parsed[4],
				LastSuccessAt:  parsed[5],
				LastError:      lastErr.String,
				Status:         status.String,
			},
		}
		// A time that cannot be read counts as NULL, and the row is then
		// written in full, so that Save replaces it.
		r.Loaded = models.Loaded{State: r.State, OK: ok}
		if id != nil {
			r.Loaded.ID = models.KeyString(id)
		}
		if len(values) > 0 {
			r.Payload = blocks.Take(q.payload)
			for i, v := range values {
				if q.payloadTime[i] {
					if t, ok := parseTime(v); ok && !t.IsZero() {
						v = t
					}
				}
				r.Payload[i].Value = models.JSONValue(v)
			}
		}
		out = append(out, r)
	}
	return out, rs.Err()
}
