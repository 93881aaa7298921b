package sqlitestore

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/refresher/refresher/models"
)

// quoteIdent returns name as a double-quoted SQLite identifier. It refuses
// names that can only be typos in a config file: empty, invalid UTF-8,
// longer than 64 characters (MySQL's limit, so a config works on every
// driver), with control characters, or ending in a space. Double quotes
// inside the name are doubled.
func quoteIdent(name string) (string, error) {
	switch {
	case name == "":
		return "", fmt.Errorf("empty table or column name")
	case !utf8.ValidString(name):
		return "", fmt.Errorf("name %q is not valid UTF-8", name)
	case utf8.RuneCountInString(name) > 64:
		return "", fmt.Errorf("name %q is longer than 64 characters", name)
	case strings.HasSuffix(name, " "):
		return "", fmt.Errorf("name %q ends with a space", name)
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return "", fmt.Errorf("name %q contains a control character", name)
	}
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`, nil
}

// Limits of the text columns, the same as the MySQL driver's so that every
// driver stores the same text (SQLite itself would store any length).
const (
	maxReasonLen  = 1024 // VARCHAR(1024) of the reason and error columns
	maxStatusLen  = 255  // VARCHAR(255) of refresh_status
	attemptUIDLen = 20   // CHAR(20): an xid
	// keysPerSelect is the most keys one LockByKeys query binds (SQLite's
	// default limit of bound parameters is 32766).
	keysPerSelect = 5000
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
