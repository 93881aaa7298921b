package mysqlstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// unicodeCharsets are the character sets that hold every Unicode character,
// so that any valid UTF-8 key can be a value of a column in them.
var unicodeCharsets = map[string]bool{"utf8mb4": true, "utf16": true, "utf16le": true, "utf32": true}

// holdChecksPerSelect is the most keys one round-trip query checks.
const holdChecksPerSelect = 500

// keyFilter returns a predicate that says whether key can be a value of the
// key column described by m. A key that cannot names no row, like a key of
// no row, and must not fail the statement that asks for it: MySQL refuses
// to compare a latin1 or utf8mb3 column with a text it cannot convert
// (1270 "Illegal mix of collations", 1977 "Cannot convert"), which would
// fail the whole batch of a poller instead of dead-lettering one result as
// an unknown model; and it compares an integer column with "1abc" as 1,
// which would lock, or write, row 1.
//
//   - integer columns hold what strconv parses as a 64-bit integer (signed
//     or not, as the column) after trimming spaces, as PostgreSQL's store
//     does;
//   - text columns hold only valid UTF-8 (the connection's character set is
//     utf8mb4); in a character set that holds every Unicode character, all
//     of it; in any other, ASCII without asking, and other keys when
//     converting them to the column's character set and back gives the same
//     text, which the server computes in one query per up to 500 such keys
//     (run on db, the transaction in hand or the pool);
//   - other columns (binary, decimal, dates) hold anything: the server
//     compares them without failing.
func keyFilter(ctx context.Context, db metaQueryer, m colMeta, keys []string) (func(key string) bool, error) {
	switch m.dataType {
	case "tinyint", "smallint", "mediumint", "int", "integer", "bigint":
		return func(key string) bool {
			var err error
			if m.unsigned {
				_, err = strconv.ParseUint(strings.TrimSpace(key), 10, 64)
			} else {
				_, err = strconv.ParseInt(strings.TrimSpace(key), 10, 64)
			}
			return err == nil
		}, nil
	}
	if m.charset == "" || m.charset == "binary" {
		return func(string) bool { return true }, nil
	}
	if unicodeCharsets[m.charset] {
		return utf8.ValidString, nil
	}
	var ask []string
	for _, k := range keys {
		if utf8.ValidString(k) && !ascii(k) {
			ask = append(ask, k)
		}
	}
	held, err := roundTrips(ctx, db, m.charset, ask)
	if err != nil {
		return nil, err
	}
	return func(key string) bool {
		if !utf8.ValidString(key) {
			return false
		}
		return ascii(key) || held[key]
	}, nil
}

// roundTrips returns the keys that come back unchanged from a conversion to
// charset and back to utf8mb4 (a character the charset lacks becomes '?').
func roundTrips(ctx context.Context, db metaQueryer, charset string, keys []string) (map[string]bool, error) {
	held := make(map[string]bool, len(keys))
	if len(keys) == 0 {
		return held, nil
	}
	if !sqlName.MatchString(charset) {
		return held, nil // not a name MySQL gives a character set: holds nothing unusual
	}
	for start := 0; start < len(keys); start += holdChecksPerSelect {
		chunk := keys[start:min(start+holdChecksPerSelect, len(keys))]
		var b strings.Builder
		b.WriteString("SELECT ")
		args := make([]any, len(chunk))
		for i, k := range chunk {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("CONVERT(CONVERT(? USING " + charset + ") USING utf8mb4)")
			args[i] = k
		}
		back := make([]string, len(chunk))
		dest := make([]any, len(chunk))
		for i := range back {
			dest[i] = &back[i]
		}
		if err := db.QueryRowContext(ctx, b.String(), args...).Scan(dest...); err != nil {
			return nil, fmt.Errorf("check keys against character set %s: %w", charset, err)
		}
		for i, k := range chunk {
			if back[i] == k {
				held[k] = true
			}
		}
	}
	return held, nil
}

// ascii reports whether s holds only ASCII characters.
func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
