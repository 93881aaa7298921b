package sqlitestore

import (
	"context"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"

	"github.com/refresher/refresher/internal/jsontext"
	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
)

// Save implements models.Tx.Save with one UPDATE statement per up to 1000
// rows (see jsonUpdate). Rows that ClaimDue or LockByKeys returned are
// written by rowid, others (built by hand, only Key set) by Key; the
// columns that changed are those of models.Changed, so save a row once per
// read. Times are stored as TimeFormat; texts are models.Column.Fit, so
// that every driver stores the same text.
func (tx *Tx) Save(ctx context.Context, t models.Table, rows []models.Row) error {
	q, err := tx.s.compile(ctx, tx.tx, t)
	if err != nil {
		return err
	}
	rows, _ = models.LastWins(rows, nil)
	_, err = models.SaveBatches(q.table, models.GroupByID(rows, nil, false, q.meta.rowid, nil), func(b models.SaveGroup) (int, error) {
		query, args := jsonUpdate(q, b, nil)
		_, err := tx.tx.ExecContext(ctx, query, args...)
		return 0, err
	})
	return err
}

// SaveIfAttempt writes rows like Save, in its own transactions, but only
// those whose refresh_attempt_uid still equals attemptUIDs[i] ("" means
// NULL). It returns how many rows it wrote (SQLite counts a row that
// already held the given state as written). The dispatcher uses it to undo
// attempts whose Redis push failed; a row claimed by its one-shot priority
// gets it back (see saveRestoringOnce).
func (s *Store) SaveIfAttempt(ctx context.Context, t models.Table, rows []models.Row, attemptUIDs []string) (int, error) {
	if err := models.CheckAttemptUIDs(t, rows, attemptUIDs); err != nil {
		return 0, err
	}
	q, err := s.compile(ctx, s.db, t)
	if err != nil {
		return 0, err
	}
	release, err := s.writer.acquire(ctx) // it writes as a transaction does
	if err != nil {
		return 0, err
	}
	defer release()
	rows, attemptUIDs = models.LastWins(rows, attemptUIDs)
	return models.SaveBatches(q.table, models.GroupByID(rows, attemptUIDs, true, q.meta.rowid, nil), func(b models.SaveGroup) (int, error) {
		query, args := jsonUpdate(q, b, nil)
		if q.prioritized() && models.RestoresOnce(b.Rows) {
			n, err := s.saveRestoringOnce(ctx, q, b, query, args)
			return n, withSchemaHint(err)
		}
		n, err := models.RowsAffected(s.db.ExecContext(ctx, query, args...))
		return n, withSchemaHint(err)
	})
}

// attemptUIDColumn describes refresh_attempt_uid, which guards SaveIfAttempt.
var attemptUIDColumn = models.StateColumn(models.ColAttemptUID)

// columnValue is col's value in s as a statement argument: nil for NULL.
func columnValue(col *models.Column, s *policy.State) any {
	switch col.Kind {
	case models.TimeColumn:
		return dbTime(*col.Time(s))
	case models.TextColumn:
		if v := *col.Text(s); v != "" {
			return col.Fit(v)
		}
		return nil
	}
	return int64(*col.Int(s))
}

// jsonUpdate builds one UPDATE of the state columns cols of rows,
// identified by rowid (byRowid) or by the key column having the values
// ids. The rows travel as one JSON array of objects with the members k (the
// id), c0..c10 (models.StateColumns, those in cols that differ between rows; a
// missing member is NULL) and g (the guard); a column that holds one value
// in every row is set from an argument instead (a start gives every row the
// same attempt and timeout times):
//
//	WITH j AS MATERIALIZED (SELECT value ->> 'k' AS k, value ->> 'c1' AS c1 ... FROM json_each(?))
//	UPDATE t SET c1 = j.c1, c0 = ? FROM j
//	WHERE t.rowid = j.k [AND t.refresh_attempt_uid IS j.g]
//
// SQLite looks each row up by rowid (or through the key's unique index;
// the key column's affinity and collation apply to j.k). BenchmarkSave
// compares it with one prepared UPDATE per row.
//
// j is MATERIALIZED so that SQLite reads the document once per statement,
// whatever join order it picks: with statistics that undercount the table
// (ANALYZEd while it was small) it loops over the table outside, and a
// json_each inside that loop parses the whole document once per row of
// the table: about 1 ms per row for a batch of 1000, 100 s per statement
// on a 100,000-row table (TestJSONUpdateReadsDocumentOnce).
//
// With succeeded it is SaveSuccesses's (see there), now being *succeeded.
func jsonUpdate(q compiled, batch models.SaveGroup, succeeded *time.Time) (string, []any) {
	d := jsonRows(batch)
	return d.update(q, batch, succeeded, 0)
}

// updateDoc is the JSON array of a batch's rows that jsonUpdate sends,
// and which of its columns hold one value in every row (same) or not
// (perRow, the members of the array).
type updateDoc struct {
	doc          string
	same, perRow models.ColumnSet
}

// jsonRows builds batch's document: one object per row, with its id, the
// columns of cols that differ between rows and its guard.
func jsonRows(batch models.SaveGroup) updateDoc {
	byRowid, cols, ids, rows, guard := batch.ByID, batch.Cols, batch.IDs, batch.Rows, batch.Guard
	same := models.Uniform(cols, rows)
	perRow := cols &^ same
	doc := make([]byte, 0, 64+len(rows)*(40+30*bits.OnesCount16(uint16(perRow))))
	doc = append(doc, '[')
	for i, r := range rows {
		if i > 0 {
			doc = append(doc, ',')
		}
		doc = append(doc, `{"k":`...)
		if byRowid {
			doc = append(doc, ids[i]...) // an integer read from SQLite
		} else {
			doc = jsontext.AppendString(doc, ids[i])
		}
		doc = models.AppendJSONState(doc, &r.State, perRow, TimeFormat)
		if guard != nil {
			if guard[i] != "" {
				doc = append(doc, `,"g":`...)
				doc = jsontext.AppendString(doc, attemptUIDColumn.Fit(guard[i]))
			}
		}
		doc = append(doc, '}')
	}
	doc = append(doc, ']')
	return updateDoc{doc: string(doc), same: same, perRow: perRow}
}

// update is jsonUpdate's statement on d. The columns of held (some of
// d.same) are left out of its SET: it writes only the rows that already
// hold the batch's value in each of them (SaveSuccesses's first try, see
// successUpdates).
func (d updateDoc) update(q compiled, batch models.SaveGroup, succeeded *time.Time, held models.ColumnSet) (string, []any) {
	first := &batch.Rows[0].State
	held &= d.same
	var b strings.Builder
	b.WriteString(`WITH j AS MATERIALIZED (SELECT value ->> 'k' AS "k"`)
	for c := range models.StateColumns {
		if d.perRow.Has(c) {
			fmt.Fprintf(&b, `, value ->> 'c%d' AS "c%d"`, c, c)
		}
	}
	if batch.Guard != nil {
		b.WriteString(`, value ->> 'g' AS "g"`)
	}
	b.WriteString(` FROM json_each(?)) UPDATE ` + q.table + " SET ")
	args := []any{d.doc}
	sep := ""
	for c := range models.StateColumns {
		col := &models.StateColumns[c]
		switch {
		case d.perRow.Has(c):
			fmt.Fprintf(&b, `%s"%s" = j."c%d"`, sep, col.Name, c)
		case d.same.Has(c) && !held.Has(c):
			fmt.Fprintf(&b, `%s"%s" = ?`, sep, col.Name)
			args = append(args, columnValue(col, first))
		default:
			continue
		}
		sep = ", "
	}
	b.WriteString(` FROM j WHERE `)
	if batch.ByID {
		b.WriteString(q.table + `.rowid = j."k"`)
	} else {
		b.WriteString(q.table + "." + q.key + ` = j."k"`)
	}
	if batch.Guard != nil {
		b.WriteString(" AND " + q.table + `."` + models.ColAttemptUID + `" IS j."g"`)
	}
	if succeeded != nil {
		if !q.meta.intKey {
			// See intKeyString: for the INTEGER PRIMARY KEY, the match
			// by value above says as much.
			b.WriteString(" AND " + successKey(q) + ` = j."k"`)
		}
		rrule, timeout := unindexed(q, models.ColRRule), unindexed(q, models.ColTimeoutAt)
		b.WriteString(" AND " + rrule + " IS NULL AND (" + timeout + " IS NULL OR " + timeout + " > ?)")
		args = append(args, dbTime(*succeeded))
	}
	for c := range models.StateColumns {
		if held.Has(c) {
			col := &models.StateColumns[c]
			b.WriteString(" AND " + unindexed(q, col.Name) + " IS ?")
			args = append(args, columnValue(col, first))
		}
	}
	return b.String(), args
}

// unindexed is the table's column col in a condition of SaveSuccesses's
// statement that does not involve the document, written +t."col": a
// unary + keeps SQLite from searching an index by the term. So the table
// can be searched only by values from the document (its key or rowid,
// the attempt UID), and j is the outer loop, each row of the table looked
// up once. (The + also drops col's affinity from the comparison; the
// arguments compared here, NULL, int64s and TimeFormat texts, are ones no
// affinity converts.)
//
// Without it SQLite may take refresh_failing_since IS NULL (indexed by
// the migrations) for a few rows and walk that index, over nearly every
// row of the table: on a table without statistics (never ANALYZEd: the
// service does not run ANALYZE; with json_each inside that loop, 1 ms per
// row of the table) or ANALYZEd while its rows were failing
// (TestSaveSuccessesSearchesByKey).
func unindexed(q compiled, col string) string {
	return "+" + q.table + `."` + col + `"`
}

// SaveSuccesses implements models.Tx.SaveSuccesses with one UPDATE per up
// to 1000 rows, Save's json_each join by key with the conditions added
// (the attempt UID, the key as SQLite returns it, no rule of the row's
// own, timeout_at NULL or after now; for an INTEGER PRIMARY KEY, only the
// keys SQLite would print are sent, and matched by value: see
// intKeyString). It runs in the transaction that
// holds SQLite's write lock, so nothing reads the rows first: one
// statement instead of a SELECT and an UPDATE.
//
// Which rows it wrote: in the common batch, all of them, which the count
// of changed rows says. So each UPDATE runs first without RETURNING (the
// keys it would return cost about a tenth of the statement) inside a
// savepoint (successUpdates: one statement, or two that write the same);
// only when fewer rows changed than it sent does it roll back to the
// savepoint and run again RETURNING the key of each row it writes.
func (tx *Tx) SaveSuccesses(ctx context.Context, t models.Table, now time.Time, succ []models.Success) ([]bool, error) {
	rows, guard, err := models.SuccessRows(t, succ)
	if err != nil || len(rows) == 0 {
		return make([]bool, len(succ)), err
	}
	defer models.ReleaseRows(rows) // the statements hold copies of what they need
	q, err := tx.s.compile(ctx, tx.tx, t)
	if err != nil {
		return nil, err
	}
	var valid func(bool, string) bool
	if q.meta.intKey {
		valid = intKeyString
	}
	groups := models.GroupByID(rows, guard, true, false, valid)
	for i := range groups {
		groups[i].Cols = models.SuccessColumns
	}
	sent := 0
	var whole [][]string      // the keys of the batches written whole
	var wrote map[string]bool // the keys written, once a batch was not whole
	_, err = models.SaveBatches(q.table, groups, func(b models.SaveGroup) (int, error) {
		sent += len(b.IDs)
		stmts := successUpdates(q, b, now)
		all, err := tx.wholeOrUndo(ctx, stmts, len(b.IDs))
		if err != nil {
			return 0, err
		}
		if all && wrote == nil {
			whole = append(whole, b.IDs)
			return 0, nil
		}
		if wrote == nil {
			wrote = make(map[string]bool, len(rows))
			for _, keys := range whole {
				for _, k := range keys {
					wrote[k] = true
				}
			}
		}
		if all {
			for _, k := range b.IDs {
				wrote[k] = true
			}
			return 0, nil
		}
		whole := stmts[len(stmts)-1] // writes every row it matches
		res, err := tx.tx.QueryContext(ctx, whole.query+" RETURNING "+successKey(q), whole.args...)
		if err != nil {
			return 0, err
		}
		defer res.Close()
		for res.Next() {
			var k string
			if err := res.Scan(&k); err != nil {
				return 0, err
			}
			wrote[k] = true
		}
		return 0, res.Err()
	})
	if err != nil {
		return nil, err
	}
	if wrote == nil {
		return models.WrittenGroups(succ, groups, sent), nil
	}
	return models.Written(succ, wrote), nil
}

// successKey is the key of t's row as LockByKeys returns it, exactly ("7"
// for an INTEGER key, not "007"), in SaveSuccesses's statement.
func successKey(q compiled) string {
	return "CAST(" + q.table + "." + q.key + " AS TEXT)"
}

// intKeyString reports whether key is a 64-bit integer spelled as SQLite
// prints one (models.CanonicalInt). SaveSuccesses sends only such keys
// for an INTEGER PRIMARY KEY, and matches them by value alone: a row
// whose key equals the number holds that integer, whose text is key, so
// the comparison of successKey with the key (a conversion and a text
// comparison per row, about 0.5 ms per 1000 rows) would add nothing. The
// other keys ("007", "abc", beyond 64 bits) name no row's key as SQLite
// returns it: they are left to LockByKeys, like a key matched by no row.
func intKeyString(_ bool, key string) bool {
	if !models.CanonicalInt(key) {
		return false
	}
	_, err := strconv.ParseInt(key, 10, 64)
	return err == nil
}

// failingSince is refresh_failing_since in a models.ColumnSet.
var failingSince = func() models.ColumnSet {
	for c := range models.StateColumns {
		if models.StateColumns[c].Name == models.ColFailingSince {
			return 1 << c
		}
	}
	panic("no column " + models.ColFailingSince)
}()

// statement is one SQL statement and its arguments.
type statement struct {
	query string
	args  []any
}

// successUpdates are the UPDATEs that write a batch of successes (b),
// in order; each writes only rows the ones before it left alone (a
// success clears the attempt UID the guard asks for), so that together
// they write what the last would alone.
//
// A success clears refresh_failing_since, which only a failing row holds.
// Setting a column rewrites the entries of every index on it, even to the
// value it holds (the migrations index refresh_failing_since twice: about
// 2 of a 1000-row statement's 13 ms of CPU). So when the batch clears it
// in every row, the first UPDATE leaves it out and writes only the rows
// where it is already NULL; the second, with it, runs only when some rows
// are left: those that were failing.
func successUpdates(q compiled, b models.SaveGroup, now time.Time) []statement {
	d := jsonRows(b)
	var out []statement
	if d.same&failingSince != 0 && b.Rows[0].State.FailingSince.IsZero() {
		query, args := d.update(q, b, &now, failingSince)
		out = append(out, statement{query, args})
	}
	query, args := d.update(q, b, &now, 0)
	return append(out, statement{query, args})
}

// successSavepoint names the savepoint of wholeOrUndo.
const successSavepoint = "refresher_successes"

// wholeOrUndo runs stmts, UPDATEs meant to change n rows together, inside
// a savepoint, each only while fewer than n rows changed. It reports
// whether they changed all n; when they changed fewer, it rolls back to
// the savepoint, so that nothing of them stays.
func (tx *Tx) wholeOrUndo(ctx context.Context, stmts []statement, n int) (bool, error) {
	if _, err := tx.tx.ExecContext(ctx, "SAVEPOINT "+successSavepoint); err != nil {
		return false, err
	}
	changed := 0
	var err error
	for _, st := range stmts {
		if changed >= n {
			break
		}
		var c int
		if c, err = models.RowsAffected(tx.tx.ExecContext(ctx, st.query, st.args...)); err != nil {
			break
		}
		changed += c
	}
	if err == nil && changed != n {
		_, err = tx.tx.ExecContext(ctx, "ROLLBACK TO "+successSavepoint)
	}
	if err != nil {
		return false, err // the caller's transaction rolls back, the savepoint with it
	}
	if _, err := tx.tx.ExecContext(ctx, "RELEASE "+successSavepoint); err != nil {
		return false, err
	}
	return changed == n, nil
}
