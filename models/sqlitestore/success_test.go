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

// TestSaveSuccessesLeavesFailingSinceAlone: a success clears
// refresh_failing_since; SaveSuccesses first writes the rows where it is
// NULL already without setting it (which would rewrite its two indexes'
// entries for nothing), then the failing rows with it, and says which it
// wrote in a batch that mixes them with rows it must not write.
func TestSaveSuccessesLeavesFailingSinceAlone(t *testing.T) {
	each(t, func(t *testing.T, h harness) {
		ctx := context.Background()
		s := h.open(t)
		tbl := itemsTable(t, s, "INTEGER")
		keys := []string{"1", "2", "3", "4"}
		for _, k := range keys {
			insertItem(t, s, k, base)
		}
		now := base.Add(time.Minute)
		running := make([]models.Row, len(keys))
		for i, k := range keys {
			st := policy.Policy{}.Start(policy.State{RefreshAt: base}, base, "d1v5bqh6n88c7389a00"+string(rune('a'+i)))
			if k == "2" || k == "4" {
				st.FailingSince, st.LastError, st.AttemptNo = base.Add(-time.Hour), "boom", 3
			}
			running[i] = models.Row{Key: k, State: st}
		}
		must(t, s.Tx(ctx, func(tx models.Tx) error { return tx.Save(ctx, tbl, running) }))

		w, err := policy.Succeeded(policy.Result{Type: policy.ResultSuccess}, now, everyMinuteSchedule{})
		must(t, err)
		q, err := s.compile(ctx, s.DB(), tbl)
		must(t, err)
		r := &models.Row{Key: "1", State: w}
		stmts := successUpdates(q, models.SaveGroup{Cols: models.SuccessColumns, IDs: []string{"1", "2"}, Rows: []*models.Row{r, r}, Guard: []string{"g", "h"}}, now)
		eq(t, len(stmts), 2, "statements")
		set := func(query string) string { // the SET clause
			_, set, _ := strings.Cut(query, " SET ")
			return set[:strings.Index(set, " FROM ")]
		}
		if strings.Contains(set(stmts[0].query), models.ColFailingSince) || !strings.Contains(stmts[0].query, `"`+models.ColFailingSince+`" IS ?`) {
			t.Fatalf("the first UPDATE should leave %s out of its SET and ask for its value: %s", models.ColFailingSince, stmts[0].query)
		}
		if !strings.Contains(set(stmts[1].query), models.ColFailingSince) {
			t.Fatalf("the second UPDATE should set %s: %s", models.ColFailingSince, stmts[1].query)
		}

		succ := make([]models.Success, len(keys))
		for i, k := range keys {
			succ[i] = models.Success{Key: k, AttemptUID: running[i].State.AttemptUID, State: w}
		}
		succ[3].AttemptUID = "d1v5bqh6n88c7389zzzz" // another attempt's: left alone
		var written []bool
		must(t, s.Tx(ctx, func(tx models.Tx) (err error) {
			written, err = tx.SaveSuccesses(ctx, tbl, now, succ)
			return err
		}))
		eq(t, written, []bool{true, true, true, false})
		got := lockAll(t, s, tbl, keys...)
		for i, k := range keys[:3] {
			eq(t, got[k].State, policy.WithSuccess(running[i].State, w), "written:", k)
		}
		eq(t, got["4"].State, running[3].State, "left alone: 4")

		// Every row failing: the first UPDATE writes none, the second all.
		for i := range running[:2] {
			running[i].State = policy.Policy{}.Start(policy.State{RefreshAt: base, FailingSince: base, LastError: "x"}, base, "d1v5bqh6n88c7389b00"+string(rune('a'+i)))
			succ[i].AttemptUID = running[i].State.AttemptUID
		}
		must(t, s.Tx(ctx, func(tx models.Tx) error { return tx.Save(ctx, tbl, running[:2]) }))
		must(t, s.Tx(ctx, func(tx models.Tx) (err error) {
			written, err = tx.SaveSuccesses(ctx, tbl, now, succ[:2])
			return err
		}))
		eq(t, written, []bool{true, true})
		got = lockAll(t, s, tbl, keys[:2]...)
		for i, k := range keys[:2] {
			eq(t, got[k].State, policy.WithSuccess(running[i].State, w), "written:", k)
		}
	})
}
