// Package models is refresher's MySQL layer: the refresh columns of SPEC
// section 2 as a GORM struct an application can embed (Refresh), the runner
// that adds them to each kind's table (Migrate), and the batched queries of
// the service's hot path on database/sql (Store).
//
// Every query that compares with the current time takes `now` from the
// caller; nothing here calls NOW() or UTC_TIMESTAMP(), so tests control the
// database's idea of time. All DATETIME values are UTC: open the database
// with Open, which sets parseTime, loc=UTC and the session time zone.
//
// Table and column names come from configuration; they are checked and
// backquoted (quoteIdent), never pasted into SQL as given.
package models
