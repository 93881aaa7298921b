package mysqlstore

import (
	"bytes"
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/refresher/refresher/models"
	"gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// BigTable is an application's model embedding the refresh columns.
type BigTable struct {
	ID       uint
	UID      string `gorm:"size:20;uniqueIndex"`
	InputURL string
	models.Refresh
}

func TestRefreshGORMAutoMigrate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testDB(t)
	gdb, err := gorm.Open(mysql.New(mysql.Config{Conn: db}), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	must(t, gdb.AutoMigrate(&BigTable{}))

	eq(t, refreshColumnsOf(t, db, "big_tables"), specColumns, "columns GORM created")
	eq(t, hasIndexOn(t, db, "big_tables", "refresh_at"), []string{"idx_big_tables_refresh_at"}, "index GORM created")
	gormDDL := showCreate(t, db, "big_tables")
	must(t, gdb.AutoMigrate(&BigTable{}))
	eq(t, showCreate(t, db, "big_tables"), gormDDL, "a second AutoMigrate changed the table")

	// The migrate runner then finds everything in place and only records it.
	ddl := showCreate(t, db, "big_tables")
	var out bytes.Buffer
	_, err = Migrate(ctx, db, []string{"big_tables"}, &out, false)
	must(t, err)
	eq(t, out.String(), "big_tables: recorded 0001_refresh_columns (12 columns already existed)\n"+
		"big_tables: recorded 0002_refresh_at_index (index idx_refresh_at already existed)\n"+
		"big_tables: applied 0003_state_count_indexes (added 4 indexes)\nbig_tables: applied 0004_refresh_priority (added 2 columns and 2 indexes)\nbig_tables: applied 0005_priority_attempt_index (added index idx_refresh_priority_attempt)\n")
	// Only the count indexes of 0003 and the priority columns and indexes
	// of 0004 were added.
	added := regexp.MustCompile(",\n  (KEY `idx_refresh_(attempt_uid|disabled|failing_since|attempt_no|priority|priority_once|priority_attempt)` \\([^)]*\\)|`refresh_priority(_once)?` smallint\\(6\\) DEFAULT NULL)")
	eq(t, added.ReplaceAllString(showCreate(t, db, "big_tables"), ""), ddl, "migrate changed a GORM-made table")
	eq(t, recordedVersions(t, db, "big_tables"), []string{"1 0001_refresh_columns", "2 0002_refresh_at_index", "3 0003_state_count_indexes", "4 0004_refresh_priority", "5 0005_priority_attempt_index"})
	out.Reset()
	_, err = Migrate(ctx, db, []string{"big_tables"}, &out, false)
	must(t, err)
	eq(t, out.String(), "big_tables: up to date\n")

	// A row the application creates is due; what the service writes, the
	// application reads back through the struct.
	tbl := models.Table{Name: "big_tables", Key: "uid", Payload: []string{"input_url"}}
	s := New(db)
	must(t, s.Check(ctx, tbl))
	now := base
	m := BigTable{UID: "m1", InputURL: "https://example.com/a"}
	m.RefreshAt = &now
	rule := "RRULE:FREQ=DAILY"
	m.RefreshRRule = &rule
	must(t, gdb.Create(&m).Error)

	var rows []models.Row
	must(t, s.Tx(ctx, func(tx models.Tx) (err error) {
		rows, err = tx.ClaimDue(ctx, tbl, now, models.Cursor{}, 10)
		if err != nil || len(rows) != 1 {
			return err
		}
		rows[0].State = fullState(1)
		return tx.Save(ctx, tbl, rows)
	}))
	eq(t, len(rows), 1, "claimed")
	eq(t, rows[0].Rule, rule)
	eq(t, rows[0].Payload.Map(), map[string]any{"input_url": "https://example.com/a"})

	var back BigTable
	must(t, gdb.First(&back, "uid = ?", "m1").Error)
	eq(t, back.State(), fullState(1), "state read through GORM")
	eq(t, back.Rule(), rule)

	// And what the application writes through GORM, the service reads.
	back.Enable(now.Add(time.Hour))
	must(t, gdb.Save(&back).Error)
	got := lockAll(t, s, tbl, "m1")["m1"].State
	want := fullState(1)
	want.DisabledAt, want.DisabledReason, want.AttemptNo, want.FailingSince, want.AttemptUID = time.Time{}, "", 0, time.Time{}, ""
	want.TimeoutAt = time.Time{} // a running attempt's timeout goes with it
	want.RefreshAt = now.Add(time.Hour)
	eq(t, got, want, "state after Enable")
}
