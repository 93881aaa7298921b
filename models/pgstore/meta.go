package pgstore

import (
	"context"
	"database/sql/driver"
	"encoding/hex"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/refresher/refresher/models"
)

// tableMeta is what the catalog says about one table.
type tableMeta struct {
	exists bool
	cols   map[string]colMeta // by column name, exactly as stored
	// pk is the single-column primary key; "" for none or composite.
	pk string
	// indexes are the table's plain (non-expression, non-partial) indexes.
	indexes []indexMeta
}

// colMeta describes one column.
type colMeta struct {
	typ    string // the type's quoted, schema-qualified name: "pg_catalog"."int8"
	name   string // pg_type.typname: "int8", "varchar", "bpchar", ...
	format string // format_type: "bigint", "character varying(255)", ...
}

type indexMeta struct {
	name    string
	unique  bool
	primary bool
	cols    []string
}

func (m tableMeta) uniqueOn(col string) bool {
	for _, ix := range m.indexes {
		if ix.unique && len(ix.cols) == 1 && ix.cols[0] == col {
			return true
		}
	}
	return false
}

// countIndexed reports whether refresh_at and each column Counts counts by
// lead an index (migrations 0002 and 0003).
func (m tableMeta) countIndexed() bool {
	for _, col := range []string{models.ColRefreshAt, models.ColAttemptUID, models.ColFailingSince, models.ColDisabledUntil, models.ColAttemptNo} {
		led := false
		for _, ix := range m.indexes {
			led = led || (len(ix.cols) > 0 && ix.cols[0] == col)
		}
		if !led {
			return false
		}
	}
	return true
}

// prioritized reports whether both priority columns lead an index
// (migration 0004): until then the claim ignores priorities.
func (m tableMeta) prioritized() bool {
	n := 0
	for _, col := range []string{models.ColPriority, models.ColPriorityOnce} {
		for _, ix := range m.indexes {
			if len(ix.cols) > 0 && ix.cols[0] == col {
				n++
				break
			}
		}
	}
	return n == 2
}

// priorityAttempt reports whether an index starts with (refresh_priority,
// refresh_attempt_no) (migration 0005): until then the alerts by level
// read no attempt numbers (each would read its whole level).
func (m tableMeta) priorityAttempt() bool {
	for _, ix := range m.indexes {
		if len(ix.cols) > 1 && ix.cols[0] == models.ColPriority && ix.cols[1] == models.ColAttemptNo {
			return true
		}
	}
	return false
}

type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// loadMeta reads the columns and indexes of table name, resolved like an
// unqualified name in a query (the search_path); exists is false when
// there is no such table.
func loadMeta(ctx context.Context, q querier, name string) (tableMeta, error) {
	m := tableMeta{cols: map[string]colMeta{}}
	quoted, err := quoteIdent(name)
	if err != nil {
		return m, err
	}
	var oid pgtype.Uint32
	if err := q.QueryRow(ctx, "SELECT to_regclass($1)::oid", quoted).Scan(&oid); err != nil {
		return m, fmt.Errorf("look up table: %w", err)
	}
	if !oid.Valid {
		return m, nil
	}
	m.exists = true
	rows, err := q.Query(ctx, `SELECT a.attname, quote_ident(n.nspname) || '.' || quote_ident(t.typname), t.typname, format_type(a.atttypid, a.atttypmod)
		FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid JOIN pg_namespace n ON n.oid = t.typnamespace
		WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped`, oid.Uint32)
	if err != nil {
		return m, fmt.Errorf("read columns: %w", err)
	}
	for rows.Next() {
		var col string
		var c colMeta
		if err := rows.Scan(&col, &c.typ, &c.name, &c.format); err != nil {
			rows.Close()
			return m, fmt.Errorf("read columns: %w", err)
		}
		m.cols[col] = c
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return m, fmt.Errorf("read columns: %w", err)
	}
	rows, err = q.Query(ctx, `SELECT i.relname, x.indisunique, x.indisprimary,
			ARRAY(SELECT a.attname FROM unnest(x.indkey::int2[]) WITH ORDINALITY k(attnum, n)
				JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k.attnum ORDER BY k.n)::text[]
		FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
		WHERE x.indrelid = $1 AND x.indexprs IS NULL AND x.indpred IS NULL AND x.indisvalid
		ORDER BY i.relname`, oid.Uint32)
	if err != nil {
		return m, fmt.Errorf("read indexes: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var ix indexMeta
		if err := rows.Scan(&ix.name, &ix.unique, &ix.primary, &ix.cols); err != nil {
			return m, fmt.Errorf("read indexes: %w", err)
		}
		m.indexes = append(m.indexes, ix)
		if ix.primary && len(ix.cols) == 1 {
			m.pk = ix.cols[0]
		}
	}
	if err := rows.Err(); err != nil {
		return m, fmt.Errorf("read indexes: %w", err)
	}
	return m, nil
}

// keyType says how keys (strings) are compared with a key or primary key
// column: cast to the column's type when the store can tell, before asking,
// which strings that type accepts; otherwise as text.
type keyType struct {
	typ  string // quoted type name for casts; "" compares as text
	kind keyKind
	bits int // of integer kinds
	// viaText: an array of typ is sent as text[] and cast, for a type
	// whose arrays pgx cannot encode (an extension's, whose OID it does
	// not know: citext).
	viaText bool
}

type keyKind int

const (
	kindText keyKind = iota // compared as text: the column's own type is unknown
	kindString
	kindInt
	kindUUID
)

func (c colMeta) keyType() keyType {
	switch c.name {
	case "int2":
		return keyType{typ: c.typ, kind: kindInt, bits: 16}
	case "int4":
		return keyType{typ: c.typ, kind: kindInt, bits: 32}
	case "int8":
		return keyType{typ: c.typ, kind: kindInt, bits: 64}
	case "text", "varchar", "bpchar", "name":
		return keyType{typ: c.typ, kind: kindString}
	case "citext":
		return keyType{typ: c.typ, kind: kindString, viaText: true}
	case "uuid":
		return keyType{typ: c.typ, kind: kindUUID}
	}
	return keyType{kind: kindText}
}

// match is the condition "column equals one of the array parameter param".
func (k keyType) match(column, param string) string {
	if k.typ == "" {
		return column + "::text = ANY(" + param + "::text[])"
	}
	return column + " = ANY(" + param + "::" + k.arrayType() + ")"
}

// arrayType is the array type for a parameter of keys.
func (k keyType) arrayType() string {
	switch {
	case k.typ == "":
		return "text[]"
	case k.viaText:
		return "text[]::" + k.typ + "[]"
	}
	return k.typ + "[]"
}

// equals is the condition "column equals the element v (of arrayType)".
func (k keyType) equals(column, v string) string {
	if k.typ == "" {
		return column + "::text = " + v
	}
	return column + " = " + v
}

// valid reports whether key can be a value of the type: a key that cannot
// names no row, and must not fail the statement that asks for it.
func (k keyType) valid(key string) bool {
	if !utf8.ValidString(key) || strings.IndexByte(key, 0) >= 0 {
		return false // no PostgreSQL text holds these
	}
	switch k.kind {
	case kindInt:
		_, err := strconv.ParseInt(strings.TrimSpace(key), 10, k.bits)
		return err == nil
	case kindUUID:
		return validUUID(key)
	}
	return true
}

// filter returns the keys that valid accepts.
func (k keyType) filter(keys []string) []string {
	out := keys[:0:0]
	for _, key := range keys {
		if k.valid(key) {
			out = append(out, key)
		}
	}
	return out
}

// validUUID reports whether PostgreSQL's uuid input accepts s: 32 hex
// digits, optionally in braces, with an optional hyphen after any group of
// four digits.
func validUUID(s string) bool {
	if strings.HasPrefix(s, "{") {
		if !strings.HasSuffix(s, "}") {
			return false
		}
		s = s[1 : len(s)-1]
	}
	digits := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f', c >= 'A' && c <= 'F':
			digits++
		case c == '-' && digits > 0 && digits%4 == 0 && digits < 32 && s[i-1] != '-':
		default:
			return false
		}
	}
	return digits == 32
}

// jsonValue turns a scanned payload value into one encoding/json renders
// like mysqlstore's: int64 or float64 for numbers, string for text, numeric
// (as PostgreSQL prints it) and binary columns, RFC 3339 UTC text for dates
// and times.
func jsonValue(v any) any {
	switch x := v.(type) {
	case nil, string, bool, int64, float64:
		return x
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case int8:
		return int64(x)
	case float32:
		return float64(x)
	case []byte:
		return string(x)
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case [16]byte:
		h := hex.EncodeToString(x[:])
		return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
	case pgtype.Numeric:
		if !x.Valid {
			return nil
		}
		if x.NaN {
			return "NaN"
		}
		if x.InfinityModifier != pgtype.Finite {
			return x.InfinityModifier.String()
		}
		return numericString(x.Int, x.Exp)
	case driver.Valuer:
		dv, err := x.Value()
		if err != nil {
			return fmt.Sprint(x)
		}
		return jsonValue(dv)
	case map[string]any, []any:
		return x
	}
	return fmt.Sprint(v)
}

// numericString prints i * 10^exp as PostgreSQL does for numeric.
func numericString(i *big.Int, exp int32) string {
	if i == nil {
		return "0"
	}
	s := i.String()
	if exp >= 0 {
		return s + strings.Repeat("0", int(exp))
	}
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	n := int(-exp)
	if len(s) <= n {
		s = strings.Repeat("0", n-len(s)+1) + s
	}
	s = s[:len(s)-n] + "." + s[len(s)-n:]
	if neg {
		s = "-" + s
	}
	return s
}
