package config_test

import (
	"cmp"
	"fmt"
	"maps"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/refresher/refresher/config"
	"github.com/refresher/refresher/models/stores"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/worker"
)

// referencePage is the configuration reference checked against the code.
const referencePage = "../docs/configuration.md"

// kindName stands for a kind's name in the defaults derived from it; the
// page writes it as <name>.
const kindName = "KINDNAME"

// keyRow matches one row of the reference's tables:
// | `key` | default | environment | meaning |
var keyRow = regexp.MustCompile("(?m)^\\| `([a-z_]+(?:\\[\\])?(?:\\.[a-z_]+)?)` \\| (.*?) \\| (.*?) \\| .* \\|$")

// setting is what the code says of one key: its default (nil when it has
// no fixed value) and its environment variable ("" when none).
type setting struct {
	def any
	env string
}

// TestConfigurationReference checks docs/configuration.md against the
// config package: one row per YAML key of Config, Kind and Worker, each
// with the default the code applies and the variable ApplyEnv reads. Each
// failure names the row to add, fix or remove.
func TestConfigurationReference(t *testing.T) {
	t.Parallel()
	text, err := os.ReadFile(referencePage)
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ def, env string }
	rows := map[string]row{}
	for _, m := range keyRow.FindAllStringSubmatch(string(text), -1) {
		if _, dup := rows[m[1]]; dup {
			t.Errorf("docs/configuration.md: the key %s has two rows; keep one", m[1])
		}
		rows[m[1]] = row{strings.TrimSpace(m[2]), strings.TrimSpace(m[3])}
	}
	truth := settings(t)
	if len(rows) < len(truth)/2 {
		t.Fatalf("docs/configuration.md: found %d key rows for %d keys; the row pattern no longer matches the tables", len(rows), len(truth))
	}
	for _, key := range slices.Sorted(maps.Keys(truth)) {
		want := truth[key]
		r, ok := rows[key]
		if !ok {
			t.Errorf("docs/configuration.md has no row for the key %s; add to its table:\n%s", key, want.row(key))
			continue
		}
		if msg := want.checkDefault(r.def); msg != "" {
			t.Errorf("docs/configuration.md, row %s: %s; write:\n%s", key, msg, want.row(key))
		}
		if env := want.envCell(); r.env != env {
			t.Errorf("docs/configuration.md, row %s: environment %s, but the config package reads %s; write:\n%s", key, r.env, env, want.row(key))
		}
	}
	for key := range rows {
		if _, ok := truth[key]; !ok {
			t.Errorf("docs/configuration.md, row %s: the config package has no such key (the yaml tags of config.Config, config.Kind and config.Worker); remove the row or fix its name", key)
		}
	}
}

// row renders s as a row of the reference, with the meaning to fill in.
func (s setting) row(key string) string {
	def := "none"
	if s.def != nil {
		def = "`" + format(s.def) + "`"
	}
	return fmt.Sprintf("| `%s` | %s | %s | <what it does> |", key, def, s.envCell())
}

// envCell is the environment cell of s's row: the variable in backticks,
// or none.
func (s setting) envCell() string {
	if s.env == "" {
		return "none"
	}
	return "`" + s.env + "`"
}

// checkDefault compares a row's default cell with s.def. A cell that
// starts with a value in backticks states that value; a cell in plain
// words states that there is no fixed value.
func (s setting) checkDefault(cell string) string {
	value, stated := strings.CutPrefix(cell, "`")
	value, _, _ = strings.Cut(value, "`")
	switch {
	case !stated && s.def == nil:
		return ""
	case !stated:
		return fmt.Sprintf("the default %q is in words, but the config package's is %s", cell, format(s.def))
	case s.def == nil:
		return fmt.Sprintf("the default is %s, but the config package has no fixed default", cell)
	}
	var same bool
	switch d := s.def.(type) {
	case time.Duration:
		v, err := time.ParseDuration(value)
		same = err == nil && v == d
	case int:
		v, err := strconv.Atoi(value)
		same = err == nil && v == d
	case int64:
		v, err := strconv.ParseInt(value, 10, 64)
		same = err == nil && v == d
	case float64:
		v, err := strconv.ParseFloat(value, 64)
		same = err == nil && v == d
	default:
		same = value == format(d)
	}
	if !same {
		return fmt.Sprintf("the default is %s, but the config package's is %s", cell, format(s.def))
	}
	return ""
}

// format writes a default as the page does.
func format(v any) string {
	switch d := v.(type) {
	case time.Duration:
		return policy.FormatDuration(d)
	case float64:
		return strconv.FormatFloat(d, 'g', -1, 64)
	case string:
		return strings.ReplaceAll(d, kindName, "<name>")
	}
	return fmt.Sprint(v)
}

// settings derives every key's default and variable from the config
// package: the YAML tags name the keys; SetDefaults on a configuration
// with one kind gives the defaults (twice: a value that differs between
// the two has no fixed default); downstream gives those the packages that
// use a value apply themselves; ApplyEnv shows which variables it reads.
func settings(t *testing.T) map[string]setting {
	t.Helper()
	defaults := func() *config.Config {
		c := &config.Config{Kinds: []config.Kind{{Name: kindName, Schedule: "RRULE:FREQ=DAILY"}}}
		c.SetDefaults()
		return c
	}
	c, again := defaults(), defaults()
	var read []string
	if err := config.ApplyEnv(&config.Config{}, func(name string) (string, bool) {
		read = append(read, name)
		return "", false
	}); err != nil {
		t.Fatal(err)
	}
	env := func(key string) string {
		for _, name := range read {
			if name == config.EnvPrefix+strings.ToUpper(key) {
				return name
			}
		}
		return ""
	}
	downstream := downstreamDefaults(c)
	out := map[string]setting{}
	var walk func(prefix string, v, v2 reflect.Value, envName string)
	walk = func(prefix string, v, v2 reflect.Value, envName string) {
		for i := range v.NumField() {
			tag := strings.Split(v.Type().Field(i).Tag.Get("yaml"), ",")[0]
			if tag == "" || tag == "-" {
				continue
			}
			key, e := prefix+tag, envName
			if prefix == "" {
				e = env(tag)
			}
			f, f2 := v.Field(i), v2.Field(i)
			var def any
			if d, ok := downstream[key]; ok {
				def = d
			} else if reflect.DeepEqual(f.Interface(), f2.Interface()) {
				def = value(f)
			}
			out[key] = setting{def, e}
			switch key {
			case "kinds":
				walk("kinds[].", f.Index(0), f2.Index(0), e)
			case "worker":
				walk("worker.", f, f2, e)
			case "ledger":
				walk("ledger.", f, f2, e)
			}
		}
	}
	walk("", reflect.ValueOf(c).Elem(), reflect.ValueOf(again).Elem(), "")
	for _, key := range []string{"kinds[].name", "kinds[].schedule"} { // set by defaults() above: required, no default
		s := out[key]
		s.def = nil
		out[key] = s
	}
	return out
}

// value is a field's default as a plain Go value, or nil when the field is
// left unset (its zero value; false is a value).
func value(f reflect.Value) any {
	if f.Kind() != reflect.Bool && f.IsZero() {
		return nil
	}
	switch v := f.Interface().(type) {
	case config.Duration:
		return v.D()
	case *bool:
		return *v
	}
	switch f.Kind() {
	case reflect.Slice, reflect.Map, reflect.Struct:
		return nil // a list, a map or a section: no single default
	}
	return f.Interface()
}

// downstreamDefaults are the defaults SetDefaults leaves unset and the
// packages that use the value apply: the keys' documented defaults must
// be theirs.
func downstreamDefaults(c *config.Config) map[string]any {
	k := c.Kinds[0]
	guard := k.Guard().WithDefaults()
	spread := k
	spread.Spread = config.Duration(10 * time.Minute)
	misfire, _ := policy.ParseMisfire(k.Misfire)
	return map[string]any{
		"http":                         c.HTTPAddr(),
		"max_connections":              stores.DefaultMaxConnections,
		"kinds[].disabled_reason":      cmp.Or(k.DisabledReason, policy.DefaultDisabledReason),
		"kinds[].permanent_reason":     cmp.Or(k.PermanentReason, policy.DefaultPermanentReason),
		"kinds[].max_retry_after":      cmp.Or(k.MaxRetryAfter.D(), policy.DefaultMaxRetryAfter),
		"kinds[].max_timeout":          nil, // policy.DefaultMaxTimeoutFactor times timeout
		"kinds[].incident_guard":       !guard.Off,
		"kinds[].incident_threshold":   guard.Threshold,
		"kinds[].incident_min_results": guard.MinResults,
		"kinds[].incident_window":      guard.Window,
		"kinds[].incident_retry":       guard.Retry,
		"kinds[].spread_own_rules":     !spread.SpreadPolicy().SkipOwnRules,
		"kinds[].misfire":              string(misfire),
		"worker.max_body_bytes":        cmp.Or(c.Worker.MaxBodyBytes, worker.MaxBodyBytesDefault),
	}
}
