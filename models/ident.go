package models

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Identifiers is how a database quotes table and column names taken from
// configuration. Names are never pasted into SQL as given: Quote checks
// them, then quotes them exactly as written.
type Identifiers struct {
	// Quote is the quote character: "`" on MySQL, `"` elsewhere. Quotes
	// inside a name are doubled.
	Quote string
	// MaxLen is the longest name, in characters, or in bytes when
	// MaxBytes; Limit says it in the error ("MySQL's 64 characters").
	MaxLen   int
	MaxBytes bool
	Limit    string
}

// QuoteName returns name quoted. It refuses names the database would refuse
// or that can only be typos in a config file: empty, invalid UTF-8, longer
// than MaxLen, with control characters (NUL among them), or ending in a
// space.
func (id Identifiers) QuoteName(name string) (string, error) {
	n := utf8.RuneCountInString(name)
	if id.MaxBytes {
		n = len(name)
	}
	switch {
	case name == "":
		return "", fmt.Errorf("empty table or column name")
	case !utf8.ValidString(name):
		return "", fmt.Errorf("name %q is not valid UTF-8", name)
	case n > id.MaxLen:
		return "", fmt.Errorf("name %q is longer than %s", name, id.Limit)
	case strings.HasSuffix(name, " "):
		return "", fmt.Errorf("name %q ends with a space", name)
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return "", fmt.Errorf("name %q contains a control character", name)
	}
	return id.Quote + strings.ReplaceAll(name, id.Quote, id.Quote+id.Quote) + id.Quote, nil
}
