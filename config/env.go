package config

import (
	"fmt"
	"reflect"
	"strings"
)

// EnvPrefix starts the name of every environment variable: the top-level key
// upper-cased, e.g. REFRESHER_DATABASE, REFRESHER_BATCH_SIZE, REFRESHER_KINDS.
const EnvPrefix = "REFRESHER_"

// ApplyEnv overrides each top-level setting whose environment variable is
// set. String settings take the value as it is; others (numbers, durations,
// the kinds list) are read as YAML, so one kind fits in one variable:
//
//	REFRESHER_KINDS='[{name: big_tables, key: uid, payload: [input_url], schedule: "RRULE:FREQ=HOURLY"}]'
//
// Then each kind's database: KindDatabaseEnv(name) overrides the kind's
// database key, so that its URL (and password) can come from a secret like
// REFRESHER_DATABASE's.
func ApplyEnv(c *Config, lookup func(string) (string, bool)) error {
	v := reflect.ValueOf(c).Elem()
	t := v.Type()
	for i := range t.NumField() {
		tag := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]
		if tag == "" || tag == "-" {
			continue
		}
		name := EnvPrefix + strings.ToUpper(tag)
		val, ok := lookup(name)
		if !ok || val == "" {
			continue
		}
		f := v.Field(i)
		if f.Kind() == reflect.String {
			f.SetString(val)
			continue
		}
		fresh := reflect.New(f.Type())
		if err := decode([]byte(val), fresh.Interface()); err != nil {
			return fmt.Errorf("environment %s: %w", name, err)
		}
		f.Set(fresh.Elem())
	}
	return applyKindDatabases(c, lookup)
}

// KindDatabaseEnv is the environment variable of a kind's database:
// REFRESHER_DATABASE_ and the kind's name upper-cased, '-' written '_'
// (kind big-tables: REFRESHER_DATABASE_BIG_TABLES).
func KindDatabaseEnv(kind string) string {
	return EnvPrefix + "DATABASE_" + strings.ToUpper(strings.ReplaceAll(kind, "-", "_"))
}

// applyKindDatabases sets each kind's database from its variable when set.
// Two kinds whose names differ only by '-' and '_' share a variable: set,
// it is refused, since it cannot say which one it means.
func applyKindDatabases(c *Config, lookup func(string) (string, bool)) error {
	by := map[string][]string{}
	for i := range c.Kinds {
		k := &c.Kinds[i]
		name := KindDatabaseEnv(k.Name)
		val, ok := lookup(name)
		if !ok || val == "" {
			continue
		}
		by[name] = append(by[name], k.Name)
		if len(by[name]) > 1 {
			return fmt.Errorf("environment %s: names kinds %s alike; rename one of them (names differing only by '-' and '_' share a variable) or set their database: in the config", name, strings.Join(by[name], " and "))
		}
		k.Database = val
	}
	return nil
}
