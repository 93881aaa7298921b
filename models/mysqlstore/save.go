package mysqlstore

import (
	"context"
	"fmt"
	"math/bits"
	"regexp"
	"strings"
	"time"
	"unsafe"

	"github.com/refresher/refresher/models"

	"github.com/refresher/refresher/internal/jsontext"
	"github.com/refresher/refresher/policy"
)

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
	q, err := tx.s.compileOn(ctx, tx.tx, t)
	if err != nil {
		return err
	}
	rows, _ = models.LastWins(rows, nil)
	groups, err := groupByID(ctx, tx.tx, q, rows, nil, false)
	if err != nil {
		return fmt.Errorf("save rows of %s: %w", q.table, err)
	}
	_, err = models.SaveBatches(q.table, groups, func(b models.SaveGroup) (int, error) {
		query, args := q.update(b)
		_, err := tx.tx.ExecContext(ctx, query, args...)
		return 0, err
	})
	return err
}

// SaveIfAttempt writes rows like Save, in its own statements outside any
// caller transaction, but only those whose refresh_attempt_uid still equals
// attemptUIDs[i] ("" means NULL). It returns how many rows it wrote. The
// dispatcher uses it to undo attempts whose Redis push failed: rows is the
// state before the attempt started and attemptUIDs the UIDs it gave them, so
// a row that a result, an enable or another dispatcher changed in between
// is left alone. A row claimed by its one-shot priority gets it back (see
// saveRestoringOnce).
//
// The count is MySQL's affected rows: a row already holding exactly the
// given state counts as not written.
func (s *Store) SaveIfAttempt(ctx context.Context, t models.Table, rows []models.Row, attemptUIDs []string) (int, error) {
	if err := models.CheckAttemptUIDs(t, rows, attemptUIDs); err != nil {
		return 0, err
	}
	q, err := s.compile(ctx, t)
	if err != nil {
		return 0, err
	}
	rows, attemptUIDs = models.LastWins(rows, attemptUIDs)
	groups, err := groupByID(ctx, s.db, q, rows, attemptUIDs, true)
	if err != nil {
		return 0, fmt.Errorf("save rows of %s if attempt: %w", q.table, err)
	}
	return models.SaveBatches(q.table, groups, func(b models.SaveGroup) (int, error) {
		query, args := q.update(b)
		if q.prioritized() && models.RestoresOnce(b.Rows) {
			return s.saveRestoringOnce(ctx, q, b, query, args)
		}
		return models.RowsAffected(s.db.ExecContext(ctx, query, args...))
	})
}

// update is the UPDATE statement that writes batch b, and its arguments.
func (q compiled) update(b models.SaveGroup) (string, []any) {
	by, byMeta := q.by(b.ByID)
	return jsonUpdate(q, by, byMeta, q.meta.cols[models.ColAttemptUID], b.Cols, b.IDs, b.Rows, b.Guard, nil)
}

// groupByID splits rows into those read with a primary key other than the
// key (written by it) and the others (written by Key), leaving out keys the
// key column cannot hold (see keyFilter): they name no row, and must not
// fail the statement nor write another row. See models.GroupByID.
func groupByID(ctx context.Context, db metaQueryer, q compiled, rows []models.Row, guard []string, all bool) ([]models.SaveGroup, error) {
	byID := q.id != ""
	var byKey []string
	if !byID {
		byKey = make([]string, 0, len(rows))
	}
	for i := range rows {
		if !byID || rows[i].Loaded.ID == "" {
			byKey = append(byKey, rows[i].Key)
		}
	}
	valid, err := keyFilter(ctx, db, q.meta.cols[strings.ToLower(q.keyName)], byKey)
	if err != nil {
		return nil, err
	}
	return models.GroupByID(rows, guard, all, byID, func(byID bool, id string) bool { return byID || valid(id) }), nil
}

// by returns the quoted column a save group is written by (the primary key
// when byID, else the key) and its metadata.
func (q compiled) by(byID bool) (string, colMeta) {
	if byID {
		return q.id, q.meta.cols[strings.ToLower(q.meta.pk)]
	}
	return q.key, q.meta.cols[strings.ToLower(q.keyName)]
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
//
// succeeded, when not nil, adds SaveSuccesses's conditions (see there) to
// the join, with now as the time a timeout_at must lie after.
func jsonUpdate(q compiled, by string, byMeta, uidMeta colMeta, cols models.ColumnSet, ids []string, rows []*models.Row, guard []string, succeeded *time.Time) (string, []any) {
	same := models.Uniform(cols, rows)
	perRow := cols &^ same
	doc := make([]byte, 0, 64+len(rows)*(40+30*bits.OnesCount16(uint16(perRow))))
	doc = append(doc, '[')
	for i, r := range rows {
		if i > 0 {
			doc = append(doc, ',')
		}
		doc = append(doc, `{"k":`...)
		doc = jsontext.AppendString(doc, ids[i])
		doc = models.AppendJSONState(doc, &r.State, perRow, "2006-01-02 15:04:05.000000")
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
		if perRow.Has(c) {
			fmt.Fprintf(&b, ", `c%d` %s PATH '$.c%d'", c, models.StateColumns[c].Type.MySQL, c)
		}
	}
	var guardExpr string
	if guard != nil {
		var guardType string
		guardType, guardExpr = matchExpr(uidMeta, "j.`g`")
		b.WriteString(", `g` " + guardType + " PATH '$.g'")
	}
	intKey := isIntType(byMeta.dataType)
	if succeeded != nil && !intKey {
		b.WriteString(", `s` VARCHAR(768) PATH '$.k'")
	}
	b.WriteString(")) AS j ON t." + by + " = " + keyExpr)
	if guard != nil {
		b.WriteString(" AND t.`" + models.ColAttemptUID + "` <=> " + guardExpr)
	}
	// The document as a string without a copy (about 100 kB per 1000
	// rows): doc is not written after this, and the driver copies the
	// statement's text into its own buffer.
	args := []any{unsafe.String(unsafe.SliceData(doc), len(doc))}
	if succeeded != nil {
		// The key as the server sends it, byte for byte: a key that
		// LockByKeys would return spelled otherwise is left to it (for an
		// integer key SaveSuccesses sends canonical integers only).
		if !intKey {
			b.WriteString(" AND CAST(CONVERT(t." + by + " USING utf8mb4) AS BINARY) = CAST(j.`s` AS BINARY)")
		}
		b.WriteString(" AND t.`" + models.ColRRule + "` IS NULL" +
			" AND (t.`" + models.ColTimeoutAt + "` IS NULL OR t.`" + models.ColTimeoutAt + "` > ?)")
		args = append(args, dbTime(*succeeded))
	}
	b.WriteString(" SET ")
	sep := ""
	for c := range models.StateColumns {
		col := &models.StateColumns[c]
		switch {
		case perRow.Has(c):
			fmt.Fprintf(&b, "%st.`%s` = j.`c%d`", sep, col.Name, c)
		case same.Has(c):
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
	if isIntType(m.dataType) {
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

// isIntType reports whether a column of information_schema's DATA_TYPE
// holds integers.
func isIntType(dataType string) bool {
	switch dataType {
	case "tinyint", "smallint", "mediumint", "int", "integer", "bigint":
		return true
	}
	return false
}

var sqlName = regexp.MustCompile(`^[A-Za-z0-9_]+$`)

// nullText is s as col stores it (see Column.Fit), nil when empty.
func nullText(col *models.Column, s string) any {
	if s == "" {
		return nil
	}
	return col.Fit(s)
}

// SaveSuccesses implements models.Tx.SaveSuccesses with one UPDATE per up
// to 1000 rows, the JSON_TABLE join of Save with the conditions added to
// its ON clause (the attempt UID, the key byte for byte as the server
// sends it, no rule of the row's own, timeout_at NULL or after now). MySQL
// and MariaDB have no UPDATE ... RETURNING, so the count of changed rows
// (every match changes refresh_attempt_uid to NULL) is all it learns: when
// it is short, SaveSuccesses returns models.ErrUnmatched.
func (tx *Tx) SaveSuccesses(ctx context.Context, t models.Table, now time.Time, succ []models.Success) ([]bool, error) {
	rows, guard, err := models.SuccessRows(t, succ)
	if err != nil || len(rows) == 0 {
		return make([]bool, len(succ)), err
	}
	defer models.ReleaseRows(rows) // the statements hold copies of what they need
	q, err := tx.s.compileOn(ctx, tx.tx, t)
	if err != nil {
		return nil, err
	}
	if _, keyMeta := q.by(false); isIntType(keyMeta.dataType) {
		rows, guard = canonicalInts(rows, guard)
	}
	groups, err := groupByID(ctx, tx.tx, q, rows, guard, true)
	if err != nil {
		return nil, fmt.Errorf("save successes of %s: %w", q.table, err)
	}
	sent := 0
	for i := range groups {
		groups[i].Cols = models.SuccessColumns
		sent += len(groups[i].IDs)
	}
	n, err := models.SaveBatches(q.table, groups, func(b models.SaveGroup) (int, error) {
		_, byMeta := q.by(false)
		query, args := jsonUpdate(q, q.key, byMeta, q.meta.cols[models.ColAttemptUID], b.Cols, b.IDs, b.Rows, b.Guard, &now)
		return models.RowsAffected(tx.tx.ExecContext(ctx, query, args...))
	})
	if err != nil {
		return nil, err
	}
	if n < sent {
		return nil, fmt.Errorf("save successes of %s: %d of %d rows matched: %w", q.table, n, sent, models.ErrUnmatched)
	}
	return models.WrittenGroups(succ, groups, sent), nil
}

// canonicalInts drops the rows whose key is no canonical integer
// (models.CanonicalInt), keeping guard aligned: the server would print
// their row's key otherwise, so they are left to LockByKeys. It filters
// rows and guard in place (SaveSuccesses's own copies).
func canonicalInts(rows []models.Row, guard []string) ([]models.Row, []string) {
	n := 0
	for i := range rows {
		if !models.CanonicalInt(rows[i].Key) {
			continue
		}
		if n != i {
			rows[n], guard[n] = rows[i], guard[i]
		}
		n++
	}
	return rows[:n], guard[:n]
}
