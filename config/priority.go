package config

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"time"
)

// Priority is one named priority level of `priorities:` (docs/schedules.md,
// "Priorities"): the value rows, kinds and "refresh now" use, and the
// thresholds of its alerts.
type Priority struct {
	// Level orders the work: lower runs first, as in Delayed::Job. A kind's
	// rows whose refresh_priority is NULL have the level of the kind's
	// `priority:`; a row's refresh_priority and a trigger's priority are
	// levels too. -32768 to 32767 (the columns are SMALLINT).
	Level int `yaml:"level"`
	// AlertMaxAttempts is the refresh_attempt_no at which the alert
	// RefresherMaxAttempts fires for the kinds of this priority
	// (refresher_priority_alert_max_attempts). Required, at least 1.
	AlertMaxAttempts int `yaml:"alert_max_attempts"`
	// AlertMaxAge is the age of the oldest due row at which the alert
	// RefresherOldestDue fires for the kinds of this priority
	// (refresher_priority_alert_max_age_seconds). Required, positive.
	AlertMaxAge Duration `yaml:"alert_max_age"`
}

// DefaultPriorities are the levels when the configuration names none,
// after the thresholds of Delayed::Job at Betterment: interactive work
// errors after 2 attempts or about 30 s, eventual work after 8 attempts or
// about 2.5 hours.
var DefaultPriorities = map[string]Priority{
	"interactive": {Level: 0, AlertMaxAttempts: 2, AlertMaxAge: Duration(30 * time.Second)},
	"normal":      {Level: 10, AlertMaxAttempts: 5, AlertMaxAge: Duration(15 * time.Minute)},
	"eventual":    {Level: 20, AlertMaxAttempts: 8, AlertMaxAge: Duration(150 * time.Minute)},
}

// DefaultKindPriority is the level of a kind that names none.
const DefaultKindPriority = "normal"

// NamedPriority is a Priority with its name.
type NamedPriority struct {
	Name string
	Priority
}

// PriorityLevels returns the configured levels, most urgent first (by
// level, then name).
func (c *Config) PriorityLevels() []NamedPriority {
	out := make([]NamedPriority, 0, len(c.Priorities))
	for name, p := range c.Priorities {
		out = append(out, NamedPriority{name, p})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Level != out[j].Level {
			return out[i].Level < out[j].Level
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// PriorityLevel returns the level a priority given by name (a key of
// priorities:) or by number ("-5", "0") stands for.
func (c *Config) PriorityLevel(s string) (int, error) {
	if p, ok := c.Priorities[s]; ok {
		return p.Level, nil
	}
	var n int
	if _, err := fmt.Sscan(s, &n); err == nil && fmt.Sprint(n) == s {
		if n < math.MinInt16 || n > math.MaxInt16 {
			return 0, fmt.Errorf("priority %d is out of range (-32768 to 32767)", n)
		}
		return n, nil
	}
	names := make([]string, 0, len(c.Priorities))
	for _, p := range c.PriorityLevels() {
		names = append(names, p.Name)
	}
	return 0, fmt.Errorf("priority %q is neither a level of priorities: (%v) nor a number", s, names)
}

// lanes are the distinct levels more urgent than level, ascending: the
// kind's priority lanes (refresher.Kind.Lanes).
func (c *Config) lanes(level int) []int {
	var out []int
	for _, p := range c.PriorityLevels() {
		if p.Level < level && !slices.Contains(out, p.Level) {
			out = append(out, p.Level)
		}
	}
	return out
}

// validatePriorities checks priorities: and each kind's priority:.
func (c *Config) validatePriorities(bad func(format string, args ...any)) {
	if len(c.Priorities) == 0 {
		bad("priorities: none configured (leave the key out for the defaults interactive, normal and eventual)")
	}
	for _, p := range c.PriorityLevels() {
		at := "priorities." + p.Name
		if p.Level < math.MinInt16 || p.Level > math.MaxInt16 {
			bad("%s.level: %d is out of range (use -32768 to 32767; lower runs first)", at, p.Level)
		}
		if p.AlertMaxAttempts < 1 {
			bad("%s.alert_max_attempts: %d must be at least 1 (e.g. 2 for interactive work, 8 for eventual)", at, p.AlertMaxAttempts)
		}
		if p.AlertMaxAge <= 0 {
			bad("%s.alert_max_age: %s must be positive (e.g. 30s for interactive work, 2h30m for eventual)", at, p.AlertMaxAge)
		}
	}
	for i := range c.Kinds {
		k := &c.Kinds[i]
		p, ok := c.Priorities[k.Priority]
		k.PriorityLevel, k.Lanes = p.Level, c.lanes(p.Level)
		k.priorityLevels = map[string]int{}
		for name, p := range c.Priorities {
			k.priorityLevels[name] = p.Level
		}
		if !ok {
			names := make([]string, 0, len(c.Priorities))
			for _, p := range c.PriorityLevels() {
				names = append(names, p.Name)
			}
			bad("kinds[%d] (%s).priority: %q is not a level of priorities: %v (name one, or add it under priorities:)", i, k.Name, k.Priority, names)
		}
	}
}
