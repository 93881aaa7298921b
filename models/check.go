package models

import (
	"strconv"
	"strings"
)

// CheckColumns returns what Store.Check finds wrong with the columns of t,
// each problem in words that say how to fix it: the key column missing or
// without a unique index (addUnique is the statement that would add one),
// payload columns missing, refresh columns missing. table is t's name as
// quoted for messages; has and unique answer for one column name as
// configured. Nil when nothing is wrong. Whether the table exists is the
// driver's to say first.
func CheckColumns(t Table, table string, has, unique func(column string) bool, addUnique string) []string {
	var problems []string
	if !has(t.Key) {
		problems = append(problems, "table "+table+" has no key column "+strconv.Quote(t.Key)+": fix `key:` of the kind in the config")
	} else if !unique(t.Key) {
		problems = append(problems, "key column "+strconv.Quote(t.Key)+" of table "+table+" has no unique index: pick a unique column as `key:` or add one ("+addUnique+")")
	}
	var missing []string
	for _, c := range t.Payload {
		if !has(c) {
			missing = append(missing, strconv.Quote(c))
		}
	}
	if len(missing) > 0 {
		problems = append(problems, "table "+table+" has no payload column(s) "+strings.Join(missing, ", ")+": fix `payload:` of the kind in the config")
	}
	missing = missing[:0]
	for _, c := range Columns {
		if !has(c) {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		problems = append(problems, "table "+table+" lacks refresh column(s) "+strings.Join(missing, ", ")+": run `refresher migrate --config FILE` (or `refresher migrate --print` for the SQL)")
	}
	return problems
}

// DistinctKeys returns keys without repeats, in the order of their first
// occurrence.
func DistinctKeys(keys []string) []string {
	seen := make(map[string]struct{}, len(keys))
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		if _, ok := seen[k]; !ok {
			seen[k] = struct{}{}
			out = append(out, k)
		}
	}
	return out
}

// AppendInList writes "(?,?,...)" with one placeholder per key to b and
// returns the keys as statement arguments: the key list of a LockByKeys
// query for drivers whose placeholder is "?".
func AppendInList(b *strings.Builder, keys []string) []any {
	args := make([]any, len(keys))
	b.WriteByte('(')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('?')
		args[i] = k
	}
	b.WriteByte(')')
	return args
}

// RowsByKeys reads the rows of keys with read, per chunks of at most per
// keys in the order given, and maps them by Row.Key (the key as the
// database returns it). It is LockByKeys's loop for the drivers whose
// statements take one placeholder per key.
func RowsByKeys(keys []string, per int, read func(chunk []string) ([]Row, error)) (map[string]Row, error) {
	out := make(map[string]Row, len(keys))
	for start := 0; start < len(keys); start += per {
		rows, err := read(keys[start:min(start+per, len(keys))])
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			out[r.Key] = r
		}
	}
	return out, nil
}
