package models

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/refresher/refresher/policy"
)

// MaxLedgerKey is the longest row key the ledger keeps, in characters (its
// column is a VARCHAR(255) on MySQL): a longer key is cut (LedgerKey) when
// written and when read, alike.
const MaxLedgerKey = 255

// LedgerKey is the row key key as LedgerTable's row_key holds it: cut to
// MaxLedgerKey, with a '!' before it when it is empty or starts with '!',
// so that no row's entries share row_key with the kind's own ("") or its
// routine batches (LedgerRoutineKey), whatever the application's keys.
func LedgerKey(key string) string {
	if key == "" || key[0] == '!' {
		key = "!" + key
	}
	return policy.Truncate(key, MaxLedgerKey)
}

// LedgerRoutineKey is the row_key of a kind's batches of routine successes
// (policy.EventRoutine): a group of its own, which the reads of a row
// leave out and the count bound keeps apart (LedgerBounds.RoutineMaxEntries).
// LedgerKey never writes it: a '!' it adds is followed by '!' or nothing.
const LedgerRoutineKey = "!routine"

// LedgerRowKey is e's row_key: "" for an entry of the whole kind,
// LedgerRoutineKey for a batch of routine successes, else LedgerKey.
func LedgerRowKey(e policy.Entry) string {
	switch {
	case e.Whole && e.Event == policy.EventRoutine:
		return LedgerRoutineKey
	case e.Whole:
		return ""
	}
	return LedgerKey(e.Key)
}

// ledgerKeyOf is the key and Whole of an entry whose row_key is rowKey.
func ledgerKeyOf(rowKey string) (key string, whole bool) {
	switch {
	case rowKey == "" || rowKey == LedgerRoutineKey:
		return "", true
	case rowKey[0] == '!':
		return rowKey[1:], false
	}
	return rowKey, false
}

// LedgerRange is [from, to] as at_us bounds: a zero from is the start of
// time, a zero to the end.
func LedgerRange(from, to time.Time) (lo, hi int64) {
	lo, hi = Micros(from), int64(math.MaxInt64)
	if !to.IsZero() {
		hi = to.UnixMicro()
	}
	return lo, hi
}

// SQLLedger is the ledger on database/sql with "?" placeholders, which the
// MySQL and SQLite drivers share: Quoted is LedgerTable quoted in the
// dialect, and RowValues says the database compares (a, b) > (?, ?) along
// an index (SQLite; MySQL's OR form is used otherwise).
type SQLLedger struct {
	DB        *sql.DB
	Quoted    string
	RowValues bool
}

// SQLLedgerStore is LedgerStore over a SQLLedger: the database/sql
// drivers' Store embeds it, so that each driver gives only its dialect
// (SQLLedger's fields) and its LedgerTx.
type SQLLedgerStore struct{ L SQLLedger }

// AppendLedger implements LedgerStore.
func (s SQLLedgerStore) AppendLedger(ctx context.Context, entries []policy.Entry) error {
	return s.L.Append(ctx, s.L.DB, entries)
}

// Ledger implements LedgerReader.
func (s SQLLedgerStore) Ledger(ctx context.Context, kind, key string, from, to time.Time, limit int) ([]policy.Entry, error) {
	return s.L.Read(ctx, kind, key, from, to, limit)
}

// LedgerRoutine implements LedgerReader.
func (s SQLLedgerStore) LedgerRoutine(ctx context.Context, kind string, from, to time.Time, limit int) ([]policy.Entry, error) {
	return s.L.Routine(ctx, kind, from, to, limit)
}

// LedgerRowSpan implements LedgerReader.
func (s SQLLedgerStore) LedgerRowSpan(ctx context.Context, kind, key string) (int, time.Time, error) {
	return s.L.RowSpan(ctx, kind, key)
}

// LedgerReady implements LedgerStore.
func (s SQLLedgerStore) LedgerReady(ctx context.Context) error { return s.L.Ready(ctx) }

// PruneLedger implements LedgerStore.
func (s SQLLedgerStore) PruneLedger(ctx context.Context, b LedgerBounds, now time.Time, from LedgerPrune) (int, LedgerPrune, error) {
	return s.L.Pruner().Prune(ctx, b, now, from)
}

// SQLExecer is a *sql.DB or *sql.Tx.
type SQLExecer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func question(int) string { return "?" }

// Append inserts entries through q (the batch's transaction, or DB), in
// one statement per MaxLedgerInsert entries.
func (l SQLLedger) Append(ctx context.Context, q SQLExecer, entries []policy.Entry) error {
	rows := GetLedgerRows()
	defer PutLedgerRows(rows)
	for len(entries) > 0 {
		n := min(len(entries), MaxLedgerInsert)
		query, args := LedgerValuesSQL(l.Quoted, entries[:n], rows)
		if _, err := q.ExecContext(ctx, query, args...); err != nil {
			return fmt.Errorf("record %d ledger entries: %w", n, err)
		}
		entries = entries[n:]
	}
	return nil
}

// Ready implements LedgerStore.LedgerReady.
func (l SQLLedger) Ready(ctx context.Context) error {
	var one int
	err := l.DB.QueryRowContext(ctx, "SELECT 1 FROM "+l.Quoted+" WHERE 1 = 0").Scan(&one)
	if err != nil && err != sql.ErrNoRows {
		return LedgerMissing(err)
	}
	return nil
}

// LedgerMissing wraps the error of a look at LedgerTable.
func LedgerMissing(err error) error {
	return fmt.Errorf("read %s (run `refresher migrate` to create it): %w", LedgerTable, err)
}

// LedgerSelect is the read of LedgerReader.Ledger (newest true: the
// newest limit entries, newest first) and LedgerRoutine (the oldest
// first), with placeholders p(1)..p(6): kind, the two row_key values
// read, from, to (at_us), limit.
func LedgerSelect(quoted string, p func(int) string, newest bool) string {
	order := "at_us, id"
	if newest {
		order = "at_us DESC, id DESC"
	}
	return "SELECT row_key, at_us, event, detail FROM " + quoted +
		" WHERE kind = " + p(1) + " AND row_key IN (" + p(2) + ", " + p(3) + ") AND at_us >= " + p(4) + " AND at_us <= " + p(5) +
		" ORDER BY " + order + " LIMIT " + p(6)
}

// LedgerReadArgs are the arguments of LedgerSelect for a row's read
// (key, with the kind's own entries) or, routine true, for the kind's
// routine batches.
func LedgerReadArgs(kind, key string, routine bool, from, to time.Time, limit int) []any {
	lo, hi := LedgerRange(from, to)
	if routine {
		return []any{kind, LedgerRoutineKey, LedgerRoutineKey, lo, hi, limit}
	}
	return []any{kind, LedgerKey(key), "", lo, hi, limit}
}

// LedgerSpanSelect is the read of LedgerReader.LedgerRowSpan, with
// placeholders p(1), p(2): kind, row_key.
func LedgerSpanSelect(quoted string, p func(int) string) string {
	return "SELECT COUNT(*), COALESCE(MIN(at_us), 0) FROM " + quoted + " WHERE kind = " + p(1) + " AND row_key = " + p(2)
}

// LedgerScanner is what ScanLedger reads: *sql.Rows, pgx.Rows.
type LedgerScanner interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// ScanLedger reads the rows of LedgerSelect, oldest first whatever their
// order (newest: they came newest first).
func ScanLedger(rows LedgerScanner, kind string, newest bool) ([]policy.Entry, error) {
	var out []policy.Entry
	for rows.Next() {
		var k, event string
		var at int64
		var detail []byte
		if err := rows.Scan(&k, &at, &event, &detail); err != nil {
			return nil, err
		}
		e, err := LedgerEntry(kind, k, at, event, detail)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if newest {
		slices.Reverse(out)
	}
	return out, nil
}

// Read implements LedgerReader.Ledger.
func (l SQLLedger) Read(ctx context.Context, kind, key string, from, to time.Time, limit int) ([]policy.Entry, error) {
	out, err := l.read(ctx, kind, LedgerReadArgs(kind, key, false, from, to, limit), true)
	if err != nil {
		return nil, fmt.Errorf("read the ledger of %s %q: %w", kind, key, err)
	}
	return out, nil
}

// Routine implements LedgerReader.LedgerRoutine.
func (l SQLLedger) Routine(ctx context.Context, kind string, from, to time.Time, limit int) ([]policy.Entry, error) {
	out, err := l.read(ctx, kind, LedgerReadArgs(kind, "", true, from, to, limit), false)
	if err != nil {
		return nil, fmt.Errorf("read the routine batches of %s in the ledger: %w", kind, err)
	}
	return out, nil
}

func (l SQLLedger) read(ctx context.Context, kind string, args []any, newest bool) ([]policy.Entry, error) {
	rows, err := l.DB.QueryContext(ctx, LedgerSelect(l.Quoted, question, newest), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return ScanLedger(rows, kind, newest)
}

// RowSpan implements LedgerReader.LedgerRowSpan.
func (l SQLLedger) RowSpan(ctx context.Context, kind, key string) (int, time.Time, error) {
	var n, oldest int64
	if err := l.DB.QueryRowContext(ctx, LedgerSpanSelect(l.Quoted, question), kind, LedgerKey(key)).Scan(&n, &oldest); err != nil {
		return 0, time.Time{}, fmt.Errorf("count the ledger's entries of %s %q: %w", kind, key, err)
	}
	return int(n), FromMicros(oldest), nil
}

// LedgerChunkEnd is the id of the p(1)-th entry by id (0-based OFFSET):
// the end of the first chunk, which LedgerAgeDelete prunes by age. (A
// DELETE ... WHERE id IN (a subquery with LIMIT) would be one statement,
// but MariaDB runs it as a scan of the whole table.)
func LedgerChunkEnd(quoted string, p func(int) string) string {
	return "SELECT id FROM " + quoted + " ORDER BY id LIMIT 1 OFFSET " + p(1)
}

// LedgerAgeDelete removes the entries with id up to p(1) and at_us before
// p(2): a range of the primary key.
func LedgerAgeDelete(quoted string, p func(int) string) string {
	return "DELETE FROM " + quoted + " WHERE id <= " + p(1) + " AND at_us < " + p(2)
}

// AgeChunk is LedgerPruner.Age over the two statements of a driver:
// chunkEnd runs LedgerChunkEnd (ok false: fewer entries than the chunk),
// del LedgerAgeDelete.
func AgeChunk(ctx context.Context, chunk int, before int64,
	chunkEnd func(ctx context.Context, offset int) (id int64, ok bool, err error),
	del func(ctx context.Context, upTo, before int64) (int, error)) (int, error) {
	end, ok, err := chunkEnd(ctx, chunk-1)
	if err != nil {
		return 0, err
	}
	if !ok {
		end = math.MaxInt64
	}
	return del(ctx, end, before)
}

// LedgerGroups counts the entries of the (kind, row_key) groups after
// (p(1), p(2)), p(3) groups in index order; rowValues writes the bound as
// a row value, else as an OR.
func LedgerGroups(quoted string, p func(int) string, rowValues bool) string {
	after := "(kind > " + p(1) + " OR (kind = " + p(1) + " AND row_key > " + p(2) + "))"
	if rowValues {
		after = "(kind, row_key) > (" + p(1) + ", " + p(2) + ")"
	}
	return "SELECT kind, row_key, COUNT(*) FROM " + quoted + " WHERE " + after +
		" GROUP BY kind, row_key ORDER BY kind, row_key LIMIT " + p(3)
}

// LedgerCutoff is the at_us and id of the entry of (kind, row_key) =
// (p(1), p(2)) that is the p(3)-th newest (0-based OFFSET), newest by
// at_us then id; LedgerCountDelete removes the group's entries before it
// in that order (at_us before p(3), or equal and id before p(4)), so that
// entries of the same microsecond are counted exactly.
func LedgerCutoff(quoted string, p func(int) string) string {
	return "SELECT at_us, id FROM " + quoted + " WHERE kind = " + p(1) + " AND row_key = " + p(2) +
		" ORDER BY at_us DESC, id DESC LIMIT 1 OFFSET " + p(3)
}

// LedgerCountDelete: see LedgerCutoff; p(1), p(2) are kind and row_key.
func LedgerCountDelete(quoted string, p func(int) string) string {
	return "DELETE FROM " + quoted + " WHERE kind = " + p(1) + " AND row_key = " + p(2) +
		" AND at_us <= " + p(3) + " AND (at_us < " + p(3) + " OR id < " + p(4) + ")"
}

// LedgerGroup is one (kind, row_key) group and its count, as
// LedgerGroups returns them.
type LedgerGroup struct {
	Kind, Key string
	Count     int
}

// Keep is how many entries b keeps of the group whose row_key is key.
func (b LedgerBounds) Keep(key string) int {
	switch key {
	case "":
		return b.KindMaxEntries
	case LedgerRoutineKey:
		return b.RoutineMaxEntries
	}
	return b.MaxEntries
}

// LedgerPruner is one round of PruneLedger over a driver's three
// statements, shared by the drivers: Age runs LedgerAgeDelete, Groups
// LedgerGroups, Trim trims one group to keep entries.
type LedgerPruner struct {
	Age    func(ctx context.Context, chunk int, before int64) (int, error)
	Groups func(ctx context.Context, kind, key string, chunk int) ([]LedgerGroup, error)
	Trim   func(ctx context.Context, g LedgerGroup, keep int) (int, error)
}

// Prune implements LedgerStore.PruneLedger with p's statements.
func (p LedgerPruner) Prune(ctx context.Context, b LedgerBounds, now time.Time, from LedgerPrune) (int, LedgerPrune, error) {
	chunk := max(b.Chunk, 1)
	if !from.Counting {
		if b.MaxAge <= 0 {
			return 0, LedgerPrune{Counting: true}, nil
		}
		n, err := p.Age(ctx, chunk, now.Add(-b.MaxAge).UnixMicro())
		if err != nil {
			return 0, from, fmt.Errorf("prune the ledger by age: %w", err)
		}
		if n < chunk { // the first entries by id are young: the age is done
			from = LedgerPrune{Counting: true}
		}
		return n, from, nil
	}
	groups, err := p.Groups(ctx, from.Kind, from.Key, chunk)
	if err != nil {
		return 0, from, fmt.Errorf("prune the ledger: count entries: %w", err)
	}
	removed := 0
	for _, g := range groups {
		keep := b.Keep(g.Key)
		if keep <= 0 || g.Count <= keep {
			continue
		}
		n, err := p.Trim(ctx, g, keep)
		removed += n
		if err != nil {
			return removed, from, fmt.Errorf("prune the ledger of %s %q: %w", g.Kind, g.Key, err)
		}
	}
	if len(groups) < chunk {
		return removed, LedgerPrune{}, nil // the walk is done: the age next
	}
	last := groups[len(groups)-1]
	return removed, LedgerPrune{Counting: true, Kind: last.Kind, Key: last.Key}, nil
}

// Pruner returns l's LedgerPruner.
func (l SQLLedger) Pruner() LedgerPruner {
	return LedgerPruner{
		Age: func(ctx context.Context, chunk int, before int64) (int, error) {
			return AgeChunk(ctx, chunk, before, func(ctx context.Context, offset int) (int64, bool, error) {
				var id int64
				err := l.DB.QueryRowContext(ctx, LedgerChunkEnd(l.Quoted, question), offset).Scan(&id)
				if err == sql.ErrNoRows {
					return 0, false, nil
				}
				return id, err == nil, err
			}, func(ctx context.Context, upTo, before int64) (int, error) {
				return RowsAffected(l.DB.ExecContext(ctx, LedgerAgeDelete(l.Quoted, question), upTo, before))
			})
		},
		Groups: func(ctx context.Context, kind, key string, chunk int) ([]LedgerGroup, error) {
			args := []any{kind, key, chunk}
			if !l.RowValues {
				args = []any{kind, kind, key, chunk}
			}
			rows, err := l.DB.QueryContext(ctx, LedgerGroups(l.Quoted, question, l.RowValues), args...)
			if err != nil {
				return nil, err
			}
			defer rows.Close()
			var out []LedgerGroup
			for rows.Next() {
				var g LedgerGroup
				if err := rows.Scan(&g.Kind, &g.Key, &g.Count); err != nil {
					return nil, err
				}
				out = append(out, g)
			}
			return out, rows.Err()
		},
		Trim: func(ctx context.Context, g LedgerGroup, keep int) (int, error) {
			var cut, id int64
			err := l.DB.QueryRowContext(ctx, LedgerCutoff(l.Quoted, question), g.Kind, g.Key, keep-1).Scan(&cut, &id)
			if err == sql.ErrNoRows {
				return 0, nil
			}
			if err != nil {
				return 0, err
			}
			return RowsAffected(l.DB.ExecContext(ctx, LedgerCountDelete(l.Quoted, question), g.Kind, g.Key, cut, cut, id))
		},
	}
}
