package models

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/refresher/refresher/policy"
)

// maxSaveBatch is the most rows one UPDATE statement writes; larger batches
// are split. 1000 rows x 23 placeholders stays below MySQL's 65535 for a
// server-side prepared statement.
const maxSaveBatch = 1000

// Save writes the refresh state of each row (the 11 State columns; never
// refresh_rrule, which belongs to the application, nor any other column) in
// one UPDATE statement per up to 1000 rows. Keys that name no row are
// ignored. When a key occurs twice, the last row wins. Times are stored in
// UTC truncated to microseconds; texts longer than their column (1024
// characters for the reasons, 255 for the status) are cut and invalid UTF-8
// is replaced, so that one odd worker message cannot fail a batch in strict
// SQL mode.
//
// Call it on rows locked by ClaimDue or LockByKeys in the same transaction,
// and pass the Rows they returned (with State changed): those carry the
// row's primary key, and Save writes them by primary key rather than by
// Key. That matters for lock order: the write then needs no lock on the key
// column's index, which LockByKeys (and an application updating by that
// column) takes before the row's lock; writing by Key while holding the row
// would deadlock with them. Rows built by hand (only Key set) are written by
// Key in a separate statement.
func (tx *Tx) Save(ctx context.Context, t Table, rows []Row) error {
	q, err := tx.s.compile(ctx, t)
	if err != nil {
		return err
	}
	rows, _ = lastWins(rows, nil)
	for _, g := range groupByID(q, rows, nil) {
		for start := 0; start < len(g.rows); start += maxSaveBatch {
			end := min(start+maxSaveBatch, len(g.rows))
			query, args := caseUpdate(q, g.by, g.ids[start:end], g.rows[start:end], nil)
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
func (s *Store) SaveIfAttempt(ctx context.Context, t Table, rows []Row, attemptUIDs []string) (int, error) {
	if len(rows) != len(attemptUIDs) {
		return 0, fmt.Errorf("save rows of %s if attempt: %d rows but %d attempt UIDs", t.Name, len(rows), len(attemptUIDs))
	}
	q, err := s.compile(ctx, t)
	if err != nil {
		return 0, err
	}
	rows, attemptUIDs = lastWins(rows, attemptUIDs)
	written := 0
	for _, g := range groupByID(q, rows, attemptUIDs) {
		for start := 0; start < len(g.rows); start += maxSaveBatch {
			end := min(start+maxSaveBatch, len(g.rows))
			query, args := caseUpdate(q, g.by, g.ids[start:end], g.rows[start:end], g.guard[start:end])
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
	by    string // quoted column
	ids   []string
	rows  []Row
	guard []string
}

// groupByID splits rows into those that carry a primary key (written by
// it) and the others (written by Key), dropping empty groups.
func groupByID(q compiled, rows []Row, guard []string) []saveGroup {
	byID := saveGroup{by: q.id}
	byKey := saveGroup{by: q.key}
	for i, r := range rows {
		g := &byKey
		id := r.Key
		if q.id != "" && r.id != "" {
			g, id = &byID, r.id
		}
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

// caseUpdate builds one UPDATE of the state columns of rows, identified by
// column by (quoted) having the values ids:
//
//	UPDATE t SET c1 = CASE by WHEN ? THEN ? ... END, ... WHERE by IN (?, ...)
//	  [AND refresh_attempt_uid <=> CASE by WHEN ? THEN ? ... END]
//
// CASE rather than UPDATE ... JOIN JSON_TABLE: see BenchmarkSave for the
// measurements. Ids compare as strings against the column, whatever its
// type, with the column's own collation (parameters are coercible), so INT
// and CHAR keys in any character set work the same.
func caseUpdate(q compiled, by string, ids []string, rows []Row, guard []string) (string, []any) {
	n := len(rows)
	args := make([]any, 0, n*(2*len(stateColumns)+1)+2*len(guard))
	vals := make([][]any, n)
	for i, r := range rows {
		vals[i] = stateArgs(r.State)
	}
	var b strings.Builder
	b.Grow(n * 16 * (len(stateColumns) + 2))
	b.WriteString("UPDATE ")
	b.WriteString(q.table)
	b.WriteString(" SET ")
	for c, col := range stateColumns {
		if c > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "`%s` = CASE %s", col, by)
		for i := range rows {
			b.WriteString(" WHEN ? THEN ?")
			args = append(args, ids[i], vals[i][c])
		}
		b.WriteString(" END")
	}
	fmt.Fprintf(&b, " WHERE %s IN (", by)
	for i := range rows {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("?")
		args = append(args, ids[i])
	}
	b.WriteString(")")
	if guard != nil {
		fmt.Fprintf(&b, " AND `%s` <=> CASE %s", ColAttemptUID, by)
		for i := range rows {
			b.WriteString(" WHEN ? THEN ?")
			args = append(args, ids[i], nullString(guard[i], attemptUIDLen))
		}
		b.WriteString(" END")
	}
	return b.String(), args
}

// stateArgs returns the values of stateColumns for s, NULL as nil.
func stateArgs(s policy.State) []any {
	return []any{
		dbTime(s.RefreshAt),
		nullString(s.AttemptUID, attemptUIDLen),
		dbTime(s.AttemptAt),
		s.AttemptNo,
		dbTime(s.TimeoutAt),
		dbTime(s.DisabledAt),
		nullString(s.DisabledReason, maxReasonLen),
		dbTime(s.FailingSince),
		dbTime(s.LastSuccessAt),
		nullString(s.LastError, maxReasonLen),
		nullString(s.Status, maxStatusLen),
	}
}

// nullString is s for a VARCHAR(max) column: nil when empty, valid UTF-8,
// at most max characters.
func nullString(s string, max int) any {
	if s == "" {
		return nil
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if utf8.RuneCountInString(s) > max {
		s = string([]rune(s)[:max])
	}
	return s
}

// lastWins drops all but the last occurrence of each key, keeping order
// (and guard aligned with rows).
func lastWins(rows []Row, guard []string) ([]Row, []string) {
	last := make(map[string]int, len(rows))
	for i, r := range rows {
		last[r.Key] = i
	}
	if len(last) == len(rows) {
		return rows, guard
	}
	outRows := make([]Row, 0, len(last))
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
