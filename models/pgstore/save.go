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

// maxSaveBatch is the most rows one UPDATE statement writes; larger batches
// are split, so one statement's arrays stay a few hundred kB.
const maxSaveBatch = 1000

// Save writes the refresh state of each row (the 11 State columns; never
// refresh_rrule, which belongs to the application, nor any other column) in
// one UPDATE statement per up to 1000 rows:
//
//	UPDATE t SET c1 = v.c1, c4 = $3 ... FROM unnest($1::int8[], $2::text[]) AS v(k, c1)
//	  WHERE t.id = v.k
//
// Of rows that ClaimDue or LockByKeys returned it writes only the columns
// that changed since they were read (in any row of the batch) and skips
// rows where nothing did; a column that holds one value in every row is one
// scalar parameter instead of an array. Save a row once per read.
//
// Rows read by ClaimDue or LockByKeys in a table whose primary key is not the
// key are written by primary key (Loaded.ID); others by Key, compared as the
// key column's type. Keys that name no row, or cannot be of the key
// column's type, are ignored. When a key occurs twice the last row wins.
// Times are stored truncated to microseconds; texts are cut by the rule of
// cutText (as mysqlstore).
func (tx *Tx) Save(ctx context.Context, t models.Table, rows []models.Row) error {
	q, err := tx.s.compile(ctx, t)
	if err != nil {
		return err
	}
	rows, _ = lastWins(rows, nil)
	for _, g := range groupByID(q, rows, nil, false) {
		for start := 0; start < len(g.rows); start += maxSaveBatch {
			end := min(start+maxSaveBatch, len(g.rows))
			query, args := unnestUpdate(q, g, start, end)
			if _, err := tx.tx.Exec(ctx, query, args...); err != nil {
				return fmt.Errorf("save %d rows of %s: %w", end-start, q.table, err)
			}
		}
	}
	return nil
}

// SaveIfAttempt writes rows like Save, in its own statements outside any
// caller transaction, but only those whose refresh_attempt_uid still equals
// attemptUIDs[i] ("" means NULL; the guard is IS NOT DISTINCT FROM). It
// returns how many rows it wrote (PostgreSQL counts every row matched, even
// one that already held the given state).
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
			query, args := unnestUpdate(q, g, start, end)
			tag, err := s.pool.Exec(ctx, query, args...)
			if err != nil {
				return written, fmt.Errorf("save %d rows of %s if attempt: %w", end-start, q.table, withSchemaHint(err))
			}
			written += int(tag.RowsAffected())
		}
	}
	return written, nil
}

// saveGroup is rows written by one column: the primary key or the key.
type saveGroup struct {
	by     string // quoted column
	byType keyType
	cols   columnSet
	ids    []string
	rows   []*models.Row
	guard  []string // nil without a guard
}

// groupByID splits rows into those that carry a primary key (written by
// it) and the others (written by Key, when the key can be of the column's
// type), dropping empty groups. Unless all, it leaves out rows that did not
// change since they were read, and each group's cols are the columns that
// changed in any of its rows.
func groupByID(q compiled, rows []models.Row, guard []string, all bool) []saveGroup {
	byID := saveGroup{by: q.id, byType: q.idType}
	byKey := saveGroup{by: q.key, byType: q.keyType}
	if guard != nil {
		byID.guard, byKey.guard = []string{}, []string{}
	}
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
		if !g.byType.valid(id) {
			continue // names no row
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
		return cutText(a.AttemptUID, attemptUIDLen) == cutText(b.AttemptUID, attemptUIDLen)
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

// sameTime reports whether a and b are stored as the same timestamp(6).
func sameTime(a, b time.Time) bool {
	if a.IsZero() || b.IsZero() {
		return a.IsZero() == b.IsZero()
	}
	return a.Truncate(time.Microsecond).Equal(b.Truncate(time.Microsecond))
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

// pgTypes are the parameter types of stateColumns, in order. Times are
// timestamptz, written into a timestamp (without time zone) column AT TIME
// ZONE 'UTC'.
var pgTypes = [numStateColumns]string{"timestamptz", "text", "timestamptz", "int4", "timestamptz", "timestamptz", "text", "timestamptz", "timestamptz", "text", "text"}

// unnestUpdate builds the UPDATE of g's rows [start, end); see Save.
func unnestUpdate(q compiled, g saveGroup, start, end int) (string, []any) {
	rows := g.rows[start:end]
	same := uniform(g.cols, rows)
	perRow := g.cols &^ same

	args := []any{g.ids[start:end]}
	from := []string{"$1::" + g.byType.arrayType()}
	names := []string{"k"}
	var set []string
	for c, col := range stateColumns {
		// A timestamp without time zone column gets the UTC wall clock
		// whatever the session's time zone.
		zone := ""
		if q.meta.cols[col].name == "timestamp" {
			zone = " AT TIME ZONE 'UTC'"
		}
		switch {
		case perRow.has(c):
			args = append(args, columnArray(c, rows))
			from = append(from, "$"+strconv.Itoa(len(args))+"::"+pgTypes[c]+"[]")
			names = append(names, "c"+strconv.Itoa(c))
			set = append(set, `"`+col+`" = v.c`+strconv.Itoa(c)+zone)
		case same.has(c):
			args = append(args, columnValue(c, &rows[0].State))
			set = append(set, `"`+col+`" = $`+strconv.Itoa(len(args))+"::"+pgTypes[c]+zone)
		}
	}
	if g.guard != nil {
		guard := make([]pgtype.Text, len(rows))
		for i, u := range g.guard[start:end] {
			guard[i] = text(u, attemptUIDLen)
		}
		args = append(args, guard)
		from = append(from, "$"+strconv.Itoa(len(args))+"::text[]")
		names = append(names, "g")
	}
	var b strings.Builder
	b.WriteString("UPDATE " + q.table + " AS t SET " + strings.Join(set, ", "))
	b.WriteString(" FROM unnest(" + strings.Join(from, ", ") + ") AS v(" + strings.Join(names, ", ") + ")")
	b.WriteString(" WHERE " + g.byType.equals("t."+g.by, "v.k"))
	if g.guard != nil {
		b.WriteString(` AND t."` + models.ColAttemptUID + `" IS NOT DISTINCT FROM v.g`)
	}
	return b.String(), args
}

// columnArray is column c of stateColumns for rows, as an array parameter.
func columnArray(c int, rows []*models.Row) any {
	switch pgTypes[c] {
	case "timestamptz":
		a := make([]pgtype.Timestamptz, len(rows))
		for i, r := range rows {
			a[i] = timestamp(timeColumn(c, &r.State))
		}
		return a
	case "int4":
		a := make([]int32, len(rows))
		for i, r := range rows {
			a[i] = int32(r.State.AttemptNo)
		}
		return a
	}
	a := make([]pgtype.Text, len(rows))
	for i, r := range rows {
		a[i] = textColumn(c, &r.State)
	}
	return a
}

// columnValue is column c of stateColumns for s as a scalar parameter.
func columnValue(c int, s *policy.State) any {
	switch pgTypes[c] {
	case "timestamptz":
		return timestamp(timeColumn(c, s))
	case "int4":
		return int32(s.AttemptNo)
	}
	return textColumn(c, s)
}

func timeColumn(c int, s *policy.State) time.Time {
	switch c {
	case 0:
		return s.RefreshAt
	case 2:
		return s.AttemptAt
	case 4:
		return s.TimeoutAt
	case 5:
		return s.DisabledAt
	case 7:
		return s.FailingSince
	default:
		return s.LastSuccessAt
	}
}

func textColumn(c int, s *policy.State) pgtype.Text {
	switch c {
	case 1:
		return text(s.AttemptUID, attemptUIDLen)
	case 6:
		return text(s.DisabledReason, maxReasonLen)
	case 9:
		return text(s.LastError, maxReasonLen)
	default:
		return text(s.Status, maxStatusLen)
	}
}

// timestamp is how times go to the database: truncated to microseconds
// (pgx truncates too; PostgreSQL would round text input), NULL for the zero
// time.
func timestamp(t time.Time) pgtype.Timestamptz {
	if t.IsZero() {
		return pgtype.Timestamptz{}
	}
	return pgtype.Timestamptz{Time: t.UTC().Truncate(time.Microsecond), Valid: true}
}

// text is s for a varchar(max) column: NULL when empty, otherwise cutText.
func text(s string, max int) pgtype.Text {
	if s == "" {
		return pgtype.Text{}
	}
	return pgtype.Text{String: cutText(s, max), Valid: true}
}

// cutText is the one rule for texts of every driver (policy.Truncate:
// invalid UTF-8 replaced by U+FFFD, cut to at most max characters with "…"
// as the last). PostgreSQL text cannot hold NUL either, so NUL bytes are
// replaced by U+FFFD as well, before counting.
func cutText(s string, max int) string {
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\uFFFD")
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
