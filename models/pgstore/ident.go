package pgstore

import "github.com/refresher/refresher/models"

// quoteIdent returns name as a double-quoted PostgreSQL identifier, exactly
// as written (PostgreSQL folds unquoted names to lower case; the config's
// names are taken literally); see models.Identifiers.QuoteName.
func quoteIdent(name string) (string, error) { return idents.QuoteName(name) }

var idents = models.Identifiers{Quote: `"`, MaxLen: 63, MaxBytes: true, Limit: "PostgreSQL's 63 bytes"}

// doubleQuote writes one of the refresh columns' names, which need no
// escaping.
func doubleQuote(col string) string { return `"` + col + `"` }
