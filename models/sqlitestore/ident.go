package sqlitestore

import "github.com/refresher/refresher/models"

// quoteIdent returns name as a double-quoted SQLite identifier (see
// models.Identifiers.QuoteName). SQLite has no limit of its own; MySQL's 64
// characters apply, so that a config works on every driver.
func quoteIdent(name string) (string, error) { return idents.QuoteName(name) }

var idents = models.Identifiers{Quote: `"`, MaxLen: 64, Limit: "64 characters"}

// keysPerSelect is the most keys one LockByKeys query binds (SQLite's
// default limit of bound parameters is 32766).
const keysPerSelect = 5000
