package sqlitestore

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/refresher/refresher/models"
)

// BigTable is an application's model embedding the refresh columns.
type BigTable struct {
	ID       uint
	UID      string `gorm:"size:20;uniqueIndex"`
	InputURL string
	models.Refresh
}

// appTable is BigTable before refresher: the application creates it.
type appTable struct {
	ID       uint
	UID      string `gorm:"size:20;uniqueIndex"`
	InputURL string
}

func (appTable) TableName() string { return "big_tables" }

// TestRefreshGORM: an application's GORM model with models.Refresh, on the
// pure-Go GORM dialector, shares the table with the Store both ways, times
// included. The application creates its table, `refresher migrate` adds
// the columns (as DATETIME: see sqliteTypes).
func TestRefreshGORM(t *testing.T) {
	each(t, func(t *testing.T, h harness) {
		ctx := context.Background()
		s := h.open(t)
		gdb, err := gorm.Open(sqlite.Dialector{Conn: s.DB()}, &gorm.Config{Logger: logger.Discard})
		must(t, err)
		must(t, gdb.AutoMigrate(&appTable{}))
		var out bytes.Buffer
		_, err = s.Migrate(ctx, []string{"big_tables"}, &out, false)
		must(t, err)
		eq(t, out.String(), "big_tables: applied 0001_refresh_columns (added 12 columns)\n"+
			"big_tables: applied 0002_refresh_at_index (added index idx_refresh_at)\n"+
			"big_tables: applied 0003_state_count_indexes (added 4 indexes)\nbig_tables: applied 0004_refresh_priority (added 2 columns and 2 indexes)\nbig_tables: applied 0005_priority_attempt_index (added index idx_refresh_priority_attempt)\n")
		tbl := models.Table{Name: "big_tables", Key: "uid", Payload: []string{"input_url"}}
		must(t, s.Check(ctx, tbl))

		// A row the application creates is due.
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
			eq(t, rows[0].State.RefreshAt, now, "refresh_at GORM wrote")
			rows[0].State = fullState(1)
			return tx.Save(ctx, tbl, rows)
		}))
		eq(t, len(rows), 1, "claimed")
		eq(t, rows[0].Rule, rule)
		eq(t, rows[0].Payload.Map(), map[string]any{"input_url": "https://example.com/a"})

		// What the service writes, the application reads through the struct.
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
		next, ok, err := s.NextDue(ctx, tbl)
		must(t, err)
		eq(t, ok, true)
		eq(t, next, now.Add(time.Hour), "NextDue of what GORM wrote")

		// A time written in another zone still reads as the same instant
		// (but compares as text: applications write UTC, as with every
		// driver).
		cet := now.In(time.FixedZone("CET", 3600))
		must(t, gdb.Model(&back).Update("refresh_last_success_at", cet).Error)
		eq(t, lockAll(t, s, tbl, "m1")["m1"].State.LastSuccessAt, now, "a CET time GORM wrote")
	})
}
