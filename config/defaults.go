package config

import (
	"cmp"
	"maps"
	"os"

	"github.com/rs/xid"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/operator"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
	"github.com/refresher/refresher/refresher"
)

// Defaults holds the value of every top-level key left out of the
// configuration, and KindDefaults that of every key of a kind (the list
// names default to redisio.DefaultLists of the kind's name, the table to
// the name). A default that the running code also needs is declared by the
// package that uses it (refresher, policy, models, redisio, operator) and
// only named here, so that each is written once. Read them; do not change
// them.
var (
	Defaults = Config{
		Database:         "root:@tcp(127.0.0.1:3306)/app?parseTime=true&loc=UTC",
		Redis:            "redis://127.0.0.1:6379/0",
		HTTP:             "127.0.0.1:9090", // loopback only: no token needed until it is opened
		GaugeInterval:    Duration(refresher.DefaultGaugeInterval),
		SearchScanBudget: models.DefaultScanBudget,
		BatchSize:        refresher.DefaultBatchSize,
		MaxSleep:         Duration(refresher.DefaultMaxSleep),
		Heartbeat:        Duration(refresher.DefaultHeartbeat),
		Priorities:       DefaultPriorities,
		// HTTPMaxConnections: at most 256 open connections to the operator
		// listener (lowered to the open-file limit less 64 at start).
		HTTPMaxConnections: operator.DefaultMaxConns,
		Ledger: Ledger{
			MaxEntries:        refresher.DefaultLedgerMaxEntries,
			KindMaxEntries:    refresher.DefaultLedgerKindMaxEntries,
			Routine:           LedgerRoutineBatches,
			RoutineMaxEntries: refresher.DefaultLedgerRoutineMaxEntries,
			MaxAge:            Duration(refresher.DefaultLedgerMaxAge),
			PruneEvery:        Duration(refresher.DefaultLedgerPruneEvery),
		},
	}
	KindDefaults = Kind{
		Key:            "id",
		Timeout:        Duration(policy.DefaultTimeout),
		Retry:          policy.DefaultRetrySpec,
		MaxQueued:      refresher.DefaultMaxQueued,
		LateAfter:      Duration(models.DefaultLateAfter),
		MaxDead:        redisio.DefaultMaxDead,
		MaxResultBytes: redisio.DefaultMaxResultBytes,
		Priority:       DefaultKindPriority,
	}
)

// SetDefaults fills in every unset value from Defaults and KindDefaults,
// and the instance id from the hostname and a random suffix.
func (c *Config) SetDefaults() {
	d, kd := &Defaults, &KindDefaults
	c.Database = cmp.Or(c.Database, d.Database)
	c.Redis = cmp.Or(c.Redis, d.Redis)
	c.GaugeInterval = cmp.Or(c.GaugeInterval, d.GaugeInterval)
	c.SearchScanBudget = cmp.Or(c.SearchScanBudget, d.SearchScanBudget)
	c.BatchSize = cmp.Or(c.BatchSize, d.BatchSize)
	c.MaxSleep = cmp.Or(c.MaxSleep, d.MaxSleep)
	c.Heartbeat = cmp.Or(c.Heartbeat, d.Heartbeat)
	if c.Priorities == nil {
		c.Priorities = maps.Clone(d.Priorities)
	}
	if c.InstanceID == "" {
		host, _ := os.Hostname()
		c.InstanceID = cmp.Or(host, "refresher") + "-" + xid.New().String()
	}
	for i := range c.Kinds {
		k := &c.Kinds[i]
		lists := redisio.DefaultListsOn(redisio.TopologyOf(c.Redis), c.RedisPrefix+k.Name)
		k.Table = cmp.Or(k.Table, k.Name)
		k.Key = cmp.Or(k.Key, kd.Key)
		k.Timeout = cmp.Or(k.Timeout, kd.Timeout)
		k.Retry = cmp.Or(k.Retry, kd.Retry)
		k.Input = cmp.Or(k.Input, lists.Input)
		k.Output = cmp.Or(k.Output, lists.Output)
		k.Dead = cmp.Or(k.Dead, lists.Dead)
		k.MaxQueued = cmp.Or(k.MaxQueued, kd.MaxQueued)
		k.LateAfter = cmp.Or(k.LateAfter, kd.LateAfter)
		k.MaxDead = cmp.Or(k.MaxDead, kd.MaxDead)
		k.MaxResultBytes = cmp.Or(k.MaxResultBytes, kd.MaxResultBytes)
		k.Priority = cmp.Or(k.Priority, kd.Priority)
	}
	c.HTTPMaxConnections = cmp.Or(c.HTTPMaxConnections, d.HTTPMaxConnections)
	c.Ledger.MaxEntries = cmp.Or(c.Ledger.MaxEntries, d.Ledger.MaxEntries)
	c.Ledger.KindMaxEntries = cmp.Or(c.Ledger.KindMaxEntries, d.Ledger.KindMaxEntries)
	c.Ledger.Routine = cmp.Or(c.Ledger.Routine, d.Ledger.Routine)
	c.Ledger.RoutineMaxEntries = cmp.Or(c.Ledger.RoutineMaxEntries, d.Ledger.RoutineMaxEntries)
	c.Ledger.MaxAge = cmp.Or(c.Ledger.MaxAge, d.Ledger.MaxAge)
	c.Ledger.PruneEvery = cmp.Or(c.Ledger.PruneEvery, d.Ledger.PruneEvery)
	c.setTokenRoles()
}
