package mysqlstore

import "github.com/refresher/refresher/models"

// quoteIdent returns name as a backquoted MySQL identifier (see
// models.Identifiers.QuoteName).
func quoteIdent(name string) (string, error) { return idents.QuoteName(name) }

var idents = models.Identifiers{Quote: "`", MaxLen: 64, Limit: "MySQL's 64 characters"}

// placeholdersPerSelect is the most keys one LockByKeys query carries.
const placeholdersPerSelect = 5000

// attemptUIDColumn describes refresh_attempt_uid, which guards SaveIfAttempt.
var attemptUIDColumn = models.StateColumn(models.ColAttemptUID)

// backquote writes one of the refresh columns' names, which need no escaping.
func backquote(col string) string { return "`" + col + "`" }
