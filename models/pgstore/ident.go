package pgstore

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
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
