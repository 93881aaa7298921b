package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/models/storetest"
)

// BenchmarkSave writes 1000 changed rows in one transaction, on a file
// database, by rowid (claimed rows) and by key (rows built by hand): with
// Save's one UPDATE ... FROM json_each statement, and with one prepared
// UPDATE per row for comparison.
//
//	go test ./models/sqlitestore -run '^$' -bench . -benchtime 20x
func BenchmarkSave(b *testing.B) {
	const n = 1000
	for _, by := range []string{"rowid", "key"} {
		for _, strategy := range []string{"json", "prepared"} {
			b.Run(by+"/"+strategy, func(b *testing.B) {
				ctx := context.Background()
				s, err := Open(ctx, filepath.Join(b.TempDir(), "app.db"))
				must(b, err)
				defer s.Close()
				tbl := itemsTable(b, s, "TEXT")
				insertItems(b, s, n)
				rows := claim(b, s, tbl, base, time.Time{}, n)
				if by == "key" {
					for i := range rows {
						rows[i].Loaded = models.Loaded{}
					}
				}
				for it := 0; b.Loop(); it++ {
					for i := range rows {
						rows[i].State = fullState(i)
						rows[i].State.AttemptNo = it*n + i // every row changes
					}
					err := s.Tx(ctx, func(tx models.Tx) error {
						if strategy == "json" {
							return tx.Save(ctx, tbl, rows)
						}
						return savePrepared(ctx, tx.(*Tx).tx, by == "rowid", rows)
					})
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// savePrepared writes every state column of rows with one prepared UPDATE
// per row.
func savePrepared(ctx context.Context, tx *sql.Tx, byRowid bool, rows []models.Row) error {
	var set []string
	for _, c := range models.StateColumns {
		set = append(set, `"`+c.Name+`" = ?`)
	}
	where := `"k" = ?`
	if byRowid {
		where = "rowid = ?"
	}
	st, err := tx.PrepareContext(ctx, `UPDATE "items" SET `+strings.Join(set, ", ")+" WHERE "+where)
	if err != nil {
		return err
	}
	defer st.Close()
	n := len(models.StateColumns)
	args := make([]any, n+1)
	for i := range rows {
		for c := range n {
			args[c] = columnValue(&models.StateColumns[c], &rows[i].State)
		}
		args[n] = rows[i].Key
		if byRowid {
			args[n] = rows[i].Loaded.ID
		}
		if _, err := st.ExecContext(ctx, args...); err != nil {
			return err
		}
	}
	return nil
}

// BenchmarkClaim claims 1000 of 20000 due rows and starts them (Save of
// the 5 columns a start changes), the dispatcher's transaction.
func BenchmarkClaim(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "app.db"))
	must(b, err)
	defer s.Close()
	tbl := itemsTable(b, s, "TEXT")
	insertItems(b, s, 20000)
	for it := 0; b.Loop(); it++ {
		now := base.Add(time.Duration(it) * time.Second)
		err := s.Tx(ctx, func(tx models.Tx) error {
			rows, err := tx.ClaimDue(ctx, tbl, now, models.Cursor{}, 1000)
			if err != nil {
				return err
			}
			if len(rows) != 1000 {
				return fmt.Errorf("claimed %d rows", len(rows))
			}
			for i := range rows {
				st := &rows[i].State
				st.AttemptUID = fmt.Sprintf("att%017d", it)
				// refresh_at = now keeps the rows due, behind the unclaimed ones.
				st.AttemptAt, st.TimeoutAt, st.RefreshAt = now, now.Add(time.Hour), now
				st.AttemptNo++
			}
			return tx.Save(ctx, tbl, rows)
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// TestSaveUsesLookups: the bulk UPDATE looks each row up (by rowid, or the
// key's unique index) instead of scanning the table per JSON element.
func TestSaveUsesLookups(t *testing.T) {
	t.Parallel()
	s := harnesses[1].open(t)
	tbl := itemsTable(t, s, "TEXT")
	q, err := s.compile(context.Background(), s.DB(), tbl)
	must(t, err)
	r := &models.Row{Key: "1", State: fullState(1)}
	for _, byRowid := range []bool{true, false} {
		query, args := jsonUpdate(q, models.SaveGroup{ByID: byRowid, Cols: models.AllColumns, IDs: []string{"1", "2"}, Rows: []*models.Row{r, r}, Guard: []string{"g", "h"}}, nil)
		rows, err := s.DB().Query("EXPLAIN QUERY PLAN "+query, args...)
		must(t, err)
		var plan []string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			must(t, rows.Scan(&id, &parent, &notused, &detail))
			plan = append(plan, detail)
		}
		rows.Close()
		p := strings.Join(plan, "; ")
		if !strings.Contains(p, "SEARCH items USING") {
			t.Fatalf("byRowid=%v: no lookup in %s", byRowid, p)
		}
	}
}

// BenchmarkApplySuccesses compares a poller's two ways of applying 1000
// successes (storetest.BenchApplySuccesses).
func BenchmarkApplySuccesses(b *testing.B) {
	const n = 1000
	s, err := Open(context.Background(), filepath.Join(b.TempDir(), "app.db"))
	must(b, err)
	defer s.Close()
	tbl := itemsTable(b, s, "INTEGER")
	insertItems(b, s, n)
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprint(i + 1)
	}
	storetest.BenchApplySuccesses(b, s, tbl, keys)
}
