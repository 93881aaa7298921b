package demo

import (
	"fmt"

	"github.com/refresher/refresher/models"
)

// Report is the demo app's model: a report refreshed from its source URL.
// It embeds models.Refresh as an application would, so GORM creates the
// refresh columns and reads why a report is disabled.
type Report struct {
	ID       uint   `gorm:"primaryKey"`
	UID      string `gorm:"size:20;uniqueIndex"`
	Name     string
	InputURL string
	models.Refresh
}

// exampleRow is one row of the example table, before it gets its URL.
type exampleRow struct {
	uid, path, rule string
}

// Schedules of the example table. The kind's default is hourly, on the
// hour; two rows have their own rule: daily at 14:00 UTC, and twice a day
// at 09:00 and 14:00 New York time (a zone with daylight saving).
const (
	hourly     = "DTSTART:20260101T000000Z\nRRULE:FREQ=HOURLY;BYMINUTE=0;BYSECOND=0"
	dailyAt14  = "DTSTART:20260101T140000Z\nRRULE:FREQ=DAILY"
	newYorkTwo = "DTSTART;TZID=America/New_York:20260101T090000\nRRULE:FREQ=DAILY;BYHOUR=9,14"
)

// examples returns the ~20 rows of the example table: mostly healthy
// sources, and one of each kind of trouble.
func examples() []exampleRow {
	var rows []exampleRow
	for i := 1; i <= 12; i++ {
		rows = append(rows, exampleRow{uid: fmt.Sprintf("sales-%02d", i), path: "/ok/sales-" + fmt.Sprint(i)})
	}
	rows[0].rule = dailyAt14
	rows[1].rule = newYorkTwo
	return append(rows,
		exampleRow{uid: "flaky-1", path: "/flaky/1"},
		exampleRow{uid: "flaky-2", path: "/flaky/2"},
		exampleRow{uid: "throttled-1", path: "/throttled/1"},
		exampleRow{uid: "throttled-2", path: "/throttled/2"},
		exampleRow{uid: "slow-1", path: "/slow/1"},
		exampleRow{uid: "missing-1", path: "/missing/1"},
		exampleRow{uid: "down-1", path: "/down/1"},
		exampleRow{uid: "down-2", path: "/down/2"},
	)
}
