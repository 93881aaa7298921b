// Package pgstore is the PostgreSQL (13 and later) driver of models.Store and
// models.Inspector, on pgx v5's native pool (pgxpool).
//
// Why pgxpool rather than database/sql over pgx/stdlib: the hot path is a
// few statements per batch (claim, bulk save) whose cost is round trips and
// encoding. The native interface caches prepared statements per connection
// (one round trip per statement after the first), encodes the bulk save's
// arrays in binary without database/sql's driver.Value conversions, and
// scans without reflection through sql.Null* types.
//
// Times: the migration creates timestamptz(6) columns (format_type
// "timestamp(6) with time zone"), and every connection's TimeZone is UTC.
// A timestamptz holds an instant, so an application that writes now() or
// a local time.Time stores the right moment whatever its session's time
// zone; with timestamp without time zone it would store its own wall
// clock. GORM's PostgreSQL driver also makes timestamptz of a time.Time
// field. The store reads and writes tables whose refresh columns are
// timestamp(6) without time zone just as well, holding UTC wall clock time
// whatever a session's time zone: Save writes them AT TIME ZONE 'UTC', and
// pgx sends and reads a timestamp parameter as the UTC time's wall clock.
//
// Keys travel as the text PostgreSQL prints for the key column (key::text).
// LockByKeys and Save compare keys as the key column's type, so its index
// serves them; a key that cannot be of that type ("abc" for an integer
// column) names no row and is left out rather than failing the batch.
package pgstore
