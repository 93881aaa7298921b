package config

import (
	"time"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/refresher"
)

// Ledger is the `ledger:` block: what the service records of its
// decisions about each row and kind, for `refresher why` (see
// refresher.LedgerConfig). Environment: REFRESHER_LEDGER as YAML, e.g.
// '{enabled: false}'.
type Ledger struct {
	// Enabled records the decisions. Default false (docs/performance.md,
	// "The ledger").
	Enabled bool `yaml:"enabled"`
	// Routine is how a routine cycle's plain success is recorded:
	// LedgerRoutineBatches (the default: one entry per applied batch
	// stands for its plain successes) or LedgerRoutineRows (one entry per
	// model per cycle, an index insert each).
	Routine string `yaml:"routine"`
	// RoutineMaxEntries is how many batches of routine successes of a kind
	// the ledger keeps, the newest. Default 100000.
	RoutineMaxEntries int `yaml:"routine_max_entries"`
	// MaxEntries is how many entries of one row the ledger keeps, the
	// newest. Default 100.
	MaxEntries int `yaml:"max_entries"`
	// KindMaxEntries is how many entries of a whole kind (pauses, throttle
	// holds, incidents) it keeps. Default 1000.
	KindMaxEntries int `yaml:"kind_max_entries"`
	// MaxAge is how long an entry is kept at most. Default 720h (30 days).
	MaxAge Duration `yaml:"max_age"`
	// PruneEvery is how often each database's ledger is pruned to these
	// bounds. Default 1m.
	PruneEvery Duration `yaml:"prune_every"`
}

// The values of Ledger.Routine.
const (
	LedgerRoutineBatches = "batches"
	LedgerRoutineRows    = "rows"
)

// Service is the ledger's runtime configuration.
func (l Ledger) Service() refresher.LedgerConfig {
	return refresher.LedgerConfig{On: l.Enabled, RoutineRows: l.Routine == LedgerRoutineRows, PruneEvery: l.PruneEvery.D(),
		Bounds: models.LedgerBounds{MaxEntries: l.MaxEntries, KindMaxEntries: l.KindMaxEntries,
			RoutineMaxEntries: l.RoutineMaxEntries, MaxAge: l.MaxAge.D()}}
}

// validate reports the ledger's bad values with bad.
func (l Ledger) validate(bad func(format string, args ...any)) {
	if l.MaxEntries < 1 || l.KindMaxEntries < 1 || l.RoutineMaxEntries < 1 {
		bad("ledger.max_entries, ledger.kind_max_entries and ledger.routine_max_entries: must be at least 1 (to record nothing: ledger.enabled: false)")
	}
	if l.Routine != LedgerRoutineBatches && l.Routine != LedgerRoutineRows {
		bad("ledger.routine: %q is not %q or %q", l.Routine, LedgerRoutineBatches, LedgerRoutineRows)
	}
	if l.MaxAge.D() < time.Hour {
		bad("ledger.max_age: %s is too short (use at least 1h)", l.MaxAge.D())
	}
	if l.PruneEvery.D() < time.Second {
		bad("ledger.prune_every: %s is too short (use at least 1s)", l.PruneEvery.D())
	}
}
