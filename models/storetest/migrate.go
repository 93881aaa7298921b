package storetest

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/refresher/refresher/models"
)

func testMigrateTwice(t *testing.T, h Harness) {
	env := h.New(t)
	ctx := context.Background()
	env.CreateItemsTable(t, "items", KeyString)
	env.CreateItemsTable(t, "more", KeyInt)
	r, err := env.Store.Migrate(ctx, []string{"items", "more"}, io.Discard, false)
	must(t, err)
	eq(t, len(r.Tables), 2)
	for _, tm := range r.Tables {
		eq(t, len(tm.Applied), 5, "migrations applied to ", tm.Table)
		eq(t, len(tm.Applied[0].Added), 12, "columns added to ", tm.Table, ": ", tm.Applied[0].Added)
		eq(t, len(tm.Applied[1].Added), 1, "index added to ", tm.Table)
		eq(t, len(tm.Applied[2].Added), 4, "count indexes added to ", tm.Table)
		eq(t, len(tm.Applied[3].Added), 4, "priority columns and indexes added to ", tm.Table)
		eq(t, tm.Warnings, []string(nil))
	}
	for _, name := range []string{"items", "more"} {
		must(t, env.Store.Check(ctx, models.Table{Name: name, Key: "k"}))
	}
	var out strings.Builder
	r, err = env.Store.Migrate(ctx, []string{"items", "more"}, &out, false)
	must(t, err)
	for _, tm := range r.Tables {
		eq(t, tm.UpToDate(), true, "second run: ", tm)
	}
	eq(t, out.String(), "items: up to date\nmore: up to date\n")
}

func testMigrateExisting(t *testing.T, h Harness) {
	env := h.New(t)
	ctx := context.Background()
	env.CreateItemsTable(t, "items", KeyString)
	env.Exec(t, "ALTER TABLE items ADD COLUMN refresh_status VARCHAR(255) NULL")
	env.Exec(t, "ALTER TABLE items ADD COLUMN refresh_attempt_no INT NOT NULL DEFAULT 0")
	env.Exec(t, "INSERT INTO items (k, refresh_status) VALUES ('a', 'kept')")
	r, err := env.Store.Migrate(ctx, []string{"items"}, io.Discard, false)
	must(t, err)
	am := r.Tables[0].Applied[0]
	eq(t, len(am.Added), 10, "columns added: ", am.Added)
	eq(t, slices.Sorted(slices.Values(am.Existing)), []string{"column refresh_attempt_no", "column refresh_status"})
	tbl := models.Table{Name: "items", Key: "k"}
	must(t, env.Store.Check(ctx, tbl))
	eq(t, lock(t, env.Store, tbl, "a")["a"].State.Status, "kept", "existing data kept")
	r, err = env.Store.Migrate(ctx, []string{"items"}, io.Discard, false)
	must(t, err)
	eq(t, r.Tables[0].UpToDate(), true)
}

func testMigrateDryRun(t *testing.T, h Harness) {
	env := h.New(t)
	ctx := context.Background()
	env.CreateItemsTable(t, "items", KeyString)
	var out strings.Builder
	r, err := env.Store.Migrate(ctx, []string{"items"}, &out, true)
	must(t, err)
	eq(t, len(r.Tables[0].Applied), 5, "migrations it would apply")
	for _, want := range []string{"refresh_attempt_uid", "refresh_rrule", "refresher_schema_migrations"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("dry run output lacks %q:\n%s", want, out.String())
		}
	}
	if err := env.Store.Check(ctx, models.Table{Name: "items", Key: "k"}); err == nil {
		t.Fatal("the dry run added the columns")
	}
}

func testMigrateMissingTable(t *testing.T, h Harness) {
	env := h.New(t)
	env.CreateItemsTable(t, "items", KeyString)
	_, err := env.Store.Migrate(context.Background(), []string{"items", "nope"}, io.Discard, false)
	if err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("Migrate of a missing table: %v", err)
	}
	if err := env.Store.Check(context.Background(), models.Table{Name: "items", Key: "k"}); err == nil {
		t.Fatal("Migrate changed a table before finding that another is missing")
	}
}
