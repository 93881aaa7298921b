package pgstore

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/refresher/refresher/models"
)

// quoteIdent returns name as a double-quoted PostgreSQL identifier, exactly
// as written (PostgreSQL folds unquoted names to lower case; the config's
// names are taken literally). It refuses names PostgreSQL would refuse or
// that can only be typos in a config file: empty, longer than 63 bytes,
// with control characters or a NUL, or ending in a space.
func quoteIdent(name string) (string, error) {
	switch {
	case name == "":
		return "", fmt.Errorf("empty table or column name")
	case !utf8.ValidString(name):
		return "", fmt.Errorf("name %q is not valid UTF-8", name)
	case len(name) > 63:
		return "", fmt.Errorf("name %q is longer than PostgreSQL's 63 bytes", name)
	case strings.HasSuffix(name, " "):
		return "", fmt.Errorf("name %q ends with a space", name)
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return "", fmt.Errorf("name %q contains a control character", name)
	}
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`, nil
}

// Limits of the column types (the same as MySQL's).
const (
	maxReasonLen  = 1024 // varchar(1024) of the reason and error columns
	maxStatusLen  = 255  // varchar(255) of refresh_status
	attemptUIDLen = 20   // char(20): an xid
)

// numStateColumns is the number of stateColumns.
const numStateColumns = 11

// stateColumns are the 11 columns the service writes: all but refresh_rrule,
// which belongs to the application (the service only reads it).
var stateColumns = [numStateColumns]string{
	models.ColRefreshAt, models.ColAttemptUID, models.ColAttemptAt, models.ColAttemptNo, models.ColTimeoutAt,
	models.ColDisabledUntil, models.ColDisabledReason, models.ColFailingSince,
	models.ColLastSuccessAt, models.ColLastError, models.ColStatus,
}
