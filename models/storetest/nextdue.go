package storetest

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/refresher/refresher/models"
)

func testNextDue(t *testing.T, h Harness) {
	env := h.New(t)
	ctx := context.Background()
	tbl := items(t, env, KeyString)
	_, ok, err := env.Store.NextDue(ctx, tbl)
	must(t, err)
	eq(t, ok, false, "empty table")
	insert(t, env, "", base.Add(-time.Hour)) // NULL key: does not count
	insert(t, env, "never", time.Time{})
	_, ok, err = env.Store.NextDue(ctx, tbl)
	must(t, err)
	eq(t, ok, false, "only a NULL key and a NULL refresh_at")
	insert(t, env, "b", base.Add(time.Minute))
	insert(t, env, "a", base)
	next, ok, err := env.Store.NextDue(ctx, tbl)
	must(t, err)
	eq(t, ok, true)
	eq(t, next, base, "earliest refresh_at")
}

// testNextDueMany: one answer per table, in order, the same as NextDue's,
// also past a chunk (the same tables asked many times).
func testNextDueMany(t *testing.T, h Harness) {
	env := h.New(t)
	ctx := context.Background()
	tbl := items(t, env, KeyString)
	env.CreateItemsTable(t, "empty", KeyString)
	_, err := env.Store.Migrate(ctx, []string{"empty"}, io.Discard, false)
	must(t, err)
	empty := models.Table{Name: "empty", Key: "k"}
	next, err := env.Store.NextDueMany(ctx, nil)
	must(t, err)
	eq(t, len(next), 0, "no tables")
	insert(t, env, "", base.Add(-time.Hour)) // NULL key: does not count
	insert(t, env, "b", base.Add(time.Minute))
	insert(t, env, "a", base)
	var tables []models.Table
	for range models.NextDueChunk + 10 {
		tables = append(tables, tbl, empty)
	}
	next, err = env.Store.NextDueMany(ctx, tables)
	must(t, err)
	eq(t, len(next), len(tables), "answers")
	for i := range tables {
		want := models.Next{At: base, OK: true}
		if i%2 == 1 {
			want = models.Next{}
		}
		eq(t, next[i], want, fmt.Sprintf("table %d (%s)", i, tables[i].Name))
	}
}
