package pgstore

import (
	"context"
	"io"
	"net/url"
	"testing"
	"time"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/models"
)

// TestSavesInEveryExecMode: Save, SaveIfAttempt and SaveSuccesses write
// their rows whatever default_query_exec_mode the URL names. In the modes
// that do not ask the server for the parameters' types (simple_protocol,
// exec: what PgBouncer's transaction pooling asks for), pgx looks each
// parameter's type up by its Go type, and finds none for the array
// parameters' own type (array): every save failed ("unable to encode ...
// for unknown type (OID 0)").
func TestSavesInEveryExecMode(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"cache_statement", "cache_describe", "describe_exec", "exec", "simple_protocol"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			u, err := url.Parse(testenv.PostgresURL(t))
			must(t, err)
			q := u.Query()
			q.Set("default_query_exec_mode", mode)
			u.RawQuery = q.Encode()
			s, err := Open(ctx, u.String(), 2)
			must(t, err)
			t.Cleanup(func() { _ = s.Close() })
			for _, typ := range []string{"bigint", "text"} {
				name := "items_" + typ
				exec(t, s, "CREATE TABLE "+name+" (k "+typ+" PRIMARY KEY)")
				_, err = s.Migrate(ctx, []string{name}, io.Discard, false)
				must(t, err)
				now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
				exec(t, s, "INSERT INTO "+name+" (k, refresh_at) VALUES (1, $1), (2, $1), (3, $1)", now.Add(-time.Hour))
				tbl := models.Table{Name: name, Key: "k"}

				var claimed []models.Row
				must(t, s.Tx(ctx, func(tx models.Tx) error {
					rows, err := tx.ClaimDue(ctx, tbl, now, models.Cursor{}, 10)
					if err != nil {
						return err
					}
					for i := range rows {
						rows[i].State.AttemptUID = "attempt-" + rows[i].Key
						rows[i].State.AttemptNo = 1
						rows[i].State.TimeoutAt = now.Add(time.Hour)
					}
					claimed = append(claimed, rows...)
					return tx.Save(ctx, tbl, rows)
				}))
				eq(t, len(claimed), 3, "rows claimed")

				// Undo the third's attempt; succeed the first two.
				undo := []models.Row{claimed[2]}
				undo[0].State.AttemptUID, undo[0].State.AttemptNo, undo[0].State.TimeoutAt = "", 0, time.Time{}
				n, err := s.SaveIfAttempt(ctx, tbl, undo, []string{claimed[2].State.AttemptUID})
				must(t, err)
				eq(t, n, 1, "rows SaveIfAttempt wrote")
				var succ []models.Success
				for _, r := range claimed[:2] {
					st := r.State
					st.AttemptUID, st.TimeoutAt, st.RefreshAt = "", time.Time{}, now.Add(24*time.Hour)
					succ = append(succ, models.Success{Key: r.Key, AttemptUID: r.State.AttemptUID, State: st})
				}
				must(t, s.Tx(ctx, func(tx models.Tx) error {
					wrote, err := tx.SaveSuccesses(ctx, tbl, now, succ)
					if err != nil {
						return err
					}
					eq(t, len(wrote), 2, "results of SaveSuccesses")
					if !wrote[0] || !wrote[1] {
						t.Errorf("SaveSuccesses wrote %v, want both", wrote)
					}
					return nil
				}))
				var running int
				must(t, s.Pool().QueryRow(ctx, "SELECT COUNT(*) FROM "+name+" WHERE refresh_attempt_uid IS NOT NULL").Scan(&running))
				eq(t, running, 0, "rows still running")
			}
		})
	}
}
