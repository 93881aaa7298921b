package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/refresher/refresher/models"
)

// benchTable is the kind's table in the benchmark's own database.
const benchTable = "bench_models"

// farFuture is refresh_at of rows that are not due in a run.
var farFuture = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// plan says which rows are due in a run and when. The due set is spread
// evenly over the table's ids: id is due when id*due/rows (integer
// division) grows at id, and that value is its rank, 1..due. Rows with
// rank <= active are due at base + rank*step; the other due rows and all
// the rest of the table are not due (2030).
type plan struct {
	rows, due, active int64
	base              time.Time
	step              time.Duration
}

func (p *plan) rank(id int64) (int64, bool) {
	if id < 1 || id > p.rows {
		return 0, false
	}
	r := id * p.due / p.rows
	return r, r > (id-1)*p.due/p.rows
}

// refreshAt returns the refresh_at the plan gave row id, if it is active.
func (p *plan) refreshAt(id int64) (time.Time, bool) {
	r, ok := p.rank(id)
	if !ok || r > p.active {
		return time.Time{}, false
	}
	return p.base.Add(time.Duration(r) * p.step), true
}

// resetState is the SET list that gives a row a fresh state (never
// refreshed); every store's applyPlan uses it.
const resetState = `refresh_attempt_uid = NULL, refresh_attempt_at = NULL, refresh_attempt_no = 0,
		refresh_timeout_at = NULL, refresh_disabled_until_update = NULL,
		refresh_disabled_user_friendly_reason = NULL, refresh_failing_since = NULL,
		refresh_last_success_at = NULL, refresh_last_error = NULL, refresh_status = NULL,
		refresh_priority_once = NULL`

// checkPlan checks that exactly p.active rows are due by the end of p;
// countBefore counts the rows with refresh_at <= its argument.
func checkPlan(ctx context.Context, p *plan, countBefore func(time.Time) (int64, error)) error {
	n, err := countBefore(p.base.Add(time.Duration(p.active+1) * p.step))
	if err != nil {
		return fmt.Errorf("count planned rows: %w", err)
	}
	if n != p.active {
		return fmt.Errorf("reset due rows: %d rows planned, want %d", n, p.active)
	}
	return nil
}

// appliedQuery counts the rows whose result was applied since the
// parameter named param.
func appliedQuery(param string) string {
	return "SELECT COUNT(*) FROM " + benchTable + " WHERE refresh_last_success_at >= " + param +
		" AND refresh_attempt_uid IS NULL AND refresh_attempt_no = 0"
}

var stateColumnsForExplain = []string{
	models.ColRefreshAt, models.ColAttemptUID, models.ColAttemptAt, models.ColAttemptNo, models.ColTimeoutAt,
	models.ColDisabledUntil, models.ColDisabledReason, models.ColFailingSince,
	models.ColLastSuccessAt, models.ColLastError, models.ColStatus,
}

func quoteAll(cols []string, quote string) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = quote + c + quote
	}
	return out
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
