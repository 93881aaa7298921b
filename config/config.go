// Package config reads refresher's configuration: a YAML file, overridden by
// environment variables (one per top-level key), with defaults filled in and
// every value validated with a message that names the key and the fix.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"regexp"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/schedule"
)

// MaxMaxResultBytes is the largest max_result_bytes accepted (16 MiB): a
// result is a small JSON object.
const MaxMaxResultBytes = 16 << 20

// Config is the whole configuration of one refresher process.
type Config struct {
	// Database names the database of the kinds that name none of their
	// own (Kind.Database), and its driver, by URL:
	// mysql://user:pass@host:3306/app (MySQL 8.0.1+ or MariaDB 10.6+),
	// postgres://user:pass@host:5432/app or sqlite:///path/app.db. A
	// go-sql-driver DSN without a scheme ("user:pass@tcp(host:3306)/app")
	// is MySQL. Default: Defaults.Database.
	Database string `yaml:"database"`
	// MaxConnections caps the database connections of the process to each
	// database (a kind's own Database is another), shared by the loops of
	// the kinds on it. Default 16.
	MaxConnections int `yaml:"max_connections"`
	// Redis is the Redis URL: one server (redis://), a Redis Cluster
	// (redis+cluster://h1:7000,h2:7001) or a master behind Sentinel
	// (redis+sentinel://s1:26379,s2:26379/mymaster); see redisio.Open.
	// Default "redis://127.0.0.1:6379/0".
	Redis string `yaml:"redis"`
	// RedisPrefix starts the default list names of every kind
	// ("<prefix><name>-input", -output, -dead), and so every key the service
	// derives from them, so that deployments whose kinds share names can
	// share one Redis. Lists named in a kind are used as written. Default ""
	// (today's names). At most 100 characters, no spaces or control
	// characters.
	RedisPrefix string `yaml:"redis_prefix"`
	// HTTP is the listen address of the operator's HTTP server: /metrics
	// (Prometheus), /healthz, /readyz, the API under /api/v1/ and the
	// dashboard at /. Default "127.0.0.1:9090" (Defaults.HTTP); "off" for no
	// server. An address other than loopback needs api_tokens, and reads
	// need a token there too unless http_public_read; on loopback only
	// loopback names are answered in Host.
	HTTP string `yaml:"http"`
	// Metrics is the former name of HTTP, kept as an alias: used when HTTP
	// is not set.
	Metrics string `yaml:"metrics"`
	// APITokens maps a token's name (shown in logs, never the token) to a
	// bearer token (at least 16 characters) and its role: "act" reads and
	// changes state through the API and the dashboard, "read" only reads.
	// A token written alone has role act (see APIToken). Without one of
	// role act, the API is read-only. From the environment:
	// REFRESHER_API_TOKENS='{alice: "long-random-text"}'.
	APITokens map[string]APIToken `yaml:"api_tokens"`
	// HTTPPublicRead lets anyone who reaches a listener off loopback read
	// the API, the dashboard and /metrics without a token. Default false:
	// off loopback, reads need a token of role read or act too (on
	// loopback they never do). Environment: REFRESHER_HTTP_PUBLIC_READ.
	HTTPPublicRead bool `yaml:"http_public_read"`
	// HTTPMaxConnections caps the operator listener's open connections; at
	// the cap, a new connection closes the longest idle one. It is lowered
	// to fit the process's open-file limit. Default 256.
	HTTPMaxConnections int `yaml:"http_max_connections"`
	// GaugeInterval is how often the alert gauges (oldest due age, highest
	// attempt number, models by state, list lengths) are computed, by one
	// instance at a time. Default 15s.
	GaugeInterval Duration `yaml:"gauge_interval"`
	// SearchScanBudget bounds one model search (q= in the API and the
	// dashboard): the table rows a request examines, in key order, before it
	// answers with where to search on. Larger finds more per page and
	// answers more slowly on a big table. Default 5000; 1 to 1,000,000.
	SearchScanBudget int `yaml:"search_scan_budget"`
	// InstanceID names this process's processing lists in Redis. Each running
	// process needs its own. Default: hostname and a random suffix.
	InstanceID string `yaml:"instance_id"`
	// BatchSize is how many rows one transaction claims or applies. Default 1000.
	BatchSize int `yaml:"batch_size"`
	// MaxSleep caps how long the dispatcher sleeps before looking for due rows
	// again (it wakes earlier for the earliest refresh_at). Default 1s.
	MaxSleep Duration `yaml:"max_sleep"`
	// Heartbeat is how long a process may stay silent before other processes
	// take over the results it had fetched but not applied. Default 30s.
	Heartbeat Duration `yaml:"heartbeat"`
	// Priorities names the priority levels (see Priority): a kind's
	// `priority:` and the CLI's and API's `trigger --priority` name one.
	// Default DefaultPriorities (interactive 0, normal 10, eventual 20); a
	// map given here replaces it whole.
	Priorities map[string]Priority `yaml:"priorities"`
	// Kinds are the tables to refresh. At least one.
	Kinds []Kind `yaml:"kinds"`
	// Worker holds the reference worker's settings (see Worker).
	Worker Worker `yaml:"worker"`
	// Ledger is what the service records of its decisions (see Ledger).
	Ledger Ledger `yaml:"ledger"`
}

// Kind is one configured table.
type Kind struct {
	// Name names the kind in jobs, logs and metrics, and is the default table
	// name and list prefix. Required; letters, digits, '_' and '-'.
	Name string `yaml:"name"`
	// Table is the application's table. Default: Name.
	Table string `yaml:"table"`
	// Key is a unique column, sent to workers as "uid". Default "id".
	Key string `yaml:"key"`
	// Database is the URL of the database that holds Table, written as
	// the top-level Database; REFRESHER_DATABASE_<NAME> overrides it (see
	// KindDatabaseEnv). Default: the top-level Database. Kinds with the
	// same URL share one store (see Config.KindDatabase).
	Database string `yaml:"database"`
	// Payload lists the columns copied into each job's payload. Default none.
	Payload []string `yaml:"payload"`
	// Schedule is the default RFC 5545 rule of the kind's rows; a row's
	// refresh_rrule overrides it. Required.
	Schedule string `yaml:"schedule"`
	// Timeout is how long an attempt may run before it counts as failed.
	// Default 1h.
	Timeout Duration `yaml:"timeout"`
	// MaxTimeout is the longest an attempt may run, counted from its start,
	// however its worker extends it (an "extend" result). At least
	// Timeout. Default 4 times Timeout (policy.DefaultMaxTimeoutFactor).
	MaxTimeout Duration `yaml:"max_timeout"`
	// Retry is the retry policy spec. Default "delays:0s,1m,5m,15m,30m,1h".
	Retry string `yaml:"retry"`
	// DisabledReason is the user-friendly reason stored when the retry policy
	// gives up; {kind} and {attempts} are replaced. Default
	// "Cannot refresh {kind} after {attempts} attempt(s)".
	DisabledReason string `yaml:"disabled_reason"`
	// PermanentReason is the user-friendly reason stored when a worker
	// reports a permanent failure without a user_friendly_reason; {kind}
	// and {attempts} are replaced. Default
	// "Cannot refresh {kind}: the source was rejected".
	PermanentReason string `yaml:"permanent_reason"`
	// MaxRetryAfter caps a worker's retry_after_seconds. Default 168h (7
	// days).
	MaxRetryAfter Duration `yaml:"max_retry_after"`
	// Input, Output and Dead name the Redis lists. Defaults: <name>-input,
	// <name>-output, <name>-dead (with redis_prefix before the name); on a
	// Redis Cluster {<name>}-input and so on, and lists named here must
	// share one hash tag (redisio.Lists.CheckTag). Every list name must be unique across
	// kinds and roles, and must not start with an output list's name and
	// ":" (see redisio.CheckDistinct).
	Input  string `yaml:"input"`
	Output string `yaml:"output"`
	Dead   string `yaml:"dead"`
	// MaxQueued pauses dispatching this kind while its input list holds this
	// many jobs or more (backpressure when workers fall behind). Default
	// 100000.
	MaxQueued int `yaml:"max_queued"`
	// LateAfter is how long a due row may wait before it counts as late in
	// the API, the dashboard and the gauges. Default 1m.
	LateAfter Duration `yaml:"late_after"`
	// Priority names the kind's level of `priorities:`: the level of its
	// rows whose refresh_priority is NULL, which kind's dispatcher gets a
	// database connection first when they are short, and the label of the
	// kind's alert gauges, so alerts have one threshold per priority.
	// Levels more urgent than it get lists of their own (priority lanes).
	// Default "normal".
	Priority string `yaml:"priority"`
	// MaxDead caps the dead-letter list; the oldest entries beyond it are
	// dropped. Default 10000.
	MaxDead int `yaml:"max_dead"`
	// MaxResultBytes is the size limit of one result; a larger one is
	// dead-lettered with its first 4 KiB, size and SHA-1 and never copied
	// whole out of Redis. Default 65536 (64 KiB); at most 16 MiB.
	MaxResultBytes int `yaml:"max_result_bytes"`
	// ThrottleGroup names a payload column (e.g. the host or the
	// credential id) whose value is a row's throttle group: while a failure
	// with retry_after_seconds and a throttle_key holds a group, none of
	// its rows is dispatched. It must be one of Payload. Default "" (no
	// group: a Retry-After delays only its own row).
	ThrottleGroup string `yaml:"throttle_group"`
	// IncidentGuard turns the incident guard on or off (docs/operating.md,
	// "The incident guard"): during an incident failures do not count and
	// disable nobody. Default true.
	IncidentGuard *bool `yaml:"incident_guard"`
	// IncidentThreshold is the share of non-permanent failures among the
	// results of the window that starts an incident. Default 0.8.
	IncidentThreshold float64 `yaml:"incident_threshold"`
	// IncidentMinResults is the fewest results the window needs for its
	// share to count. Default 50.
	IncidentMinResults int `yaml:"incident_min_results"`
	// IncidentWindow is the sliding window of the statistic (whole
	// minutes). Default 5m.
	IncidentWindow Duration `yaml:"incident_window"`
	// IncidentRetry is the shortest retry delay during an incident.
	// Default 1m.
	IncidentRetry Duration `yaml:"incident_retry"`
	// Spread spreads the kind's rows over a window (e.g. 10m): each row
	// gets a stable offset in [0, spread), from a hash of the kind's name
	// and the row's key at 1 s resolution, and runs at the rule's
	// occurrences plus its offset. Default: none (every row at the rule's
	// times). See policy.Spread.
	Spread Duration `yaml:"spread"`
	// SpreadOwnRules: rows with a refresh_rrule of their own are spread
	// too. Default true; false leaves them at their rule's exact times.
	SpreadOwnRules *bool `yaml:"spread_own_rules"`
	// CatchupWindow is how long a row may have been due (after a downtime,
	// say) and still start; a row due for longer misfires (see Misfire).
	// Default: unlimited.
	CatchupWindow Duration `yaml:"catchup_window"`
	// Misfire is what a row due for longer than CatchupWindow does: skip
	// (the default: it moves to its next occurrence) or run_once (it starts
	// once now). Missed occurrences are never run one by one.
	Misfire string `yaml:"misfire"`

	// Parsed by Validate.
	ScheduleParsed *schedule.Schedule `yaml:"-"`
	RetryParsed    *policy.Retry      `yaml:"-"`
	// PriorityLevel is the level Priority names and Lanes the levels more
	// urgent than it, ascending (refresher.Kind.Lanes); set by Validate.
	PriorityLevel int   `yaml:"-"`
	Lanes         []int `yaml:"-"`
	// priorityLevels are the configured levels by name, for the operator.
	priorityLevels map[string]int
}

// Duration is a time.Duration written as "90s", "5m" or "2h" in YAML.
type Duration time.Duration

// zeroWritten is the value of a Duration written as zero ("0s"): unlike an
// absent key it is not replaced by the default, and Validate refuses it
// (no duration of the configuration means anything sensible at zero).
const zeroWritten = Duration(math.MinInt64)

// UnmarshalYAML parses a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration (use e.g. 90s, 5m or 2h)", n.Line, n.Value)
	}
	*d = Duration(v)
	if v == 0 {
		*d = zeroWritten
	}
	return nil
}

// String formats d as Go does ("1h0m0s"); a written zero is "0s".
func (d Duration) String() string {
	if d == zeroWritten {
		return "0s"
	}
	return time.Duration(d).String()
}

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// Load reads the YAML file at path (none when path is ""), applies the
// environment (see ApplyEnv), fills in defaults and validates.
func Load(path string) (*Config, error) {
	var c Config
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read config: %w", err)
		}
		if err := decode(data, &c); err != nil {
			return nil, fmt.Errorf("config %s: %w", path, err)
		}
	}
	if err := ApplyEnv(&c, os.LookupEnv); err != nil {
		return nil, err
	}
	c.SetDefaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

var unknownField = regexp.MustCompile(`field (\S+) not found in type config\.(\w+)`)

// decode unmarshals YAML strictly: an unknown key is an error that lists the
// known keys.
func decode(data []byte, out any) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	err := dec.Decode(out)
	if err == nil || errors.Is(err, io.EOF) {
		return nil
	}
	msg := unknownField.ReplaceAllStringFunc(err.Error(), func(m string) string {
		sub := unknownField.FindStringSubmatch(m)
		known := yamlKeys(reflect.TypeFor[Config]())
		switch sub[2] {
		case "Kind":
			known = yamlKeys(reflect.TypeFor[Kind]())
		case "Worker":
			known = yamlKeys(reflect.TypeFor[Worker]())
		}
		return fmt.Sprintf("unknown key %q (known keys: %s)", sub[1], known)
	})
	return errors.New(strings.TrimPrefix(msg, "yaml: "))
}

// yamlKeys lists the YAML keys of a struct's fields, in order.
func yamlKeys(t reflect.Type) string {
	var keys []string
	for i := range t.NumField() {
		if k := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]; k != "" && k != "-" {
			keys = append(keys, k)
		}
	}
	return strings.Join(keys, ", ")
}

// HTTPAddr is the operator listener's address: HTTP, else the metrics
// alias, else Defaults.HTTP; "" when set to "off".
func (c *Config) HTTPAddr() string {
	addr := c.HTTP
	if addr == "" {
		addr = c.Metrics
	}
	switch addr {
	case "":
		return Defaults.HTTP
	case "off":
		return ""
	}
	return addr
}
