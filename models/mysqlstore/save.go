package mysqlstore

import (
	"context"
	"fmt"
	"math/bits"
	"regexp"
	"strconv"
	"strings"

	"github.com/refresher/refresher/models"

	"github.com/refresher/refresher/internal/jsontext"
	"github.com/refresher/refresher/policy"
)

// maxSaveBatch is the most rows one UPDATE statement writes; larger batches
// are split. 1000 rows make a JSON document of about 600 kB, well below
// max_allowed_packet (16 MB on MariaDB, 64 MB on MySQL 8).
const maxSaveBatch = 1000

// Save writes the refresh state of each row (the 11 State columns; never
// refresh_rrule, which belongs to the application, nor any other column) in
// one UPDATE statement per up to 1000 rows. Of rows that ClaimDue or
// LockByKeys returned it writes only the columns that changed since they
// were read (in any row of the batch), and skips rows where nothing did: a
// start touches 5 of the 11 columns, and the database's work grows with
// what the statement carries. The comparison is with the row as read, so
// save a row once per read (read it again to save it again).
//
// Keys that name no row are ignored. When a key occurs twice, the last row
// wins. Times are stored in UTC truncated to microseconds; texts longer than
// their column (models.Schema's MaxLen) are cut by models.Column.Fit
// (policy.Truncate's rule) and invalid UTF-8 is replaced, so that one odd
// worker message cannot fail a batch in strict SQL mode.
//
// Call it on rows locked by ClaimDue or LockByKeys in the same transaction,
// and pass the Rows they returned (with State changed): those carry the
// row's primary key, and Save writes them by primary key rather than by
// Key. That matters for lock order: the write then needs no lock on the key
// column's index, which LockByKeys (and an application updating by that
// column) takes before the row's lock; writing by Key while holding the row
// would deadlock with them. Rows built by hand (only Key set) are written by
// Key in a separate statement.
func (tx *Tx) Save(ctx context.Context, t models.Table, rows []models.Row) error {
	q, err := tx.s.compile(ctx, t)
	if err != nil {
		return err
	}
	rows, _ = lastWins(rows, nil)
	for _, g := range groupByID(q, rows, nil, false) {
		for start := 0; start < len(g.rows); start += maxSaveBatch {
			end := min(start+maxSaveBatch, len(g.rows))
			query, args := jsonUpdate(q, g.by, g.meta, q.meta.cols[models.ColAttemptUID], g.cols, g.ids[start:end], g.rows[start:end], nil)
			if _, err := tx.tx.ExecContext(ctx, query, args...); err != nil {
				return fmt.Errorf("save %d rows of %s: %w", end-start, q.table, err)
			}
		}
	}
	return nil
}

// SaveIfAttempt writes rows like Save, in its own statements outside any
// caller transaction, but only those whose refresh_attempt_uid still equals
// attemptUIDs[i] ("" means NULL). It returns how many rows it wrote. The
// dispatcher uses it to undo attempts whose Redis push failed: rows is the
// state before the attempt started and attemptUIDs the UIDs it gave them, so
// a row that a result, an enable or another dispatcher changed in between
// is left alone.
//
// The count is MySQL's affected rows: a row already holding exactly the
// given state counts as not written.
func (s *Store) SaveIfAttempt(ctx context.Context, t models.Table, rows []models.Row, attemptUIDs []string) (int, error) {
	if len(rows) != len(attemptUIDs) {
		return 0, fmt.Errorf("save rows of %s if attempt: %d rows but %d attempt UIDs", t.Name, len(rows), len(attemptUIDs))
	}
	q, err := s.compile(ctx, t)
	if err != nil {
		return 0, err
	}
	rows, attemptUIDs = lastWins(rows, attemptUIDs)
	written := 0
	for _, g := range groupByID(q, rows, attemptUIDs, true) {
		for start := 0; start < len(g.rows); start += maxSaveBatch {
			end := min(start+maxSaveBatch, len(g.rows))
			query, args := jsonUpdate(q, g.by, g.meta, q.meta.cols[models.ColAttemptUID], g.cols, g.ids[start:end], g.rows[start:end], g.guard[start:end])
			res, err := s.db.ExecContext(ctx, query, args...)
			if err != nil {
				return written, fmt.Errorf("save %d rows of %s if attempt: %w", end-start, q.table, err)
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

// saveGroup is rows written by one column: the primary key or the key.
type saveGroup struct {
	by    string  // quoted column
	meta  colMeta // its type
	cols  columnSet
	ids   []string
	rows  []*models.Row
	guard []string
}

// groupByID splits rows into those that carry a primary key (written by
// it) and the others (written by Key), dropping empty groups. Unless all,
// it leaves out rows that did not change since they were read, and each
// group's cols are the columns that changed in any of its rows.
func groupByID(q compiled, rows []models.Row, guard []string, all bool) []saveGroup {
	byID := saveGroup{by: q.id, meta: q.meta.cols[strings.ToLower(q.meta.pk)]}
	byKey := saveGroup{by: q.key, meta: q.meta.cols[strings.ToLower(q.keyName)]}
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
		if q.id != "" && r.Loaded.ID != "" {
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

// columnSet is a set of state columns: bit c stands for
// models.StateColumns[c].
type columnSet uint16

var allColumns columnSet = 1<<numStateColumns - 1

func (s columnSet) has(c int) bool { return s&(1<<c) != 0 }

// changed returns the columns whose value differs from the one read; all of
// them for a row that was not read from the database.
func changed(r *models.Row) columnSet {
	if !r.Loaded.OK {
		return allColumns
	}
	var s columnSet
	for c := range models.StateColumns {
		if !models.StateColumns[c].Same(&r.Loaded.State, &r.State) {
			s |= 1 << c
		}
	}
	return s
}

// columnValue is the value of col for s as a statement argument: nil for
// NULL.
func columnValue(col *models.Column, s *policy.State) any {
	switch col.Kind {
	case models.TimeColumn:
		return dbTime(*col.Time(s))
	case models.TextColumn:
		return nullText(col, *col.Text(s))
	}
	return int64(*col.Int(s))
}

// uniform returns the columns of cols that hold one value in all rows.
func uniform(cols columnSet, rows []*models.Row) columnSet {
	var u columnSet
	for c := range models.StateColumns {
		if !cols.has(c) {
			continue
		}
		same := true
		for _, r := range rows[1:] {
			if !models.StateColumns[c].Same(&rows[0].State, &r.State) {
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

// jsonUpdate builds one UPDATE of the state columns cols of rows, identified
// by column by (quoted; its metadata byMeta) having the values ids. The rows
// travel as one JSON document, an array of objects with the members k (the
// id), c0..c10 (models.StateColumns, those in cols that differ between rows; a
// missing member is NULL) and g (the guard); a column that holds one value
// in every row is set from an argument instead (a start gives every row the
// same attempt and timeout times; a success the same next run), which
// spares the database extracting it 1000 times:
//
//	UPDATE t JOIN JSON_TABLE(?, '$[*]' COLUMNS (k ... PATH '$.k', c1 CHAR(20) PATH '$.c1', ...)) j
//	  ON t.by = <k as by's type> [AND t.refresh_attempt_uid <=> <g as its type>]
//	SET t.c1 = j.c1, t.c0 = ?, ...
//
// Its cost grows linearly with the rows, where UPDATE ... SET c = CASE id
// WHEN ... END compares each row with every WHEN (quadratic). BenchmarkSave,
// 1000 rows per statement and transaction, MariaDB 10.11 on 2 busy cores:
// JSON_TABLE 27-64 ms, CASE 84-177 ms with a CHAR key and 228-478 ms with
// an INT key (each WHEN converts the string to a number).
//
// JSON_TABLE's string columns have their own collation (utf8mb4_general_ci
// on MariaDB, another on MySQL 8), and comparing them with a column of
// another collation fails ("Illegal mix of collations") or cannot use its
// index. So the id is declared as an integer for integer columns and
// otherwise converted to the column's character set and collation
// (matchExpr), and the same is done for the guard.
func jsonUpdate(q compiled, by string, byMeta, uidMeta colMeta, cols columnSet, ids []string, rows []*models.Row, guard []string) (string, []any) {
	same := uniform(cols, rows)
	perRow := cols &^ same
	doc := make([]byte, 0, 64+len(rows)*(40+30*bits.OnesCount16(uint16(perRow))))
	doc = append(doc, '[')
	for i, r := range rows {
		if i > 0 {
			doc = append(doc, ',')
		}
		doc = append(doc, `{"k":`...)
		doc = jsontext.AppendString(doc, ids[i])
		doc = appendState(doc, &r.State, perRow)
		if guard != nil && guard[i] != "" {
			doc = append(doc, `,"g":`...)
			doc = jsontext.AppendString(doc, attemptUIDColumn.Fit(guard[i]))
		}
		doc = append(doc, '}')
	}
	doc = append(doc, ']')

	keyType, keyExpr := matchExpr(byMeta, "j.`k`")
	var b strings.Builder
	b.WriteString("UPDATE " + q.table + " AS t JOIN JSON_TABLE(?, '$[*]' COLUMNS (`k` " + keyType + " PATH '$.k'")
	for c := range models.StateColumns {
		if perRow.has(c) {
			fmt.Fprintf(&b, ", `c%d` %s PATH '$.c%d'", c, models.StateColumns[c].Type.MySQL, c)
		}
	}
	var guardExpr string
	if guard != nil {
		var guardType string
		guardType, guardExpr = matchExpr(uidMeta, "j.`g`")
		b.WriteString(", `g` " + guardType + " PATH '$.g'")
	}
	b.WriteString(")) AS j ON t." + by + " = " + keyExpr)
	if guard != nil {
		b.WriteString(" AND t.`" + models.ColAttemptUID + "` <=> " + guardExpr)
	}
	b.WriteString(" SET ")
	args := []any{string(doc)}
	sep := ""
	for c := range models.StateColumns {
		col := &models.StateColumns[c]
		switch {
		case perRow.has(c):
			fmt.Fprintf(&b, "%st.`%s` = j.`c%d`", sep, col.Name, c)
		case same.has(c):
			fmt.Fprintf(&b, "%st.`%s` = ?", sep, col.Name)
			args = append(args, columnValue(col, &rows[0].State))
		default:
			continue
		}
		sep = ", "
	}
	return b.String(), args
}

// matchExpr returns the JSON_TABLE type for a value compared with a column
// described by m, and the expression over ref to compare it with: integers
// as integers, texts converted to the column's character set and collation
// (so the comparison is the column's own and can use its index), anything
// else as text.
func matchExpr(m colMeta, ref string) (jsonType, expr string) {
	switch m.dataType {
	case "tinyint", "smallint", "mediumint", "int", "integer", "bigint":
		if m.unsigned {
			return "BIGINT UNSIGNED", ref
		}
		return "BIGINT", ref
	}
	if m.charset != "" && m.collation != "" && sqlName.MatchString(m.charset) && sqlName.MatchString(m.collation) {
		return "VARCHAR(768)", "CONVERT(" + ref + " USING " + m.charset + ") COLLATE " + m.collation
	}
	return "VARCHAR(768)", ref
}

var sqlName = regexp.MustCompile(`^[A-Za-z0-9_]+$`)

// jsonField are the JSON member prefixes of the columns c0..c10.
var jsonField = func() []string {
	f := make([]string, len(models.StateColumns))
	for c := range f {
		f[c] = fmt.Sprintf(`,"c%d":`, c)
	}
	return f
}()

// appendState appends the members c0..c10 of s that are in cols (the
// columns of models.StateColumns in order; NULLs are left out) without
// allocating: this runs for every row of every batch. s must already live
// on the heap (the accessors are called through func values).
func appendState(doc []byte, s *policy.State, cols columnSet) []byte {
	for c := range models.StateColumns {
		if !cols.has(c) {
			continue
		}
		col := &models.StateColumns[c]
		switch col.Kind {
		case models.TimeColumn:
			t := *col.Time(s)
			if t.IsZero() {
				continue
			}
			doc = append(doc, jsonField[c]...)
			doc = append(doc, '"')
			doc = models.StoredTime(t).AppendFormat(doc, "2006-01-02 15:04:05.000000")
			doc = append(doc, '"')
		case models.TextColumn:
			v := *col.Text(s)
			if v == "" {
				continue
			}
			doc = append(doc, jsonField[c]...)
			doc = jsontext.AppendString(doc, col.Fit(v))
		case models.IntColumn:
			doc = append(doc, jsonField[c]...)
			doc = strconv.AppendInt(doc, int64(*col.Int(s)), 10)
		}
	}
	return doc
}

// nullText is s as col stores it (see Column.Fit), nil when empty.
func nullText(col *models.Column, s string) any {
	if s == "" {
		return nil
	}
	return col.Fit(s)
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
