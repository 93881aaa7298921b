package pgstore

import (
	"bytes"
	"context"
	"testing"
	"time"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
)

// BigTable is an application's model embedding the refresh columns.
type BigTable struct {
	ID       uint
	UID      string `gorm:"size:20;uniqueIndex"`
	InputURL string
	models.Refresh
}

// OtherTable is a second model embedding the refresh columns: PostgreSQL's
// index names are per schema, so the index GORM makes for refresh_at must
// not collide between two tables (it is named idx_<table>_refresh_at).
type OtherTable struct {
	ID  uint
	UID string `gorm:"size:20;uniqueIndex"`
	models.Refresh
}

// models.Refresh's tags (precision:6, an unnamed index) make timestamptz(6)
// columns on PostgreSQL; GORM's AutoMigrate of two tables embedding it, then
// the store, work together.
func TestRefreshGORMAutoMigrate(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	gdb := gormDB(t, s)
	if err := gdb.AutoMigrate(&BigTable{}, &OtherTable{}); err != nil {
		t.Fatalf("AutoMigrate two tables embedding models.Refresh: %v", err)
	}
	gormRoundTrip(t, s, gdb, "big_tables", func(uid, url string, at time.Time, rule string) any {
		m := &BigTable{UID: uid, InputURL: url}
		m.RefreshAt, m.RefreshRRule = &at, &rule
		return m
	}, func(uid string) (policy.State, string) {
		var back BigTable
		if err := gdb.First(&back, "uid = ?", uid).Error; err != nil {
			t.Fatal(err)
		}
		return back.State(), back.Rule()
	})
}

func gormDB(t *testing.T, s *Store) *gorm.DB {
	t.Helper()
	gdb, err := gorm.Open(postgres.Open(s.Pool().Config().ConnString()), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, err := gdb.DB()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sqlDB.Close() })
	return gdb
}

// gormRoundTrip checks a table GORM made: the migrate runner only records
// it, the service claims and saves a row the application created, and the
// application reads back what the service wrote.
func gormRoundTrip(t *testing.T, s *Store, gdb *gorm.DB, table string,
	create func(uid, url string, at time.Time, rule string) any, read func(uid string) (policy.State, string)) {
	t.Helper()
	ctx := context.Background()
	var out bytes.Buffer
	_, err := s.Migrate(ctx, []string{table}, &out, false)
	must(t, err)
	eq(t, out.String(), table+": recorded 0001_refresh_columns (12 columns already existed)\n"+
		table+": recorded 0002_refresh_at_index (index idx_"+table+"_refresh_at already existed)\n"+
		table+": applied 0003_state_count_indexes (added 4 indexes)\n"+table+": applied 0004_refresh_priority (added 2 columns and 2 indexes)\n"+table+": applied 0005_priority_attempt_index (added index "+table+"_refresh_priority_refresh_attempt_no_idx)\n", "migrate on a GORM table")

	tbl := models.Table{Name: table, Key: "uid", Payload: []string{"input_url"}}
	must(t, s.Check(ctx, tbl))
	now := time.Date(2026, 3, 4, 5, 6, 7, 123456000, time.UTC)
	rule := "RRULE:FREQ=DAILY"
	must(t, gdb.Create(create("m1", "https://example.com/a", now, rule)).Error)

	want := policy.State{
		RefreshAt: now.Add(time.Hour), AttemptUID: "d1v5bqh6n88c73890001", AttemptAt: now, AttemptNo: 2,
		TimeoutAt: now.Add(time.Minute), FailingSince: now.Add(-time.Hour), LastSuccessAt: now.Add(-2 * time.Hour),
		LastError: "HTTP 500", Status: "importing ✓", DisabledAt: now, DisabledReason: "bad URL",
	}
	var rows []models.Row
	must(t, s.Tx(ctx, func(tx models.Tx) (err error) {
		if rows, err = tx.ClaimDue(ctx, tbl, now, models.Cursor{}, 10); err != nil || len(rows) != 1 {
			return err
		}
		rows[0].State = want
		return tx.Save(ctx, tbl, rows)
	}))
	eq(t, len(rows), 1, "claimed")
	eq(t, rows[0].Rule, rule)
	eq(t, rows[0].Payload.Map(), map[string]any{"input_url": "https://example.com/a"})
	got, gotRule := read("m1")
	eq(t, got, want, "state read through GORM")
	eq(t, gotRule, rule)
}
