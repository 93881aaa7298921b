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

// placeholdersPerSelect is the most keys one LockByKeys query carries.
const placeholdersPerSelect = 5000

// attemptUIDColumn describes refresh_attempt_uid, which guards SaveIfAttempt.
var attemptUIDColumn = models.StateColumn(models.ColAttemptUID)
