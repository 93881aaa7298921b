package sqlitestore

import (
	"context"
	"database/sql"

	"github.com/refresher/refresher/models"
)

// saveRestoringOnce writes one SaveIfAttempt batch b (its UPDATE: query,
// args) that holds rows claimed by their one-shot priority, which the claim
// cleared: in one transaction, it first sets refresh_priority_once back to
// each such row's level, by key, while the row's attempt UID is still its
// guard and the column is NULL (a newer trigger wins), then runs the
// batch's UPDATE, which changes the attempt UID the first statements ask
// for. One statement per such row: only triggered rows of a failed push
// take this path. The caller holds the writer lock. It returns the rows the
// UPDATE wrote.
func (s *Store) saveRestoringOnce(ctx context.Context, q compiled, b models.SaveGroup, query string, args []any) (int, error) {
	restore := `UPDATE ` + q.table + ` SET "` + models.ColPriorityOnce + `" = ? WHERE ` + q.key + ` = ? AND "` +
		models.ColAttemptUID + `" IS ? AND "` + models.ColPriorityOnce + `" IS NULL`
	n := 0
	err := models.InSQLTx(ctx, s.db, nil, func(tx *sql.Tx) error {
		for i, r := range b.Rows {
			if r.Priority.Source != models.PriorityOnce {
				continue
			}
			if _, err := tx.ExecContext(ctx, restore, r.Priority.Level, r.Key, guardValue(b.Guard[i])); err != nil {
				return err
			}
		}
		var err error
		n, err = models.RowsAffected(tx.ExecContext(ctx, query, args...))
		return err
	})
	return n, err
}

// prioritized reports whether q's table has the priority columns with
// their indexes (migration 0004), as the claim asks.
func (q compiled) prioritized() bool {
	return q.meta.priorityIndex != "" && q.meta.priorityOnceIndex != ""
}

// guardValue is an attempt UID guard as a statement argument: nil (NULL)
// for "".
func guardValue(uid string) any {
	if uid == "" {
		return nil
	}
	return attemptUIDColumn.Fit(uid)
}
