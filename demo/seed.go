package demo

import (
	"context"
	"fmt"
	"time"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// seed plays the application: it creates the reports table through GORM,
// with the refresh columns of the embedded models.Refresh, and inserts the
// example rows due at now, as an app does when a user creates a model
// (refresh_at = the current UTC time). Rows that exist are left alone, so a
// demo restarted with --data carries on where it stopped.
func seed(ctx context.Context, file, targetURL string, now time.Time) error {
	db, err := gorm.Open(sqlite.Open(file), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		return fmt.Errorf("demo: open %s: %w", file, err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return fmt.Errorf("demo: open %s: %w", file, err)
	}
	defer sqlDB.Close()
	db = db.WithContext(ctx)
	if err := db.AutoMigrate(&Report{}); err != nil {
		return fmt.Errorf("demo: create the reports table: %w", err)
	}
	for _, e := range examples() {
		r := Report{UID: e.uid, Name: e.uid, InputURL: targetURL + e.path}
		r.RefreshAt = &now
		if e.rule != "" {
			rule := e.rule
			r.RefreshRRule = &rule
		}
		if err := db.Where(Report{UID: e.uid}).Attrs(r).FirstOrCreate(&Report{}).Error; err != nil {
			return fmt.Errorf("demo: insert %s: %w", e.uid, err)
		}
		// The target's port changes from run to run.
		if err := db.Model(&Report{}).Where("uid = ?", e.uid).Update("input_url", r.InputURL).Error; err != nil {
			return fmt.Errorf("demo: update %s: %w", e.uid, err)
		}
	}
	return nil
}
