package sqlitestore

import (
	"errors"
	"fmt"
	"strings"

	sqlite "github.com/glebarez/go-sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/refresher/refresher/models"
)

// Classify says what err means for the batch that got it (models.Store),
// by SQLite's primary result code:
//
//   - Transient: not a SQLite error at all (a cancelled context, a closed
//     connection), SQLITE_BUSY and SQLITE_LOCKED (the write lock stayed
//     taken for BusyTimeout), SQLITE_FULL (disk full), SQLITE_IOERR,
//     SQLITE_NOMEM, SQLITE_INTERRUPT, SQLITE_PROTOCOL;
//   - ValueRefused: SQLITE_CONSTRAINT (NOT NULL, CHECK, UNIQUE, and an
//     application trigger's RAISE(ABORT|FAIL|ROLLBACK, ...)), SQLITE_TOOBIG,
//     SQLITE_MISMATCH;
//   - TableRefused: everything else, such as SQLITE_ERROR for a missing
//     table or column, SQLITE_READONLY, SQLITE_PERM, SQLITE_CORRUPT.
//     Results then wait in Redis: an unknown refusal never destroys a
//     message.
func (s *Store) Classify(err error) models.ErrorClass { return classify(err) }

func classify(err error) models.ErrorClass {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return models.Transient
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR,
		sqlite3.SQLITE_NOMEM, sqlite3.SQLITE_INTERRUPT, sqlite3.SQLITE_PROTOCOL:
		return models.Transient
	case sqlite3.SQLITE_CONSTRAINT, sqlite3.SQLITE_TOOBIG, sqlite3.SQLITE_MISMATCH:
		return models.ValueRefused
	}
	return models.TableRefused
}

// indexRefused reports whether err is SQLite's refusal of an INDEXED BY:
// the index does not exist (any more: dropped or renamed), or cannot serve
// the query ("no query solution": made again as a partial index, which
// the schema's reading leaves out).
func indexRefused(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) || se.Code()&0xff != sqlite3.SQLITE_ERROR {
		return false
	}
	msg := se.Error()
	return strings.Contains(msg, "no such index") || strings.Contains(msg, "no query solution")
}

// withSchemaHint adds how to fix it to an error that says the kind's table
// or one of its columns is missing, or that the file cannot be written:
// the loops keep retrying until someone does.
func withSchemaHint(err error) error {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return err
	}
	switch code := se.Code() & 0xff; {
	case code == sqlite3.SQLITE_ERROR && (strings.Contains(se.Error(), "no such table") || strings.Contains(se.Error(), "no such column")):
		return fmt.Errorf("%w (create the table or fix `table:`/`key:`/`payload:` of the kind in the config, then run `refresher migrate`; results wait in Redis meanwhile)", err)
	case code == sqlite3.SQLITE_READONLY, code == sqlite3.SQLITE_PERM, code == sqlite3.SQLITE_CANTOPEN:
		return fmt.Errorf("%w (the service cannot write the database file: check its and its directory's permissions; results wait in Redis meanwhile)", err)
	}
	return err
}
