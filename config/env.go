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
	return nil
}
