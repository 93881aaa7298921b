package mysqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/models/storetest"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/policy"
)

// caseUpdate builds one UPDATE of the state columns of rows, identified by
// column by (quoted) having the values ids:
//
//	UPDATE t SET c1 = CASE by WHEN ? THEN ? ... END, ... WHERE by IN (?, ...)
//	  [AND refresh_attempt_uid <=> CASE by WHEN ? THEN ? ... END]
//
// It is the alternative to jsonUpdate that BenchmarkSave measures against
// it, kept here and tested for correctness so that the comparison can be
// rerun on other servers. Ids compare as strings against the column, with
// the column's own collation (parameters are coercible), so it needs no
// column metadata; but each row is compared with every WHEN of every
// column, so its cost grows with the square of the batch.
func caseUpdate(q compiled, by string, ids []string, rows []models.Row, guard []string) (string, []any) {
	n := len(rows)
	args := make([]any, 0, n*(2*len(models.StateColumns)+1)+2*len(guard))
	vals := make([][]any, n)
	for i, r := range rows {
		vals[i] = stateArgs(r.State)
	}
	var b strings.Builder
	b.Grow(n * 16 * (len(models.StateColumns) + 2))
	b.WriteString("UPDATE ")
	b.WriteString(q.table)
	b.WriteString(" SET ")
	for c, col := range models.StateColumns {
		if c > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "`%s` = CASE %s", col.Name, by)
		for i := range rows {
			b.WriteString(" WHEN ? THEN ?")
			args = append(args, ids[i], vals[i][c])
		}
		b.WriteString(" END")
	}
	fmt.Fprintf(&b, " WHERE %s IN (", by)
	for i := range rows {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("?")
		args = append(args, ids[i])
	}
	b.WriteString(")")
	if guard != nil {
		fmt.Fprintf(&b, " AND `%s` <=> CASE %s", models.ColAttemptUID, by)
		for i := range rows {
			b.WriteString(" WHEN ? THEN ?")
			args = append(args, ids[i], nullText(attemptUIDColumn, guard[i]))
		}
		b.WriteString(" END")
	}
	return b.String(), args
}

type updateBuilder func(q compiled, by string, ids []string, rows []models.Row, guard []string) (string, []any)

var strategies = []struct {
	name  string
	build updateBuilder
}{{"case", caseUpdate}, {"json_table", func(q compiled, by string, ids []string, rows []models.Row, guard []string) (string, []any) {
	ptrs := make([]*models.Row, len(rows))
	for i := range rows {
		ptrs[i] = &rows[i]
	}
	return jsonUpdate(q, by, q.meta.cols[strings.ToLower(q.keyName)], q.meta.cols[models.ColAttemptUID], models.AllColumns, ids, ptrs, guard, nil)
}}}

// TestBulkUpdateStrategies checks that both strategies write every column
// correctly, NULLs and microseconds included, for INT and CHAR keys, and
// honour the attempt guard.
func TestBulkUpdateStrategies(t *testing.T) {
	t.Parallel()
	for _, st := range strategies {
		for _, keyType := range []string{"INT", "BIGINT UNSIGNED", "CHAR(20)", "VARCHAR(40) COLLATE utf8mb4_bin", "VARCHAR(40) CHARACTER SET latin1"} {
			t.Run(st.name+"/"+keyType, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				db := testDB(t)
				s := New(db)
				tbl := itemsTable(t, db, keyType)
				insertItems(t, db, 2000) // enough for the optimizer to prefer the index
				q, err := s.compile(ctx, tbl)
				must(t, err)
				rows := []models.Row{{Key: "1", State: fullState(1)}, {Key: "2"}, {Key: "3", State: fullState(3)}}
				query, args := st.build(q, q.key, []string{"1", "2", "3"}, rows, nil)
				_, err = db.ExecContext(ctx, query, args...)
				must(t, err)
				if st.name == "json_table" {
					// The join looks rows up by the key's unique index.
					eq(t, explainAccess(t, db, query, args), "eq_ref uk", "access to items")
				}
				got := lockAll(t, s, tbl, "1", "2", "3")
				for _, r := range rows {
					eq(t, got[r.Key].State, r.State, r.Key)
				}
				// Guarded: only row 1 still runs attempt fullState(1).AttemptUID.
				guard := []string{fullState(1).AttemptUID, "x", "y"}
				query, args = st.build(q, q.key, []string{"1", "2", "3"}, []models.Row{{Key: "1"}, {Key: "2", State: fullState(2)}, {Key: "3"}}, guard)
				res, err := db.ExecContext(ctx, query, args...)
				must(t, err)
				n, _ := res.RowsAffected()
				eq(t, n, int64(1), "guarded rows")
				got = lockAll(t, s, tbl, "1", "2", "3")
				eq(t, got["1"].State, policy.State{}, "1")
				eq(t, got["2"].State, policy.State{}, "2")
				eq(t, got["3"].State, fullState(3), "3")
			})
		}
	}
}

// BenchmarkSave writes the refresh state of 1000 rows in one statement per
// iteration and transaction, with each strategy and key type.
//
//	go test ./models -run '^$' -bench BenchmarkSave -benchtime 30x
func BenchmarkSave(b *testing.B) {
	const n = 1000
	for _, st := range strategies {
		for _, keyType := range []string{"INT", "CHAR(20)"} {
			b.Run(fmt.Sprintf("%s/%s/%d", st.name, keyType, n), func(b *testing.B) {
				ctx := context.Background()
				db, err := Open(ctx, testenv.MySQLDSN(b))
				must(b, err)
				defer db.Close()
				tbl := itemsTable(b, db, keyType)
				insertItems(b, db, n)
				q, err := New(db).compile(ctx, tbl)
				must(b, err)
				rows := make([]models.Row, n)
				ids := make([]string, n)
				for i := range rows {
					ids[i] = fmt.Sprint(i + 1)
					rows[i] = models.Row{Key: ids[i], State: fullState(i)}
				}
				b.ResetTimer()
				for it := 0; b.Loop(); it++ {
					for i := range rows {
						rows[i].State.AttemptNo = it // every row changes
					}
					query, args := st.build(q, q.key, ids, rows, nil)
					if err := inTx(ctx, db, query, args); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// explainAccess returns "type key" of the EXPLAIN row for table t.
func explainAccess(t *testing.T, db *sql.DB, query string, args []any) string {
	t.Helper()
	rows, err := db.Query("EXPLAIN "+query, args...)
	must(t, err)
	defer rows.Close()
	cols, err := rows.Columns()
	must(t, err)
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		must(t, rows.Scan(ptrs...))
		m := map[string]string{}
		for i, c := range cols {
			m[c] = vals[i].String
		}
		if m["table"] == "t" {
			return m["type"] + " " + m["key"]
		}
	}
	t.Fatalf("no EXPLAIN row for t")
	return ""
}

func inTx(ctx context.Context, db *sql.DB, query string, args []any) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n != 1000 {
		return fmt.Errorf("updated %d rows", n)
	}
	return tx.Commit()
}

// stateArgs returns the values of models.StateColumns for s, NULL as nil.
func stateArgs(s policy.State) []any {
	out := make([]any, len(models.StateColumns))
	for c := range models.StateColumns {
		out[c] = columnValue(&models.StateColumns[c], &s)
	}
	return out
}

// BenchmarkBuildUpdate measures building Save's statement for 1000 rows
// (no database): the per-row work of every batch, where allocations count.
// "start" changes the 5 columns a start touches, "all" every column.
//
//	go test ./models/mysqlstore -run '^$' -bench BenchmarkBuildUpdate -benchmem
func BenchmarkBuildUpdate(b *testing.B) {
	q, err := compileTable(models.Table{Name: "items", Key: "k"}, "")
	must(b, err)
	keyMeta := colMeta{dataType: "int"}
	for _, mode := range []string{"start", "all"} {
		b.Run(mode, func(b *testing.B) {
			const n = 1000
			rows := make([]models.Row, n)
			ptrs := make([]*models.Row, n)
			ids := make([]string, n)
			for i := range rows {
				ids[i] = fmt.Sprint(i + 1)
				rows[i] = models.Row{Key: ids[i], State: fullState(i)}
				rows[i].Loaded = models.Loaded{State: rows[i].State, OK: true}
				ptrs[i] = &rows[i]
			}
			for i := range rows {
				s := &rows[i].State
				s.AttemptUID = fmt.Sprintf("d1v5bqh6n88c7399%04d", i)
				s.AttemptNo++
				s.Status = ""
				if mode == "all" {
					s.RefreshAt = s.RefreshAt.Add(time.Duration(i) * time.Second)
					s.AttemptAt = s.AttemptAt.Add(time.Duration(i) * time.Second)
					s.TimeoutAt = s.TimeoutAt.Add(time.Duration(i) * time.Second)
					s.DisabledAt = s.DisabledAt.Add(time.Duration(i) * time.Second)
					s.FailingSince = s.FailingSince.Add(time.Duration(i) * time.Second)
					s.LastSuccessAt = s.LastSuccessAt.Add(time.Duration(i) * time.Second)
					s.DisabledReason = fmt.Sprint("reason ", i)
					s.LastError = fmt.Sprint("error ", i)
					s.Status = fmt.Sprint("status ", i)
				}
			}
			var cols models.ColumnSet
			for i := range rows {
				cols |= models.Changed(&rows[i])
			}
			b.ReportAllocs()
			for b.Loop() {
				query, _ := jsonUpdate(q, q.key, keyMeta, colMeta{dataType: "char"}, cols, ids, ptrs, nil, nil)
				if query == "" {
					b.Fatal("no query")
				}
			}
		})
	}
}

// BenchmarkApplySuccesses compares a poller's two ways of applying 1000
// successes (storetest.BenchApplySuccesses).
func BenchmarkApplySuccesses(b *testing.B) {
	const n = 1000
	db, err := Open(context.Background(), testenv.MySQLDSN(b))
	must(b, err)
	defer db.Close()
	tbl := itemsTable(b, db, "INT")
	insertItems(b, db, n)
	storetest.BenchApplySuccesses(b, New(db), tbl, benchKeys(n))
}

// benchKeys are the keys "1" to "n".
func benchKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprint(i + 1)
	}
	return keys
}
