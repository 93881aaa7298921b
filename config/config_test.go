package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
	"github.com/refresher/refresher/refresher"
)

const goodYAML = `
database: "root:@tcp(127.0.0.1:3306)/app?parseTime=true&loc=UTC"
redis: "redis://127.0.0.1:6379/0"
kinds:
  - name: big_tables
    table: big_tables
    key: uid
    payload: [input_url]
    schedule: "DTSTART:20260101T000000Z\nRRULE:FREQ=HOURLY;INTERVAL=2"
    timeout: 2h
    retry: "delays:0s,1m,5m,15m,30m,1h"
    disabled_reason: "Cannot refresh BigTable after {attempts} attempt(s)"
    permanent_reason: "Cannot refresh BigTable: the source was rejected"
    max_retry_after: 24h
    input: big_tables-input
    output: big_tables-output
    dead: big_tables-dead
`

func writeFile(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "refresher.yml")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	return path
}

func noEnv(string) (string, bool) { return "", false }

func load(t *testing.T, text string, env map[string]string) (*Config, error) {
	t.Helper()
	var c Config
	if err := decode([]byte(text), &c); err != nil {
		return nil, err
	}
	lookup := noEnv
	if env != nil {
		lookup = func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	}
	if err := ApplyEnv(&c, lookup); err != nil {
		return nil, err
	}
	c.SetDefaults()
	return &c, c.Validate()
}

func TestLoadFile(t *testing.T) {
	t.Parallel()
	c, err := Load(writeFile(t, goodYAML))
	require.NoError(t, err)
	require.Len(t, c.Kinds, 1)
	k := c.Kinds[0]
	require.Equal(t, "uid", k.Key)
	require.Equal(t, []string{"input_url"}, k.Payload)
	require.Equal(t, 2*time.Hour, k.Timeout.D())
	require.NotNil(t, k.ScheduleParsed)
	require.NotNil(t, k.RetryParsed)
	require.Equal(t, "big_tables-dead", k.Dead)
	require.Equal(t, "Cannot refresh BigTable: the source was rejected", k.PermanentReason)
	require.Equal(t, 24*time.Hour, k.MaxRetryAfter.D())
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	c, err := load(t, `kinds: [{name: items, schedule: "RRULE:FREQ=DAILY"}]`, nil)
	require.NoError(t, err)
	require.Equal(t, Defaults.Database, c.Database)
	require.Equal(t, Defaults.Redis, c.Redis)
	require.Equal(t, refresher.DefaultBatchSize, c.BatchSize)
	require.Equal(t, refresher.DefaultMaxSleep, c.MaxSleep.D())
	require.Equal(t, refresher.DefaultHeartbeat, c.Heartbeat.D())
	require.NotEmpty(t, c.InstanceID)
	k := c.Kinds[0]
	require.Equal(t, "items", k.Table)
	require.Equal(t, "id", k.Key)
	require.Equal(t, policy.DefaultTimeout, k.Timeout.D())
	require.Equal(t, "items-input", k.Input)
	require.Equal(t, "items-output", k.Output)
	require.Equal(t, "items-dead", k.Dead)
	require.Equal(t, refresher.DefaultMaxQueued, k.MaxQueued)
	require.Equal(t, models.DefaultLateAfter, k.LateAfter.D())
	require.Equal(t, redisio.DefaultMaxDead, k.MaxDead)
	require.Equal(t, redisio.DefaultMaxResultBytes, k.MaxResultBytes)
	require.Equal(t, policy.DefaultRetrySpec, k.Retry)
	require.Equal(t, refresher.DefaultGaugeInterval, c.GaugeInterval.D())
	require.Equal(t, models.DefaultScanBudget, c.SearchScanBudget)
}

func TestEnvironmentOnly(t *testing.T) {
	t.Parallel()
	c, err := load(t, "", map[string]string{
		"REFRESHER_DATABASE":   "root:secret@tcp(mysql:3306)/app?parseTime=true&loc=UTC",
		"REFRESHER_REDIS":      "redis://redis:6379/0",
		"REFRESHER_BATCH_SIZE": "500",
		"REFRESHER_MAX_SLEEP":  "250ms",
		"REFRESHER_KINDS":      `[{name: big_tables, key: uid, payload: [input_url], schedule: "RRULE:FREQ=MINUTELY;INTERVAL=5", timeout: 2m}]`,
	})
	require.NoError(t, err)
	require.Equal(t, "root:secret@tcp(mysql:3306)/app?parseTime=true&loc=UTC", c.Database)
	require.Equal(t, "redis://redis:6379/0", c.Redis)
	require.Equal(t, 500, c.BatchSize)
	require.Equal(t, 250*time.Millisecond, c.MaxSleep.D())
	require.Equal(t, "big_tables", c.Kinds[0].Name)
	require.Equal(t, 2*time.Minute, c.Kinds[0].Timeout.D())
}

func TestEnvironmentOverridesFile(t *testing.T) {
	t.Parallel()
	c, err := load(t, goodYAML, map[string]string{"REFRESHER_REDIS": "redis://other:6379/1"})
	require.NoError(t, err)
	require.Equal(t, "redis://other:6379/1", c.Redis)
	require.Equal(t, "big_tables", c.Kinds[0].Name)
}

// Each bad config must fail with a message that names the key and the fix.
func TestValidationErrors(t *testing.T) {
	t.Parallel()
	kind := func(extra string) string {
		return "kinds:\n  - name: big_tables\n    schedule: \"RRULE:FREQ=DAILY\"\n" + extra
	}
	for _, tt := range []struct {
		name, yaml string
		env        map[string]string
		want       []string
	}{
		{"unknown kind key", kind("    tabel: x\n"), nil, []string{`unknown key "tabel"`, "known keys: name, table"}},
		{"unknown top key", "databse: x\n" + kind(""), nil, []string{`unknown key "databse"`, "database, max_connections, redis"}},
		{"bad duration", kind("    timeout: 2 hours\n"), nil, []string{`"2 hours" is not a duration`, "2h"}},
		{"bad retry", kind("    retry: \"exponential:base=1s,factr=2\"\n"), nil, []string{"kinds[0] (big_tables).retry", "factr"}},
		{"bad schedule", "kinds:\n  - name: big_tables\n    schedule: \"RRULE:FREQ=DAYLY\"\n", nil, []string{"kinds[0] (big_tables).schedule", "DAYLY"}},
		{"missing schedule", "kinds:\n  - name: big_tables\n", nil, []string{"kinds[0] (big_tables).schedule: missing"}},
		{"no kinds", "redis: redis://x\n", nil, []string{"kinds: none configured"}},
		{"bad table", kind("    table: \"drop table x\"\n"), nil, []string{"kinds[0] (big_tables).table", "not a plain table or column name"}},
		{"bad payload", kind("    payload: [\"a;b\"]\n"), nil, []string{"kinds[0] (big_tables).payload", `"a;b"`}},
		{"duplicate kind", kind("") + "  - name: big_tables\n    schedule: \"RRULE:FREQ=DAILY\"\n", nil, []string{`"big_tables" is configured twice`}},
		{"bad disabled reason", kind("    disabled_reason: \"Broken after {attempt}\"\n"), nil, []string{"kinds[0] (big_tables).disabled_reason", "unknown placeholder {attempt}"}},
		{"bad permanent reason", kind("    permanent_reason: \"{model} rejected\"\n"), nil, []string{"kinds[0] (big_tables).permanent_reason", "unknown placeholder {model}"}},
		{"negative max_retry_after", kind("    max_retry_after: -1h\n"), nil, []string{"kinds[0] (big_tables).max_retry_after: must not be negative"}},
		{"max_timeout below timeout", kind("    timeout: 2h\n    max_timeout: 90m\n"), nil,
			[]string{"kinds[0] (big_tables).max_timeout: 1h30m is less than timeout 2h: an attempt may not be extended to less than it already has; write at least 2h (leave it out for 4 times timeout)"}},
		{"negative max_timeout", kind("    max_timeout: -1h\n"), nil, []string{"kinds[0] (big_tables).max_timeout: -1h is less than timeout 1h"}},
		{"same lists", kind("    input: q\n    output: q\n"), nil, []string{`kind big_tables uses the list "q" as its input and its output list`}},
		{"dead is another kind's output", kind("    dead: small_tables-output\n") + "  - name: small_tables\n    schedule: \"RRULE:FREQ=DAILY\"\n", nil,
			[]string{`kinds big_tables and small_tables share the list "small_tables-output" (as dead and output list)`}},
		{"ping-pong", kind("    dead: small_tables-output\n") + "  - name: small_tables\n    schedule: \"RRULE:FREQ=DAILY\"\n    dead: big_tables-output\n", nil,
			[]string{`kinds big_tables and small_tables share the list "small_tables-output" (as dead and output list)`,
				`kinds big_tables and small_tables share the list "big_tables-output" (as output and dead list)`}},
		{"shared output", kind("    output: results\n") + "  - name: small_tables\n    schedule: \"RRULE:FREQ=DAILY\"\n    output: results\n", nil,
			[]string{`kinds big_tables and small_tables share the list "results" (as output and output list)`}},
		{"list under an output's keys", kind("") + "  - name: small_tables\n    schedule: \"RRULE:FREQ=DAILY\"\n    input: big_tables-output:processing:x\n", nil,
			[]string{`the input list "big_tables-output:processing:x" of kind small_tables starts with "big_tables-output:"`}},
		{"same table", kind("    table: Items\n") + "  - name: small_tables\n    schedule: \"RRULE:FREQ=DAILY\"\n    table: items\n", nil,
			[]string{"kinds big_tables and small_tables both refresh table items"}},
		{"zero timeout", kind("    timeout: 0s\n"), nil, []string{"kinds[0] (big_tables).timeout: 0s is not allowed", "e.g. 2h", "default 1h0m0s"}},
		{"zero heartbeat", "heartbeat: 0s\n" + kind(""), nil, []string{"heartbeat: 0s is too short (use at least 2s"}},
		{"zero max sleep", kind(""), map[string]string{"REFRESHER_MAX_SLEEP": "0s"}, []string{"max_sleep: 0s is not allowed: must be positive, e.g. 1s"}},
		{"negative timeout", kind("    timeout: -5m\n"), nil, []string{"kinds[0] (big_tables).timeout: -5m0s is not allowed"}},
		{"max dead", kind("    max_dead: -1\n"), nil, []string{"kinds[0] (big_tables).max_dead: -1 is out of range"}},
		{"max result bytes", kind("    max_result_bytes: 999999999\n"), nil, []string{"kinds[0] (big_tables).max_result_bytes: 999999999 is out of range (use 1 to 16777216; default 65536)"}},
		{"batch size", "batch_size: 0\n" + kind(""), map[string]string{"REFRESHER_BATCH_SIZE": "20000"}, []string{"batch_size: 20000 is out of range"}},
		{"bad env kinds", "", map[string]string{"REFRESHER_KINDS": "[{name: x, colour: red}]"}, []string{"environment REFRESHER_KINDS", `unknown key "colour"`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := load(t, tt.yaml, tt.env)
			require.Error(t, err)
			for _, w := range tt.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
}

// New per-kind settings have defaults and are read from the file.
func TestLimits(t *testing.T) {
	t.Parallel()
	c, err := load(t, goodYAML, nil)
	require.NoError(t, err)
	require.Equal(t, 10_000, c.Kinds[0].MaxDead)
	require.Equal(t, 65536, c.Kinds[0].MaxResultBytes)
	c, err = load(t, "kinds:\n  - name: a\n    schedule: \"RRULE:FREQ=DAILY\"\n    max_dead: 5\n    max_result_bytes: 1024\n", nil)
	require.NoError(t, err)
	require.Equal(t, 5, c.Kinds[0].MaxDead)
	require.Equal(t, 1024, c.Kinds[0].MaxResultBytes)
}

func TestKindLookup(t *testing.T) {
	t.Parallel()
	c, err := load(t, goodYAML, nil)
	require.NoError(t, err)
	k, err := c.Kind("big_tables")
	require.NoError(t, err)
	require.Equal(t, "big_tables", k.Name)
	_, err = c.Kind("nope")
	require.ErrorContains(t, err, `unknown kind "nope" (configured: [big_tables])`)
}

func TestLoadMissingFile(t *testing.T) {
	t.Parallel()
	_, err := Load(filepath.Join(t.TempDir(), "missing.yml"))
	require.Error(t, err)
	require.True(t, strings.HasPrefix(err.Error(), "read config:"), err.Error())
}
