package mysqlstore

import (
	"context"

	"github.com/refresher/refresher/models"
)

// saveRestoringOnce writes one SaveIfAttempt batch b that holds rows
// claimed by their one-shot priority (models.SaveRestoringOnce), with this
// driver's statement that sets refresh_priority_once back.
func (s *Store) saveRestoringOnce(ctx context.Context, q compiled, b models.SaveGroup, query string, args []any) (int, error) {
	restore := "UPDATE " + q.table + " SET `" + models.ColPriorityOnce + "` = ? WHERE " + q.key + " = ? AND `" +
		models.ColAttemptUID + "` <=> ? AND `" + models.ColPriorityOnce + "` IS NULL"
	return models.SaveRestoringOnce(ctx, s.db, b, restore, guardValue, query, args)
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
