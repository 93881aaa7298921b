package pgstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
)

// Save implements models.Tx.Save with one UPDATE statement per up to 1000
// rows:
//
//	UPDATE t SET c1 = v.c1, c4 = $3 ... FROM unnest($1::int8[], $2::text[]) AS v(k, c1)
//	  WHERE t.id = v.k
//
// It writes only the columns of models.Changed (save a row once per read);
// a column that holds one value in every row is one scalar parameter
// instead of an array. Rows read by ClaimDue or LockByKeys in a table whose
// primary key is not the key are written by primary key (Loaded.ID); others
// by Key, compared as the key column's type; keys that cannot be of that
// type name no row. Times are stored truncated to microseconds; texts are
// cut by cutText.
func (tx *Tx) Save(ctx context.Context, t models.Table, rows []models.Row) error {
	q, err := tx.s.compile(ctx, t)
	if err != nil {
		return err
	}
	rows, _ = models.LastWins(rows, nil)
	_, err = models.SaveBatches(q.table, groupByID(q, rows, nil, false), func(b models.SaveGroup) (int, error) {
		query, args := unnestUpdate(q, b, nil)
		_, err := tx.tx.Exec(ctx, query, tx.s.encodable(args)...)
		return 0, err
	})
	return err
}

// SaveIfAttempt writes rows like Save, in its own statements outside any
// caller transaction, but only those whose refresh_attempt_uid still equals
// attemptUIDs[i] ("" means NULL; the guard is IS NOT DISTINCT FROM). It
// returns how many rows it wrote (PostgreSQL counts every row matched, even
// one that already held the given state). A row claimed by its one-shot
// priority gets it back (see saveRestoringOnce).
func (s *Store) SaveIfAttempt(ctx context.Context, t models.Table, rows []models.Row, attemptUIDs []string) (int, error) {
	if err := models.CheckAttemptUIDs(t, rows, attemptUIDs); err != nil {
		return 0, err
	}
	q, err := s.compile(ctx, t)
	if err != nil {
		return 0, err
	}
	rows, attemptUIDs = models.LastWins(rows, attemptUIDs)
	return models.SaveBatches(q.table, groupByID(q, rows, attemptUIDs, true), func(b models.SaveGroup) (int, error) {
		query, args := unnestUpdate(q, b, nil)
		if q.meta.prioritized() && models.RestoresOnce(b.Rows) {
			n, err := s.saveRestoringOnce(ctx, q, b, query, args)
			return n, withSchemaHint(err)
		}
		tag, err := s.pool.Exec(ctx, query, s.encodable(args)...)
		return int(tag.RowsAffected()), withSchemaHint(err)
	})
}

// groupByID splits rows into those read with a primary key other than the
// key (written by it) and the others (written by Key), leaving out ids that
// cannot be of the column's type: they name no row. See models.GroupByID.
func groupByID(q compiled, rows []models.Row, guard []string, all bool) []models.SaveGroup {
	return models.GroupByID(rows, guard, all, q.id != "", func(byID bool, id string) bool {
		if byID {
			return q.idType.valid(id)
		}
		return q.keyType.valid(id)
	})
}

// paramType is the parameter type of a state column of kind k. Times are
// timestamptz, written into a timestamp (without time zone) column AT TIME
// ZONE 'UTC'.
func paramType(k models.ColumnKind) string {
	switch k {
	case models.TimeColumn:
		return "timestamptz"
	case models.IntColumn:
		return "int4"
	}
	return "text"
}

// attemptUIDColumn describes refresh_attempt_uid, which guards SaveIfAttempt.
var attemptUIDColumn = models.StateColumn(models.ColAttemptUID)

// unnestUpdate builds the UPDATE of batch g; see Save. With succeeded it
// is SaveSuccesses's (see there), now being *succeeded.
func unnestUpdate(q compiled, g models.SaveGroup, succeeded *time.Time) (string, []any) {
	rows := g.Rows
	same := models.Uniform(g.Cols, rows)
	perRow := g.Cols &^ same
	by, byType := q.key, q.keyType
	if g.ByID {
		by, byType = q.id, q.idType
	}

	args := []any{idsArg(byType, g.IDs)}
	from := []string{"$1::" + byType.arrayType()}
	names := []string{"k"}
	var set []string
	for c := range models.StateColumns {
		col := &models.StateColumns[c]
		// A timestamp without time zone column gets the UTC wall clock
		// whatever the session's time zone.
		zone := ""
		if q.meta.cols[col.Name].name == "timestamp" {
			zone = " AT TIME ZONE 'UTC'"
		}
		typ := paramType(col.Kind)
		switch {
		case perRow.Has(c):
			args = append(args, columnArray(col, rows))
			from = append(from, "$"+strconv.Itoa(len(args))+"::"+typ+"[]")
			names = append(names, "c"+strconv.Itoa(c))
			set = append(set, `"`+col.Name+`" = v.c`+strconv.Itoa(c)+zone)
		case same.Has(c):
			args = append(args, columnValue(col, &rows[0].State))
			set = append(set, `"`+col.Name+`" = $`+strconv.Itoa(len(args))+"::"+typ+zone)
		}
	}
	if g.Guard != nil {
		guard := make([]pgtype.Text, len(rows))
		for i, u := range g.Guard {
			guard[i] = text(attemptUIDColumn, u)
		}
		args = append(args, array[pgtype.Text](guard))
		from = append(from, "$"+strconv.Itoa(len(args))+"::text[]")
		names = append(names, "g")
	}
	ordinality := ""
	// The key as LockByKeys returns it (key::text), exactly; SaveSuccesses
	// sends an integer key only in the spelling PostgreSQL prints.
	keyText := succeeded != nil && byType.kind != kindInt
	if keyText {
		args = append(args, texts(g.IDs))
		from = append(from, "$"+strconv.Itoa(len(args))+"::text[]")
		names = append(names, "s")
	}
	if succeeded != nil {
		names = append(names, "i")
		ordinality = " WITH ORDINALITY"
	}
	var b strings.Builder
	b.WriteString("UPDATE " + q.table + " AS t SET " + strings.Join(set, ", "))
	b.WriteString(" FROM unnest(" + strings.Join(from, ", ") + ")" + ordinality + " AS v(" + strings.Join(names, ", ") + ")")
	b.WriteString(" WHERE " + byType.equals("t."+by, "v.k"))
	if g.Guard != nil {
		b.WriteString(` AND t."` + models.ColAttemptUID + `" IS NOT DISTINCT FROM v.g`)
	}
	if keyText {
		b.WriteString(" AND t." + by + "::text = v.s")
	}
	if succeeded != nil {
		args = append(args, succeeded.UTC())
		b.WriteString(` AND t."` + models.ColRRule + `" IS NULL` +
			` AND (t."` + models.ColTimeoutAt + `" IS NULL OR t."` + models.ColTimeoutAt + `" > $` + strconv.Itoa(len(args)) + ")" +
			" RETURNING v.i")
	}
	return b.String(), args
}

// idsArg is a save group's ids as the parameter they travel in: for an
// integer key or primary key the integers (keyType.valid checked that
// each is one), which pgx encodes directly, where an array of strings for
// an integer array goes through its reflection and fallback plans per
// element; else the strings.
func idsArg(t keyType, ids []string) any {
	if t.kind != kindInt {
		return texts(ids)
	}
	a := make([]pgtype.Int8, len(ids))
	for i, id := range ids {
		n, err := strconv.ParseInt(strings.TrimSpace(id), 10, t.bits)
		if err != nil {
			return texts(ids) // not checked: let the server say what is wrong
		}
		a[i] = pgtype.Int8{Int64: n, Valid: true}
	}
	return array[pgtype.Int8](a)
}

// SaveSuccesses implements models.Tx.SaveSuccesses with one UPDATE per up
// to 1000 rows, Save's unnest join with the conditions added (the attempt
// UID, the key as key::text prints it, no rule of the row's own,
// timeout_at NULL or after now), RETURNING the ordinal of each row it
// wrote.
func (tx *Tx) SaveSuccesses(ctx context.Context, t models.Table, now time.Time, succ []models.Success) ([]bool, error) {
	rows, guard, err := models.SuccessRows(t, succ)
	if err != nil || len(rows) == 0 {
		return make([]bool, len(succ)), err
	}
	defer models.ReleaseRows(rows) // the statements hold copies of what they need
	q, err := tx.s.compile(ctx, t)
	if err != nil {
		return nil, err
	}
	valid := q.keyType.valid
	if q.keyType.kind == kindInt {
		valid = models.CanonicalInt // key::text prints no other spelling
	}
	groups := models.GroupByID(rows, guard, true, false, func(_ bool, id string) bool { return valid(id) })
	wrote := make([]bool, len(succ)) // rows[i] is succ[i]'s
	for i := range groups {
		groups[i].Cols = models.SuccessColumns
	}
	_, err = models.SaveBatches(q.table, groups, func(b models.SaveGroup) (int, error) {
		query, args := unnestUpdate(q, b, &now)
		res, err := tx.tx.Query(ctx, query, tx.s.encodable(args)...)
		if err != nil {
			return 0, err
		}
		defer res.Close()
		at := positions(rows, b.Rows)
		var i int64 // one per statement: Scan's pointer escapes
		for res.Next() {
			if err := res.Scan(&i); err != nil {
				return 0, err
			}
			if i < 1 || int(i) > len(at) {
				return 0, fmt.Errorf("the update returned row %d of %d", i, len(at))
			}
			wrote[at[i-1]] = true
		}
		return 0, res.Err()
	})
	if err != nil {
		return nil, err
	}
	return wrote, nil
}

// positions returns the index in rows of each of group, which points into
// rows in their order (as models.GroupByID keeps it): the successes a
// statement reports by ordinality are then marked without a map of their
// keys, which cost a string hash per success, twice.
func positions(rows []models.Row, group []*models.Row) []int {
	at := make([]int, len(group))
	j := 0
	for k, r := range group {
		for &rows[j] != r {
			j++
		}
		at[k] = j
	}
	return at
}

// columnArray is col's value in each of rows, as an array parameter (see
// array).
func columnArray(col *models.Column, rows []*models.Row) any {
	switch col.Kind {
	case models.TimeColumn:
		a := make([]pgtype.Timestamptz, len(rows))
		for i, r := range rows {
			a[i] = timestamp(*col.Time(&r.State))
		}
		return array[pgtype.Timestamptz](a)
	case models.IntColumn:
		a := make([]pgtype.Int4, len(rows))
		for i, r := range rows {
			a[i] = pgtype.Int4{Int32: int32(*col.Int(&r.State)), Valid: true}
		}
		return array[pgtype.Int4](a)
	}
	a := make([]pgtype.Text, len(rows))
	for i, r := range rows {
		a[i] = text(col, *col.Text(&r.State))
	}
	return array[pgtype.Text](a)
}

// columnValue is col's value in s as a scalar parameter.
func columnValue(col *models.Column, s *policy.State) any {
	switch col.Kind {
	case models.TimeColumn:
		return timestamp(*col.Time(s))
	case models.IntColumn:
		return int32(*col.Int(s))
	}
	return text(col, *col.Text(s))
}

// timestamp is how times go to the database: truncated to microseconds
// (pgx truncates too; PostgreSQL would round text input), NULL for the zero
// time.
func timestamp(t time.Time) pgtype.Timestamptz {
	if t.IsZero() {
		return pgtype.Timestamptz{}
	}
	return pgtype.Timestamptz{Time: models.StoredTime(t), Valid: true}
}

// text is s as col stores it: NULL when empty, otherwise cutText.
func text(col *models.Column, s string) pgtype.Text {
	if s == "" {
		return pgtype.Text{}
	}
	return pgtype.Text{String: cutText(col, s), Valid: true}
}

// cutText is s as col stores it: the one rule of every driver
// (models.Column.Fit: invalid UTF-8 replaced by U+FFFD, cut to MaxLen
// characters with "…" as the last). PostgreSQL text cannot hold NUL either,
// so NUL bytes are replaced by U+FFFD as well, before counting.
func cutText(col *models.Column, s string) string {
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	return col.Fit(s)
}
