package config

import (
	"cmp"
	"log/slog"
	"slices"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/models/stores"
	"github.com/refresher/refresher/operator"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
	"github.com/refresher/refresher/refresher"
)

// The runtime values of a loaded configuration (after Load, or SetDefaults
// and Validate, which parse the schedule and the retry spec). Every command
// takes them from here, so that the service, the operator surface and the
// gauges see each kind alike.

// Policy is the kind's policy: timeout, retry, reasons, incident guard,
// catchup and spread.
func (k *Kind) Policy() policy.Policy {
	return policy.Policy{
		Kind:            k.Name,
		Timeout:         k.Timeout.D(),
		MaxTimeout:      k.MaxTimeout.D(),
		Retry:           k.RetryParsed,
		DisabledReason:  k.DisabledReason,
		PermanentReason: k.PermanentReason,
		MaxRetryAfter:   k.MaxRetryAfter.D(),
		Guard:           k.Guard(),
		Catchup:         k.CatchupPolicy(),
		Spread:          k.SpreadPolicy(),
	}
}

// Lists are the kind's Redis lists and their limits.
func (k *Kind) Lists() redisio.Lists {
	return redisio.Lists{Input: k.Input, Output: k.Output, Dead: k.Dead, MaxDead: k.MaxDead, MaxResultBytes: k.MaxResultBytes}
}

// ModelsTable is the kind's table as the store reads it: its name, key and
// payload columns.
func (k *Kind) ModelsTable() models.Table {
	return models.Table{Name: k.Table, Key: k.Key, Payload: k.Payload, Priority: k.PriorityLevel}
}

// Service is the kind as the service runs it.
func (k *Kind) Service() refresher.Kind {
	return refresher.Kind{Name: k.Name, Table: k.ModelsTable(), Lists: k.Lists(), Schedule: k.ScheduleParsed,
		Policy: k.Policy(), MaxQueued: k.MaxQueued, ThrottleGroup: k.ThrottleGroup, Lanes: k.Lanes}
}

// Operator is the kind as the dashboard and the API show it.
func (k *Kind) Operator() operator.Kind {
	return operator.Kind{Name: k.Name, Table: k.ModelsTable(), Lists: k.Lists(), Schedule: k.ScheduleParsed,
		Policy: k.Policy(), LateAfter: k.LateAfter.D(), Priority: k.Priority, ThrottleGroup: k.ThrottleGroup,
		PriorityLevels: k.priorityLevels}
}

// Gauge is the kind as the alert gauges count it.
func (k *Kind) Gauge() refresher.GaugeKind {
	return refresher.GaugeKind{Name: k.Name, Table: k.ModelsTable(), Lists: k.Lists(), LateAfter: k.LateAfter.D(), Priority: k.Priority}
}

// GaugePriorities are the priority levels with their alert thresholds, as
// the gauges export them.
func (c *Config) GaugePriorities() []refresher.GaugePriority {
	var out []refresher.GaugePriority
	for _, p := range c.PriorityLevels() {
		out = append(out, refresher.GaugePriority{Name: p.Name, Level: p.Level, MaxAttempts: p.AlertMaxAttempts, MaxAge: p.AlertMaxAge.D()})
	}
	return out
}

// KindDatabase is the URL of the database that holds k's table: its own
// database, else the top-level one.
func (c *Config) KindDatabase(k *Kind) string { return cmp.Or(k.Database, c.Database) }

// Databases lists the distinct database URLs of the kinds, in the order
// of their first kind: the service opens one store for each, shared by
// the kinds on it.
func (c *Config) Databases() []string {
	var urls []string
	for i := range c.Kinds {
		if u := c.KindDatabase(&c.Kinds[i]); !slices.Contains(urls, u) {
			urls = append(urls, u)
		}
	}
	return urls
}

// Service is the service's configuration, logging to log.
func (c *Config) Service(log *slog.Logger) refresher.Config {
	kinds := make([]refresher.Kind, len(c.Kinds))
	for i := range c.Kinds {
		kinds[i] = c.Kinds[i].Service()
	}
	return refresher.Config{Kinds: kinds, InstanceID: c.InstanceID, BatchSize: c.BatchSize,
		MaxSleep: c.MaxSleep.D(), Heartbeat: c.Heartbeat.D(), Logger: log, ClaimConnections: c.claimConnections(),
		Ledger: c.Ledger.Service()}
}

// claimConnections is the service's refresher.Config.ClaimConnections: with
// several kinds, half of each database's connections (at least one) for
// the claims of its kinds, handed out by the kinds' priority; the other
// half for the pollers' applies and the rest. One kind needs no order.
func (c *Config) claimConnections() int {
	if len(c.Kinds) < 2 {
		return 0
	}
	return max(cmp.Or(c.MaxConnections, stores.DefaultMaxConnections)/2, 1)
}
