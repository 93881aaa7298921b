package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/refresher/refresher/models"
)

// saveRestoringOnce writes one SaveIfAttempt batch b (its UPDATE: query,
// args) that holds rows claimed by their one-shot priority, which the claim
// cleared: in one transaction, it first sets refresh_priority_once back to
// each such row's level, by key, while the row's attempt UID is still its
// guard and the column is NULL (a newer trigger wins), then runs the
// batch's UPDATE, which changes the attempt UID the first statements ask
// for. One statement per such row: only triggered rows of a failed push
// take this path. It returns the rows the UPDATE wrote.
func (s *Store) saveRestoringOnce(ctx context.Context, q compiled, b models.SaveGroup, query string, args []any) (int, error) {
	restore := `UPDATE ` + q.table + ` SET "` + models.ColPriorityOnce + `" = $2 WHERE ` + q.keyType.match(q.key, "$1") +
		` AND "` + models.ColAttemptUID + `" IS NOT DISTINCT FROM $3::text AND "` + models.ColPriorityOnce + `" IS NULL`
	n := 0
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		for i, r := range b.Rows {
			keys := q.keyType.filter([]string{r.Key})
			if r.Priority.Source != models.PriorityOnce || len(keys) == 0 {
				continue
			}
			var guard any
			if b.Guard[i] != "" {
				guard = attemptUIDColumn.Fit(b.Guard[i])
			}
			if _, err := tx.Exec(ctx, restore, keys, r.Priority.Level, guard); err != nil {
				return err
			}
		}
		tag, err := tx.Exec(ctx, query, s.encodable(args)...)
		n = int(tag.RowsAffected())
		return err
	})
	return n, err
}
