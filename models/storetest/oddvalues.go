package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/refresher/refresher/models"
)

// oddKeys are keys that some key columns cannot hold, by the key type they
// are tried with: a character latin1 lacks (MySQL's KeyNarrow), text no
// PostgreSQL column holds (a NUL, invalid UTF-8), and text that is no
// integer, or only starts like one, or is out of range (MySQL compares
// "1abc" with an integer column as 1). Each must name no row, like a key
// of no row: a poller dead-letters its result as an unknown model instead
// of failing its batch, or applying it to row 1.
var oddKeys = []struct {
	key string
	typ KeyType
}{
	{"💥", KeyNarrow},
	{"x\xff", KeyNarrow},
	{"a\x00b", KeyString},
	{"\xff", KeyString},
	{"abc", KeyInt},
	{"1abc", KeyInt},
	{"99999999999999999999", KeyInt},
}

func testOddKey(t *testing.T, h Harness) {
	for _, odd := range oddKeys {
		t.Run(fmt.Sprintf("%q", odd.key), func(t *testing.T) {
			t.Parallel()
			env := h.New(t)
			ctx := context.Background()
			tbl := items(t, env, odd.typ)
			insert(t, env, "1", base)
			locked := func(keys ...string) []string {
				t.Helper()
				var got map[string]models.Row
				must(t, env.Store.Tx(ctx, func(tx models.Tx) (err error) {
					got, err = tx.LockByKeys(ctx, tbl, keys)
					return err
				}))
				return slices.Sorted(mapsKeys(got))
			}
			eq(t, locked(odd.key), []string(nil), "the odd key alone finds nothing and fails nothing")
			eq(t, locked(odd.key, "1"), []string{"1"}, "the odd key beside another finds only the other")
			must(t, save(env.Store, tbl, models.Row{Key: "1", State: fullState(2)}))
			must(t, save(env.Store, tbl, models.Row{Key: odd.key, State: fullState(1)}))
			eq(t, lock(t, env.Store, tbl, "1")["1"].State, fullState(2), "saving by the odd key writes no row")
			must(t, save(env.Store, tbl, models.Row{Key: odd.key, State: fullState(1)}, models.Row{Key: "1", State: fullState(3)}))
			eq(t, lock(t, env.Store, tbl, "1")["1"].State, fullState(3), "the other row of the batch is saved")
			n, err := env.Store.SaveIfAttempt(ctx, tbl, []models.Row{{Key: odd.key, State: fullState(1)}}, []string{fullState(3).AttemptUID})
			must(t, err)
			eq(t, n, 0, "SaveIfAttempt by the odd key writes nothing")
			eq(t, lock(t, env.Store, tbl, "1")["1"].State, fullState(3), "SaveIfAttempt by the odd key writes no row")
		})
	}
	// A key a narrow column holds, that is not ASCII: found, so that the
	// check does not refuse more than the column does.
	env := h.New(t)
	tbl := items(t, env, KeyNarrow)
	insert(t, env, "é€", base)
	eq(t, slices.Sorted(mapsKeys(lock(t, env.Store, tbl, "é€", "💥"))), []string{"é€"}, "a key the narrow column holds is found")
	must(t, save(env.Store, tbl, models.Row{Key: "é€", State: fullState(4)}))
	eq(t, lock(t, env.Store, tbl, "é€")["é€"].State, fullState(4), "and saved by key")
}

func testZeroDate(t *testing.T, h Harness) {
	if h.ZeroDate == nil {
		t.Skip("no zero dates in this database")
	}
	env := h.New(t)
	ctx := context.Background()
	tbl := items(t, env, KeyInt)
	h.ZeroDate(t, env, "items", "1")
	var claimed []models.Row
	must(t, env.Store.Tx(ctx, func(tx models.Tx) (err error) {
		if claimed, err = tx.ClaimDue(ctx, tbl, base, models.Cursor{}, 10); err != nil {
			return err
		}
		return tx.Save(ctx, tbl, claimed) // unchanged: RefreshAt stays zero
	}))
	eq(t, len(claimed), 1, "zero date claimed")
	_, ok, err := env.Store.NextDue(ctx, tbl)
	must(t, err)
	eq(t, ok, false, "zero date replaced by NULL")
}
