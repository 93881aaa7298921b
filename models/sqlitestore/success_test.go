package sqlitestore

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
)

// TestSaveSuccessesByIntegerPrimaryKey: when the key column is the
// INTEGER PRIMARY KEY, SaveSuccesses matches a key by value alone (no
// CAST of every row's key to text), sends only the keys SQLite would
// print, and still writes nothing under another spelling of a key.
func TestSaveSuccessesByIntegerPrimaryKey(t *testing.T) {
	each(t, func(t *testing.T, h harness) {
		ctx := context.Background()
		s := h.open(t)
		exec(t, s, "CREATE TABLE ids (id INTEGER PRIMARY KEY, input_url VARCHAR(255) NULL)")
		_, err := s.Migrate(ctx, []string{"ids"}, io.Discard, false)
		must(t, err)
		tbl := models.Table{Name: "ids", Key: "id", Payload: []string{"input_url"}}
		keys := []string{"42", "-7", "9223372036854775807"}
		for _, k := range keys {
			exec(t, s, "INSERT INTO ids (id, refresh_at) VALUES (?, ?)", k, dbTime(base))
		}
		now := base.Add(time.Minute)
		running := make([]models.Row, len(keys))
		for i, k := range keys {
			running[i] = models.Row{Key: k, State: policy.Policy{}.Start(policy.State{RefreshAt: base}, base, "d1v5bqh6n88c7389a00"+string(rune('a'+i)))}
		}
		must(t, s.Tx(ctx, func(tx models.Tx) error { return tx.Save(ctx, tbl, running) }))

		q, err := s.compile(ctx, s.DB(), tbl)
		must(t, err)
		eq(t, q.meta.intKey, true, "the key is the INTEGER PRIMARY KEY")
		r := &models.Row{Key: "42"}
		query, _ := jsonUpdate(q, models.SaveGroup{Cols: models.SuccessColumns, IDs: []string{"42"}, Rows: []*models.Row{r}, Guard: []string{"g"}}, &now)
		if strings.Contains(query, "CAST(") {
			t.Fatalf("the success UPDATE casts each row's INTEGER PRIMARY KEY to text: %s", query)
		}

		w, err := policy.Succeeded(policy.Result{Type: policy.ResultSuccess}, now, everyMinuteSchedule{})
		must(t, err)
		success := func(key string, i int) models.Success {
			return models.Success{Key: key, AttemptUID: running[i].State.AttemptUID, State: w}
		}
		save := func(succ ...models.Success) (written []bool) {
			must(t, s.Tx(ctx, func(tx models.Tx) (err error) {
				written, err = tx.SaveSuccesses(ctx, tbl, now, succ)
				return err
			}))
			return written
		}
		for _, odd := range []string{"042", "+42", " 42", "42.0", "4.2e1", "0x2A", "-07", "-0"} {
			eq(t, save(success(odd, 0)), []bool{false}, "written:", odd)
		}
		eq(t, save(success("9223372036854775808", 2)), []bool{false}, "beyond 64 bits")
		eq(t, lockAll(t, s, tbl, "42")["42"].State, running[0].State, "left alone by the other spellings")

		written := save(success("042", 0), success("42", 0), success("-7", 1), success("9223372036854775807", 2))
		eq(t, written, []bool{false, true, true, true})
		got := lockAll(t, s, tbl, keys...)
		for i, k := range keys {
			eq(t, got[k].State, policy.WithSuccess(running[i].State, w), "written:", k)
		}
	})
}

type everyMinuteSchedule struct{}

func (everyMinuteSchedule) Next(after time.Time) time.Time {
	return after.Truncate(time.Minute).Add(time.Minute)
}
