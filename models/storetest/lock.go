package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
)

func testLockByKeys(t *testing.T, h Harness) {
	env := h.New(t)
	tbl := items(t, env, KeyInt)
	insert(t, env, "7", base)
	insert(t, env, "10", time.Time{})
	got := lock(t, env.Store, tbl, "10", "7", "7", "404")
	eq(t, slices.Sorted(mapsKeys(got)), []string{"10", "7"}, "found rows")
	eq(t, got["10"].State, policy.State{}, "NULL refresh_at")
	eq(t, got["7"].Key, "7")
	eq(t, len(lock(t, env.Store, tbl)), 0, "no keys")
}

func mapsKeys(m map[string]models.Row) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func testLockByKeysWaits(t *testing.T, h Harness) {
	env := h.New(t)
	ctx := context.Background()
	tbl := items(t, env, KeyString)
	insert(t, env, "a", base)
	held := make(chan struct{})
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- env.Store.Tx(ctx, func(tx models.Tx) error {
			if _, err := tx.ClaimDue(ctx, tbl, base, models.Cursor{}, 1); err != nil {
				return err
			}
			close(held)
			<-release
			return nil
		})
	}()
	<-held
	waited := make(chan map[string]models.Row, 1)
	go func() { waited <- lock(t, env.Store, tbl, "a") }()
	select {
	case <-waited:
		t.Fatal("LockByKeys did not wait for the row another transaction holds")
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	must(t, <-done)
	eq(t, len(<-waited), 1, "row locked once released")
}

func testTxRollsBack(t *testing.T, h Harness) {
	env := h.New(t)
	ctx := context.Background()
	tbl := items(t, env, KeyString)
	insert(t, env, "a", base)
	boom := errors.New("boom")
	err := env.Store.Tx(ctx, func(tx models.Tx) error {
		rows, err := tx.ClaimDue(ctx, tbl, base, models.Cursor{}, 1)
		if err != nil {
			return err
		}
		rows[0].State.Status = "lost"
		if err := tx.Save(ctx, tbl, rows); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Tx returned %v, want fn's error", err)
	}
	func() {
		defer func() { _ = recover() }()
		_ = env.Store.Tx(ctx, func(tx models.Tx) error {
			rows, _ := tx.ClaimDue(ctx, tbl, base, models.Cursor{}, 1)
			rows[0].State.Status = "lost"
			_ = tx.Save(ctx, tbl, rows)
			panic("boom")
		})
	}()
	eq(t, lock(t, env.Store, tbl, "a")["a"].State.Status, "", "rolled back")
}
