package mysqlstore

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/refresher/refresher/models"
)

// quoteIdent returns name as a backquoted MySQL identifier. It refuses names
// MySQL would refuse or that can only be typos in a config file: empty,
// longer than 64 characters, with control characters, or ending in a space.
// Backquotes inside the name are doubled.
func quoteIdent(name string) (string, error) {
	switch {
	case name == "":
		return "", fmt.Errorf("empty table or column name")
	case !utf8.ValidString(name):
		return "", fmt.Errorf("name %q is not valid UTF-8", name)
	case utf8.RuneCountInString(name) > 64:
		return "", fmt.Errorf("name %q is longer than MySQL's 64 characters", name)
	case strings.HasSuffix(name, " "):
		return "", fmt.Errorf("name %q ends with a space", name)
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return "", fmt.Errorf("name %q contains a control character", name)
	}
	return "`" + strings.ReplaceAll(name, "`", "``") + "`", nil
}

// Limits of the MySQL column types (the same as models.Schema's).
const (
	maxReasonLen          = 1024 // VARCHAR(1024) of the reason and error columns
	maxStatusLen          = 255  // VARCHAR(255) of refresh_status
	attemptUIDLen         = 20   // CHAR(20): an xid
	placeholdersPerSelect = 5000 // keys per LockByKeys query
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
