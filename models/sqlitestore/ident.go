package sqlitestore

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
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

// keysPerSelect is the most keys one LockByKeys query binds (SQLite's
// default limit of bound parameters is 32766).
const keysPerSelect = 5000
