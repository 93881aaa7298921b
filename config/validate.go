package config

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
	"github.com/refresher/refresher/schedule"
)

var (
	kindName   = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	identifier = regexp.MustCompile(`^[A-Za-z0-9_$]{1,64}$`)
	// redisPrefix: printable, no spaces (it starts Redis key names).
	redisPrefix = regexp.MustCompile(`^[^\s\x00-\x1f\x7f]{0,100}$`)
)

// Validate checks every value (after SetDefaults) and parses the schedules
// and retry specs. The error lists every problem, each naming its key.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.BatchSize < 1 || c.BatchSize > 10_000 {
		bad("batch_size: %d is out of range (use 1 to 10000; default %d)", c.BatchSize, Defaults.BatchSize)
	}
	if c.SearchScanBudget < 1 || c.SearchScanBudget > 1_000_000 {
		bad("search_scan_budget: %d is out of range (use 1 to 1000000; default %d)", c.SearchScanBudget, Defaults.SearchScanBudget)
	}
	if c.MaxSleep <= 0 {
		bad("max_sleep: %s is not allowed: must be positive, e.g. 1s (leave it out for the default %s)", c.MaxSleep, Defaults.MaxSleep)
	}
	if c.Heartbeat.D() < 2*time.Second {
		bad("heartbeat: %s is too short (use at least 2s; leave it out for the default %s)", c.Heartbeat, Defaults.Heartbeat)
	}
	if err := redisio.CheckInstanceID(c.InstanceID); err != nil {
		bad("instance_id: %v", err)
	}
	if !redisPrefix.MatchString(c.RedisPrefix) {
		bad("redis_prefix: %q may not hold spaces or control characters and is at most 100 characters (e.g. \"shop:\")", c.RedisPrefix)
	}
	c.validateHTTP(bad)
	c.validatePriorities(bad)
	if len(c.Kinds) == 0 {
		bad("kinds: none configured (add at least one, e.g. kinds: [{name: big_tables, schedule: \"RRULE:FREQ=DAILY\"}], or set REFRESHER_KINDS)")
	}
	seen := map[string]bool{}
	for i := range c.Kinds {
		k := &c.Kinds[i]
		at := fmt.Sprintf("kinds[%d]", i)
		if k.Name != "" {
			at = fmt.Sprintf("kinds[%d] (%s)", i, k.Name)
		}
		switch {
		case k.Name == "":
			bad("%s.name: missing (each kind needs a name, e.g. big_tables)", at)
		case !kindName.MatchString(k.Name):
			bad("%s.name: %q may only hold letters, digits, '_' and '-'", at, k.Name)
		case seen[k.Name]:
			bad("%s.name: %q is configured twice", at, k.Name)
		}
		seen[k.Name] = true
		for key, id := range map[string]string{"table": k.Table, "key": k.Key} {
			if !identifier.MatchString(id) {
				bad("%s.%s: %q is not a plain table or column name (letters, digits, '_')", at, key, id)
			}
		}
		for _, col := range k.Payload {
			if !identifier.MatchString(col) {
				bad("%s.payload: %q is not a plain column name (letters, digits, '_')", at, col)
			}
		}
		if k.Timeout <= 0 {
			bad("%s.timeout: %s is not allowed: an attempt needs time to run; write how long one may take, e.g. 2h (leave it out for the default %s)", at, k.Timeout, KindDefaults.Timeout)
		}
		if k.MaxTimeout != 0 && k.MaxTimeout < k.Timeout {
			bad("%s.max_timeout: %s is less than timeout %s: an attempt may not be extended to less than it already has; write at least %s (leave it out for %d times timeout)", at, policy.FormatDuration(k.MaxTimeout.D()), policy.FormatDuration(k.Timeout.D()), policy.FormatDuration(k.Timeout.D()), policy.DefaultMaxTimeoutFactor)
		}
		if k.MaxQueued < 1 {
			bad("%s.max_queued: must be at least 1", at)
		}
		if k.MaxDead < 1 {
			bad("%s.max_dead: %d is out of range (use at least 1; default %d)", at, k.MaxDead, KindDefaults.MaxDead)
		}
		if k.MaxResultBytes < 1 || k.MaxResultBytes > MaxMaxResultBytes {
			bad("%s.max_result_bytes: %d is out of range (use 1 to %d; default %d)", at, k.MaxResultBytes, MaxMaxResultBytes, KindDefaults.MaxResultBytes)
		}
		if k.Schedule == "" {
			bad("%s.schedule: missing (e.g. \"DTSTART;TZID=Europe/Berlin:20260101T140000\\nRRULE:FREQ=DAILY\")", at)
		} else if s, err := schedule.Parse(k.Schedule); err != nil {
			bad("%s.schedule: %v", at, err)
		} else {
			k.ScheduleParsed = s
		}
		if r, err := policy.ParseRetry(k.Retry); err != nil {
			bad("%s.retry: %v", at, err)
		} else {
			k.RetryParsed = r
		}
		if err := (policy.Policy{DisabledReason: k.DisabledReason}).Validate(); err != nil {
			bad("%s.disabled_reason: %v", at, err)
		}
		if err := (policy.Policy{PermanentReason: k.PermanentReason}).Validate(); err != nil {
			bad("%s.permanent_reason: %v", at, err)
		}
		if k.ThrottleGroup != "" && !slices.Contains(k.Payload, k.ThrottleGroup) {
			bad("%s.throttle_group: %q is not a payload column (add it to payload, e.g. payload: [%s], so each job carries it and the worker can send it back as throttle_key)", at, k.ThrottleGroup, strings.Join(append(slices.Clone(k.Payload), k.ThrottleGroup), ", "))
		}
		if k.IncidentWindow == zeroWritten || k.IncidentRetry == zeroWritten {
			bad("%s.incident_window, incident_retry: 0s is not allowed (leave them out for the defaults 5m and 1m; incident_guard: false turns the guard off)", at)
		} else if err := k.Guard().Validate(); err != nil {
			bad("%s: %v (keys incident_threshold, incident_min_results, incident_window, incident_retry)", at, err)
		}
		if k.MaxRetryAfter.D() < 0 {
			bad("%s.max_retry_after: must not be negative (e.g. 168h, the default)", at)
		}
		for _, err := range k.validateSchedulePolicy() {
			bad("%s.%v", at, err)
		}
	}
	names := make([]string, len(c.Kinds))
	lists := make([]redisio.Lists, len(c.Kinds))
	tables := map[[2]string]string{} // database URL and lower-case table name: first kind
	for i, k := range c.Kinds {
		names[i] = k.Name
		lists[i] = k.Lists()
		if k.Table == "" {
			continue
		}
		at := [2]string{c.KindDatabase(&k), strings.ToLower(k.Table)}
		if first, ok := tables[at]; ok {
			bad("kinds %s and %s both refresh table %s: each table needs exactly one kind (two would dispatch and apply its rows twice)", first, k.Name, k.Table)
			continue
		}
		tables[at] = k.Name
	}
	if redisio.TopologyOf(c.Redis) == redisio.Cluster {
		for i, l := range lists {
			if err := l.CheckTag(); err != nil {
				bad("kinds[%d] (%s): %v", i, names[i], err)
			}
		}
	}
	for _, err := range redisio.CheckDistinct(names, lists) {
		bad("kinds: %v", err)
	}
	if _, err := c.Worker.Networks(); err != nil {
		bad("worker.allow_networks: %v", err)
	}
	if c.Worker.MaxBodyBytes < 0 {
		bad("worker.max_body_bytes: must be positive (default 100 MB)")
	}
	c.Ledger.validate(bad)
	return errors.Join(errs...)
}

// Guard returns the kind's incident guard, from its incident_* keys.
func (k *Kind) Guard() policy.Guard {
	return policy.Guard{
		Off:        k.IncidentGuard != nil && !*k.IncidentGuard,
		Threshold:  k.IncidentThreshold,
		MinResults: k.IncidentMinResults,
		Window:     k.IncidentWindow.D(),
		Retry:      k.IncidentRetry.D(),
	}
}

// Kind returns the kind with the given name.
func (c *Config) Kind(name string) (*Kind, error) {
	names := make([]string, 0, len(c.Kinds))
	for i := range c.Kinds {
		if c.Kinds[i].Name == name {
			return &c.Kinds[i], nil
		}
		names = append(names, c.Kinds[i].Name)
	}
	return nil, fmt.Errorf("unknown kind %q (configured: %v)", name, names)
}
