package mysqlstore

import (
	"context"
	"testing"
	"time"

	"github.com/refresher/refresher/models"
)

// TestLevelsWithoutPriorityColumns: on a table without migration 0004's
// columns, Backlog and AlertsByLevel report one level, the kind's, from
// the whole table (models.CountByPriority and AlertsByPriority's
// unprioritized branch, with this driver's SQL).
func TestLevelsWithoutPriorityColumns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testDB(t)
	tbl := itemsTable(t, db, "CHAR(20)")
	exec(t, db, "ALTER TABLE items DROP INDEX idx_refresh_priority, DROP INDEX idx_refresh_priority_once, DROP INDEX idx_refresh_priority_attempt")
	exec(t, db, "ALTER TABLE items DROP COLUMN refresh_priority, DROP COLUMN refresh_priority_once")
	insertItem(t, db, "a", base.Add(-time.Hour))
	insertItem(t, db, "b", base.Add(-time.Minute))
	insertItem(t, db, "c", base.Add(time.Hour))
	exec(t, db, "UPDATE items SET refresh_attempt_no = 3 WHERE k = 'c'")
	tbl.Priority = 7
	s := New(db)

	backlog, err := s.Backlog(ctx, tbl, base, nil)
	must(t, err)
	eq(t, backlog, []models.LevelCount{{Level: 7, Due: 2}}, "backlog")
	alerts, err := s.AlertsByLevel(ctx, tbl, base)
	must(t, err)
	eq(t, alerts, []models.LevelAlert{{Level: 7, OldestDue: base.Add(-time.Hour), MaxAttemptNo: 3}}, "alerts")
}
