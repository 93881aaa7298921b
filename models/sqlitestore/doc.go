// Package sqlitestore is the models.Store of SQLite, for a single refresher
// instance with an embedded database (the zero-install demo, a small
// deployment). It runs on a pure-Go SQLite (no cgo; see Open).
//
// One service instance per file: Open takes an exclusive lock on
// "<file>.lock" for the Store's lifetime and refuses to start when another
// process (or another Store in this one) holds it. The admin commands open
// the file without it (OpenWith, NoInstanceLock) and write as the
// application does. With that, transactions need no
// SKIP LOCKED: every transaction starts with BEGIN IMMEDIATE, so writers
// take SQLite's write lock in turn (waiting up to busy_timeout), and a
// transaction's reads and writes see no other writer. The journal is WAL,
// so readers (NextDue, the Inspector) do not wait for a writer.
//
// Times are TEXT in UTC with exactly six decimals, "2006-01-02
// 15:04:05.000000" (TimeFormat): fixed width, so text order is time order
// and the refresh_at index serves `refresh_at <= ?`; SQLite's date
// functions read it too. Readers also accept what other SQLite drivers and
// GORM write (with a zone offset, a "T", fewer decimals; see parseTime);
// those still compare correctly with TimeFormat as long as they are UTC.
//
// Every query that compares with the current time takes `now` from the
// caller; nothing here reads SQLite's clock. Table and column names come
// from configuration; they are checked and double-quoted (quoteIdent).
package sqlitestore
