package pgstore

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/refresher/refresher/models"
)

// A citext key (an extension's type, whose arrays pgx cannot encode) is
// claimed and saved: its keys go as text[] cast to citext[]. Before, every
// Save failed ("unable to encode ... for unknown type") and the table's
// rows never ran.
func TestCitextKeySaves(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := testStore(t)
	exec(t, s, "CREATE EXTENSION IF NOT EXISTS citext")
	exec(t, s, "CREATE TABLE items_c (k citext PRIMARY KEY)")
	_, err := s.Migrate(ctx, []string{"items_c"}, io.Discard, false)
	must(t, err)
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	exec(t, s, "INSERT INTO items_c (k, refresh_at) VALUES ('a', $1), ('B', $1)", now.Add(-time.Hour))
	tbl := models.Table{Name: "items_c", Key: "k"}
	must(t, s.Tx(ctx, func(tx models.Tx) error {
		rows, err := tx.ClaimDue(ctx, tbl, now, models.Cursor{}, 10)
		if err != nil {
			return err
		}
		eq(t, len(rows), 2, "rows claimed")
		for i := range rows {
			rows[i].State.AttemptUID = "attempt-" + rows[i].Key
			rows[i].State.AttemptNo = 1 + i
			rows[i].State.TimeoutAt = now.Add(time.Hour)
		}
		return tx.Save(ctx, tbl, rows)
	}))
	var running int
	must(t, s.Pool().QueryRow(ctx, "SELECT COUNT(*) FROM items_c WHERE refresh_attempt_uid IS NOT NULL").Scan(&running))
	eq(t, running, 2, "rows started")
}
