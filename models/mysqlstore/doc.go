// Package mysqlstore is the models.Store of MySQL 8.0.1+ and MariaDB 10.6+:
// the batched queries of the service's hot path on database/sql (claim with
// FOR UPDATE SKIP LOCKED, bulk writes through JSON_TABLE), the migration
// runner that adds the refresh columns to each kind's table (Migrate), and
// the translation of MySQL's error numbers into models.ErrorClass.
//
// Every query that compares with the current time takes `now` from the
// caller; only the migration bookkeeping (applied_at) calls UTC_TIMESTAMP(), so tests control the
// database's idea of time. All DATETIME values are UTC: open the database
// with Open, which sets parseTime, loc=UTC and the session time zone.
//
// Table and column names come from configuration; they are checked and
// backquoted (quoteIdent), never pasted into SQL as given.
package mysqlstore
