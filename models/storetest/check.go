package storetest

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
)

func testCheck(t *testing.T, h Harness) {
	env := h.New(t)
	ctx := context.Background()
	tbl := models.Table{Name: "items", Key: "k", Payload: []string{"input_url", "size"}}
	err := env.Store.Check(ctx, tbl)
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("Check of a missing table: %v, want an error saying it does not exist", err)
	}
	env.CreateItemsTable(t, "items", KeyString)
	err = env.Store.Check(ctx, models.Table{Name: "items", Key: "input_url", Payload: []string{"nope", "size"}})
	for _, want := range []string{"refresher migrate", "refresh_at", "refresh_status", "unique", `"nope"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("Check of an unmigrated table: %v, want it to mention %q", err, want)
		}
	}
	_, err = env.Store.Migrate(ctx, []string{"items"}, io.Discard, false)
	must(t, err)
	must(t, env.Store.Check(ctx, tbl))
	err = env.Store.Check(ctx, models.Table{Name: "items", Key: "missing"})
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("Check with a missing key column: %v", err)
	}
}

func testClassify(t *testing.T, h Harness) {
	env := h.New(t)
	ctx := context.Background()
	tbl := items(t, env, KeyString)
	insert(t, env, "a", base)
	insert(t, env, "b", base)
	s := env.Store
	eq(t, s.Classify(&net.OpError{Op: "read", Err: errors.New("connection reset by peer")}), models.Transient, "network error")
	eq(t, s.Classify(context.DeadlineExceeded), models.Transient, "deadline")

	env.Exec(t, "ALTER TABLE items ADD CONSTRAINT status_ok CHECK (refresh_status IS NULL OR refresh_status <> 'refuse me')")
	err := save(s, tbl, models.Row{Key: "a", State: policy.State{RefreshAt: base, Status: "refuse me"}})
	if err == nil {
		t.Fatal("a value the CHECK constraint refuses was saved")
	}
	eq(t, s.Classify(err), models.ValueRefused, "CHECK constraint: ", err)
	must(t, save(s, tbl, models.Row{Key: "b", State: policy.State{RefreshAt: base, Status: "fine"}}))

	env.Exec(t, "DROP TABLE items")
	err = save(s, tbl, models.Row{Key: "b", State: policy.State{RefreshAt: base}})
	if err == nil {
		t.Fatal("save into a dropped table: no error")
	}
	eq(t, s.Classify(err), models.TableRefused, "missing table on save: ", err)
	err = s.Tx(ctx, func(tx models.Tx) error {
		_, err := tx.ClaimDue(ctx, tbl, base, models.Cursor{}, 10)
		return err
	})
	eq(t, s.Classify(err), models.TableRefused, "missing table on claim: ", err)
	_, _, err = s.NextDue(ctx, tbl)
	eq(t, s.Classify(err), models.TableRefused, "missing table on next due: ", err)
	_, err = s.NextDueMany(ctx, []models.Table{tbl})
	eq(t, s.Classify(err), models.TableRefused, "missing table on next due of many: ", err)
	_, err = s.SaveIfAttempt(ctx, tbl, []models.Row{{Key: "b"}}, []string{""})
	eq(t, s.Classify(err), models.TableRefused, "missing table on save if attempt: ", err)

	// A missing column, on a table the store has not seen yet.
	env.CreateItemsTable(t, "other", KeyString)
	_, err = s.Migrate(ctx, []string{"other"}, io.Discard, false)
	must(t, err)
	env.Exec(t, "ALTER TABLE other DROP COLUMN refresh_status")
	other := models.Table{Name: "other", Key: "k"}
	err = save(s, other, models.Row{Key: "x", State: policy.State{Status: "s"}})
	if err == nil {
		t.Fatal("save into a table without refresh_status: no error")
	}
	eq(t, s.Classify(err), models.TableRefused, "missing column: ", err)
}
