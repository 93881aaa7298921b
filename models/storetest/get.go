package storetest

import (
	"context"
	"testing"

	"github.com/refresher/refresher/internal/payload"
	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
)

// testGet: Inspector.Get reads one row with its state, its rule and the
// payload columns asked for, and finds nothing for a key no row has (nor
// for text on an integer key).
func testGet(t *testing.T, h Harness) {
	env := h.New(t)
	in := env.Store
	ctx := context.Background()
	tbl := items(t, env, KeyInt)
	insert(t, env, "7", base)
	insert(t, env, "8", base)
	must(t, save(env.Store, tbl, models.Row{Key: "7", State: fullState(1)}))

	row, ok, err := in.Get(ctx, tbl, "7")
	must(t, err)
	eq(t, ok, true, "found")
	eq(t, row.Key, "7")
	eq(t, row.State, fullState(1), "state")
	eq(t, row.Payload, payload.Fields{{Name: "input_url", Value: "https://example.com/7"}, {Name: "size", Value: int64(7)}}, "payload, in the table's order")

	row, ok, err = in.Get(ctx, models.Table{Name: tbl.Name, Key: tbl.Key, Payload: []string{"input_url"}}, "8")
	must(t, err)
	eq(t, ok, true, "found")
	eq(t, row.Payload, payload.Fields{{Name: "input_url", Value: "https://example.com/8"}}, "only the payload asked for")
	eq(t, row.State, policy.State{RefreshAt: base}, "state")

	for _, key := range []string{"404", "abc", "", "7abc", " 7x", "7💥"} {
		_, ok, err = in.Get(ctx, tbl, key)
		must(t, err)
		eq(t, ok, false, "key "+key)
	}
}
