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

// maxSaveBatch is the most rows one UPDATE statement writes; larger batches
// are split (a 1000-row document is about 600 kB).
const maxSaveBatch = 1000

// Save writes the refresh state of each row (the 11 State columns; never
// refresh_rrule, which belongs to the application, nor any other column) in
// one UPDATE statement per up to 1000 rows (see jsonUpdate). Of rows that
// ClaimDue or LockByKeys returned it writes only the columns that changed
// since they were read (in any row of the batch), and skips rows where
// nothing did; those rows are written by rowid, others (built by hand,
// only Key set) by Key. The comparison is with the row as read, so save a
// row once per read.
//
// Keys that name no row are ignored. When a key occurs twice, the last row
// wins. Times are stored as TimeFormat, UTC, truncated to microseconds;
// texts longer than the MySQL driver's columns (1024 characters for the
// reasons, 255 for the status) are cut and invalid UTF-8 is replaced, so
// that every driver stores the same text.
func (tx *Tx) Save(ctx context.Context, t models.Table, rows []models.Row) error {
	q, err := tx.s.compile(ctx, tx.tx, t)
	if err != nil {
		return err
	}
	rows, _ = lastWins(rows, nil)
	for _, g := range groupByID(q, rows, nil, false) {
		for start := 0; start < len(g.rows); start += maxSaveBatch {
			end := min(start+maxSaveBatch, len(g.rows))
			query, args := jsonUpdate(q, g.byRowid, g.cols, g.ids[start:end], g.rows[start:end], nil)
			if _, err := tx.tx.ExecContext(ctx, query, args...); err != nil {
				return fmt.Errorf("save %d rows of %s: %w", end-start, q.table, err)
			}
		}
	}
	return nil
}

// SaveIfAttempt writes rows like Save, in its own transactions, but only
// those whose refresh_attempt_uid still equals attemptUIDs[i] ("" means
// NULL). It returns how many rows it wrote (SQLite counts a row that
// already held the given state as written). The dispatcher uses it to undo
// attempts whose Redis push failed.
func (s *Store) SaveIfAttempt(ctx context.Context, t models.Table, rows []models.Row, attemptUIDs []string) (int, error) {
	if len(rows) != len(attemptUIDs) {
		return 0, fmt.Errorf("save rows of %s if attempt: %d rows but %d attempt UIDs", t.Name, len(rows), len(attemptUIDs))
	}
	q, err := s.compile(ctx, s.db, t)
	if err != nil {
		return 0, err
	}
	rows, attemptUIDs = lastWins(rows, attemptUIDs)
	written := 0
	for _, g := range groupByID(q, rows, attemptUIDs, true) {
		for start := 0; start < len(g.rows); start += maxSaveBatch {
			end := min(start+maxSaveBatch, len(g.rows))
			query, args := jsonUpdate(q, g.byRowid, g.cols, g.ids[start:end], g.rows[start:end], g.guard[start:end])
			res, err := s.db.ExecContext(ctx, query, args...)
			if err != nil {
				return written, withSchemaHint(fmt.Errorf("save %d rows of %s if attempt: %w", end-start, q.table, err))
			}
			n, err := res.RowsAffected()
			if err != nil {
				return written, fmt.Errorf("save rows of %s if attempt: %w", q.table, err)
			}
			written += int(n)
		}
	}
	return written, nil
}

// saveGroup is rows written by one column: the rowid or the key.
type saveGroup struct {
	byRowid bool
	cols    columnSet
	ids     []string
	rows    []*models.Row
	guard   []string
}

// groupByID splits rows into those that carry a rowid (written by it) and
// the others (written by Key), dropping empty groups. Unless all, it leaves
// out rows that did not change since they were read, and each group's cols
// are the columns that changed in any of its rows.
func groupByID(q compiled, rows []models.Row, guard []string, all bool) []saveGroup {
	byID := saveGroup{byRowid: true}
	var byKey saveGroup
	for i := range rows {
		r := &rows[i]
		cols := allColumns
		if !all {
			if cols = changed(r); cols == 0 {
				continue
			}
		}
		g := &byKey
		id := r.Key
		if q.meta.rowid && r.Loaded.ID != "" {
			g, id = &byID, r.Loaded.ID
		}
		if g.rows == nil {
			g.ids, g.rows = make([]string, 0, len(rows)-i), make([]*models.Row, 0, len(rows)-i)
		}
		g.cols |= cols
		g.ids = append(g.ids, id)
		g.rows = append(g.rows, r)
		if guard != nil {
			g.guard = append(g.guard, guard[i])
		}
	}
	var out []saveGroup
	for _, g := range []saveGroup{byID, byKey} {
		if len(g.rows) > 0 {
			out = append(out, g)
		}
	}
	return out
}

// columnSet is a set of stateColumns: bit c stands for stateColumns[c].
type columnSet uint16

const allColumns columnSet = 1<<numStateColumns - 1

func (s columnSet) has(c int) bool { return s&(1<<c) != 0 }

// changed returns the columns whose value differs from the one read; all of
// them for a row that was not read from the database.
func changed(r *models.Row) columnSet {
	if !r.Loaded.OK {
		return allColumns
	}
	var s columnSet
	for c := range numStateColumns {
		if !sameColumn(c, &r.Loaded.State, &r.State) {
			s |= 1 << c
		}
	}
	return s
}

// sameColumn reports whether a and b are stored with the same value in
// column c of stateColumns.
func sameColumn(c int, a, b *policy.State) bool {
	switch c {
	case 0:
		return sameTime(a.RefreshAt, b.RefreshAt)
	case 1:
		return a.AttemptUID == b.AttemptUID
	case 2:
		return sameTime(a.AttemptAt, b.AttemptAt)
	case 3:
		return a.AttemptNo == b.AttemptNo
	case 4:
		return sameTime(a.TimeoutAt, b.TimeoutAt)
	case 5:
		return sameTime(a.DisabledAt, b.DisabledAt)
	case 6:
		return a.DisabledReason == b.DisabledReason
	case 7:
		return sameTime(a.FailingSince, b.FailingSince)
	case 8:
		return sameTime(a.LastSuccessAt, b.LastSuccessAt)
	case 9:
		return a.LastError == b.LastError
	default:
		return a.Status == b.Status
	}
}

// columnValue is the value of column c of stateColumns for s as a statement
// argument: nil for NULL.
func columnValue(c int, s *policy.State) any {
	switch c {
	case 0:
		return dbTime(s.RefreshAt)
	case 1:
		return nullString(s.AttemptUID, attemptUIDLen)
	case 2:
		return dbTime(s.AttemptAt)
	case 3:
		return int64(s.AttemptNo)
	case 4:
		return dbTime(s.TimeoutAt)
	case 5:
		return dbTime(s.DisabledAt)
	case 6:
		return nullString(s.DisabledReason, maxReasonLen)
	case 7:
		return dbTime(s.FailingSince)
	case 8:
		return dbTime(s.LastSuccessAt)
	case 9:
		return nullString(s.LastError, maxReasonLen)
	default:
		return nullString(s.Status, maxStatusLen)
	}
}

// uniform returns the columns of cols that hold one value in all rows.
func uniform(cols columnSet, rows []*models.Row) columnSet {
	var u columnSet
	for c := range numStateColumns {
		if !cols.has(c) {
			continue
		}
		same := true
		for _, r := range rows[1:] {
			if !sameColumn(c, &rows[0].State, &r.State) {
				same = false
				break
			}
		}
		if same {
			u |= 1 << c
		}
	}
	return u
}

// sameTime reports whether a and b are stored as the same TimeFormat text.
func sameTime(a, b time.Time) bool {
	if a.IsZero() || b.IsZero() {
		return a.IsZero() == b.IsZero()
	}
	return a.Truncate(time.Microsecond).Equal(b.Truncate(time.Microsecond))
}

// jsonUpdate builds one UPDATE of the state columns cols of rows,
// identified by rowid (byRowid) or by the key column having the values
// ids. The rows travel as one JSON array of objects with the members k (the
// id), c0..c10 (stateColumns, those in cols that differ between rows; a
// missing member is NULL) and g (the guard); a column that holds one value
// in every row is set from an argument instead (a start gives every row the
// same attempt and timeout times):
//
//	UPDATE t SET c1 = j.c1, c0 = ?
//	FROM (SELECT value ->> 'k' AS k, value ->> 'c1' AS c1 ... FROM json_each(?)) AS j
//	WHERE t.rowid = j.k [AND t.refresh_attempt_uid IS j.g]
//
// SQLite looks each row up by rowid (or through the key's unique index;
// the key column's affinity and collation apply to j.k). BenchmarkSave
// compares it with one prepared UPDATE per row.
func jsonUpdate(q compiled, byRowid bool, cols columnSet, ids []string, rows []*models.Row, guard []string) (string, []any) {
	same := uniform(cols, rows)
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
		doc = appendState(doc, r.State, perRow)
		if guard != nil {
			if g, ok := nullString(guard[i], attemptUIDLen).(string); ok {
				doc = append(doc, `,"g":`...)
				doc = jsontext.AppendString(doc, g)
			}
		}
		doc = append(doc, '}')
	}
	doc = append(doc, ']')

	var b strings.Builder
	b.WriteString("UPDATE " + q.table + " SET ")
	var args []any
	sep := ""
	for c, col := range stateColumns {
		switch {
		case perRow.has(c):
			fmt.Fprintf(&b, `%s"%s" = j."c%d"`, sep, col, c)
		case same.has(c):
			fmt.Fprintf(&b, `%s"%s" = ?`, sep, col)
			args = append(args, columnValue(c, &rows[0].State))
		default:
			continue
		}
		sep = ", "
	}
	b.WriteString(` FROM (SELECT value ->> 'k' AS "k"`)
	for c := range numStateColumns {
		if perRow.has(c) {
			fmt.Fprintf(&b, `, value ->> 'c%d' AS "c%d"`, c, c)
		}
	}
	if guard != nil {
		b.WriteString(`, value ->> 'g' AS "g"`)
	}
	b.WriteString(` FROM json_each(?)) AS j WHERE `)
	args = append(args, string(doc))
	if byRowid {
		b.WriteString(q.table + `.rowid = j."k"`)
	} else {
		b.WriteString(q.table + "." + q.key + ` = j."k"`)
	}
	if guard != nil {
		b.WriteString(" AND " + q.table + `."` + models.ColAttemptUID + `" IS j."g"`)
	}
	return b.String(), args
}

// jsonField are the JSON member prefixes of the columns c0..c10.
var jsonField = func() (f [numStateColumns]string) {
	for c := range f {
		f[c] = fmt.Sprintf(`,"c%d":`, c)
	}
	return f
}()

// appendState appends the members c0..c10 of s that are in cols (NULLs
// are left out) without allocating per value.
func appendState(doc []byte, s policy.State, cols columnSet) []byte {
	appendTime := func(doc []byte, c int, t time.Time) []byte {
		if t.IsZero() || !cols.has(c) {
			return doc
		}
		doc = append(doc, jsonField[c]...)
		doc = append(doc, '"')
		doc = t.UTC().Truncate(time.Microsecond).AppendFormat(doc, TimeFormat)
		return append(doc, '"')
	}
	appendText := func(doc []byte, c int, v string, max int) []byte {
		if !cols.has(c) {
			return doc
		}
		if v, ok := nullString(v, max).(string); ok {
			doc = append(doc, jsonField[c]...)
			doc = jsontext.AppendString(doc, v)
		}
		return doc
	}
	doc = appendTime(doc, 0, s.RefreshAt)
	doc = appendText(doc, 1, s.AttemptUID, attemptUIDLen)
	doc = appendTime(doc, 2, s.AttemptAt)
	if cols.has(3) {
		doc = append(doc, jsonField[3]...)
		doc = strconv.AppendInt(doc, int64(s.AttemptNo), 10)
	}
	doc = appendTime(doc, 4, s.TimeoutAt)
	doc = appendTime(doc, 5, s.DisabledAt)
	doc = appendText(doc, 6, s.DisabledReason, maxReasonLen)
	doc = appendTime(doc, 7, s.FailingSince)
	doc = appendTime(doc, 8, s.LastSuccessAt)
	doc = appendText(doc, 9, s.LastError, maxReasonLen)
	return appendText(doc, 10, s.Status, maxStatusLen)
}

// nullString is s for a VARCHAR(max) column: nil when empty, otherwise
// cut by the one rule of every driver (policy.Truncate).
func nullString(s string, max int) any {
	if s == "" {
		return nil
	}
	return policy.Truncate(s, max)
}

// lastWins drops all but the last occurrence of each key, keeping order
// (and guard aligned with rows).
func lastWins(rows []models.Row, guard []string) ([]models.Row, []string) {
	last := make(map[string]int, len(rows))
	for i, r := range rows {
		last[r.Key] = i
	}
	if len(last) == len(rows) {
		return rows, guard
	}
	outRows := make([]models.Row, 0, len(last))
	var outGuard []string
	for i, r := range rows {
		if last[r.Key] != i {
			continue
		}
		outRows = append(outRows, r)
		if guard != nil {
			outGuard = append(outGuard, guard[i])
		}
	}
	return outRows, outGuard
}
