package models

import (
	"fmt"
	"strconv"
	"time"
)

// KeyString formats a key column's value, as a database/sql driver scans
// it into an any, as the string workers see: text as it is, numbers in
// decimal (floats as %v does), times in RFC 3339 UTC.
func KeyString(v any) string {
	switch k := v.(type) {
	case []byte:
		return string(k)
	case string:
		return k
	case int64:
		return strconv.FormatInt(k, 10)
	case uint64:
		return strconv.FormatUint(k, 10)
	case float64:
		return strconv.FormatFloat(k, 'g', -1, 64)
	case time.Time:
		return k.UTC().Format(time.RFC3339Nano)
	default:
		return fmt.Sprint(k)
	}
}

// JSONValue turns a payload column's value, as a database/sql driver scans
// it into an any, into one encoding/json renders naturally (see
// Row.Payload): bytes become text, times RFC 3339 UTC text.
func JSONValue(v any) any {
	switch x := v.(type) {
	case []byte:
		return string(x)
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	default:
		return x
	}
}

// KeyDest is a scan destination (a sql.Scanner) that keeps a column's
// value as KeyString spells it (NULL too); Valid is false for NULL. database/sql
// hands a Scanner the driver's value as it is, where an *any destination
// gets a copy of its bytes first: the drivers' claims read the key (and
// the primary key) of every row through it, with one copy instead of two.
type KeyDest struct {
	S     string
	Valid bool
}

// Scan implements sql.Scanner.
func (k *KeyDest) Scan(src any) error {
	k.S, k.Valid = KeyString(src), src != nil
	return nil
}

// ValueDest is a scan destination (a sql.Scanner) that keeps a payload
// column's value as JSONValue gives it, copied once (see KeyDest).
type ValueDest struct{ V any }

// Scan implements sql.Scanner.
func (v *ValueDest) Scan(src any) error {
	v.V = JSONValue(src)
	return nil
}
