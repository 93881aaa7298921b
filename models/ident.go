package models

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
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

// Names of the SPEC section 2 columns.
const (
	ColRefreshAt          = "refresh_at"
	ColAttemptUID         = "refresh_attempt_uid"
	ColAttemptAt          = "refresh_attempt_at"
	ColAttemptNo          = "refresh_attempt_no"
	ColTimeoutAt          = "refresh_timeout_at"
	ColDisabledUntil      = "refresh_disabled_until_update"
	ColDisabledReason     = "refresh_disabled_user_friendly_reason"
	ColRRule              = "refresh_rrule"
	ColFailingSince       = "refresh_failing_since"
	ColLastSuccessAt      = "refresh_last_success_at"
	ColLastError          = "refresh_last_error"
	ColStatus             = "refresh_status"
	maxReasonLen          = 1024 // VARCHAR(1024) of the reason and error columns
	maxStatusLen          = 255  // VARCHAR(255) of refresh_status
	attemptUIDLen         = 20   // CHAR(20): an xid
	placeholdersPerSelect = 5000 // keys per LockByKeys query
)

// Columns lists the 12 refresh columns in SPEC order.
var Columns = []string{
	ColRefreshAt, ColAttemptUID, ColAttemptAt, ColAttemptNo, ColTimeoutAt,
	ColDisabledUntil, ColDisabledReason, ColRRule, ColFailingSince,
	ColLastSuccessAt, ColLastError, ColStatus,
}

// numStateColumns is the number of stateColumns.
const numStateColumns = 11

// stateColumns are the 11 columns the service writes: all but refresh_rrule,
// which belongs to the application (the service only reads it).
var stateColumns = [numStateColumns]string{
	ColRefreshAt, ColAttemptUID, ColAttemptAt, ColAttemptNo, ColTimeoutAt,
	ColDisabledUntil, ColDisabledReason, ColFailingSince,
	ColLastSuccessAt, ColLastError, ColStatus,
}
