package refresher

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/refresher/refresher/internal/tracing"
	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
	"github.com/refresher/refresher/schedule"
)

// Defaults of Config; the configuration file's defaults (config.Defaults)
// name these.
const (
	DefaultBatchSize = 1000
	DefaultMaxSleep  = time.Second
	DefaultOpTimeout = 30 * time.Second
	DefaultHeartbeat = 30 * time.Second
	DefaultMaxQueued = 100_000
	// DefaultFetchBlock is how long the poller blocks on an empty output list
	// before it looks again (go-redis rounds shorter blocks up to 1s).
	DefaultFetchBlock = time.Second
)

// Kind is the runtime configuration of one kind.
type Kind struct {
	// Name of the kind, as in jobs. Required.
	Name string
	// Table is the application's table with its key and payload columns.
	Table models.Table
	// Store is the database that holds Table. Default: the store given to
	// New. Kinds on one database share one Store (its connections): kinds
	// whose Stores are equal (==, as pointers are) are on one database,
	// and the due watch asks each store about its own kinds.
	Store models.Store
	// Lists are the Redis lists and their limits (MaxDead, default 10000;
	// MaxResultBytes, default 64 KiB). An empty name defaults to the one of
	// redisio.DefaultLists(Name). Every list name must be unique across kinds
	// and roles (redisio.CheckDistinct).
	Lists redisio.Lists
	// Schedule is the rule of rows whose refresh_rrule is NULL. Required.
	Schedule *schedule.Schedule
	// Policy holds the attempt timeout, retry policy and disabled reason.
	Policy policy.Policy
	// MaxQueued pauses dispatching while the input list holds more jobs.
	// Default 100000.
	MaxQueued int
	// ThrottleGroup is the payload column (one of Table.Payload) whose
	// value is a row's throttle group; "" for none (see throttle).
	ThrottleGroup string
	// Lanes are the priority levels more urgent than the kind's
	// (Table.Priority) whose jobs go to a list of their own
	// (Lists.PriorityInput), ascending; workers pop them first. None: every
	// job goes to Lists.Input.
	Lanes []int
}

// Config configures a Service.
type Config struct {
	// Kinds to serve. At least one.
	Kinds []Kind
	// InstanceID names this process's processing lists; unique per process.
	// Required.
	InstanceID string
	// BatchSize is the number of rows one transaction claims or applies.
	// Default 1000.
	BatchSize int
	// MaxSleep caps the dispatcher's sleep between passes. Default 1s. An
	// idle kind's dispatcher parks instead, and the service's due watch
	// looks for all parked kinds every MaxSleep (see dueWatch).
	MaxSleep time.Duration
	// ClaimConnections caps how many dispatchers of the kinds on one store
	// (Kind.Store) run a claim transaction at once; when more want to, the
	// dispatcher of the most urgent kind (lowest Table.Priority) goes
	// first. Set it below each database pool's size, so that the order is
	// decided here and not by the pool's queue. A kind alone on its store
	// is not capped. Default 0: no cap.
	ClaimConnections int
	// FetchBlock is how long the poller blocks on an empty list. Default 1s.
	// After a fetch that found nothing it blocks longer, up to Heartbeat/3
	// (at most 5s); a result arriving wakes it at once either way.
	FetchBlock time.Duration
	// Heartbeat is the TTL of this instance's liveness key; results another
	// instance fetched are taken over after it. Default 30s.
	Heartbeat time.Duration
	// OpTimeout bounds one batch's database and Redis work. Default 30s.
	OpTimeout time.Duration
	// Clock gives `now`. Default SystemClock.
	Clock Clock
	// Rand returns a number in [0,1) for retry jitter. Default math/rand/v2.
	Rand func() float64
	// Logger logs. Default slog.Default().
	Logger *slog.Logger
	// Metrics counts. Default a fresh NewMetrics().
	Metrics *Metrics
	// Observer is told of the loops' passes (tests and benchmarks); the
	// zero value costs nothing.
	Observer Observer
	// Gauges are the alert gauges Run updates while it runs (see
	// Service); nil for none.
	Gauges *Gauges
	// Tracer makes a span per job dispatched and per result applied, and
	// puts their trace context into the jobs (trace.go); nil for none,
	// which costs nothing.
	Tracer *tracing.Tracer
	// faults are failures injected by this package's tests.
	faults faults
	// Ledger is what the service records of its decisions and keeps
	// (see LedgerConfig); the zero value records nothing.
	Ledger LedgerConfig
	// LogInterval is how often each kind logs one line of its activity
	// (attempts started, results applied, failures, ...), when it had any.
	// Default 1m.
	LogInterval time.Duration
}

// WithDefaults returns a copy of c with every unset value defaulted.
func (c Config) WithDefaults() Config {
	c.BatchSize = cmp.Or(c.BatchSize, DefaultBatchSize)
	c.MaxSleep = cmp.Or(c.MaxSleep, DefaultMaxSleep)
	c.FetchBlock = cmp.Or(c.FetchBlock, DefaultFetchBlock)
	c.Heartbeat = cmp.Or(c.Heartbeat, DefaultHeartbeat)
	c.OpTimeout = cmp.Or(c.OpTimeout, DefaultOpTimeout)
	c.LogInterval = cmp.Or(c.LogInterval, DefaultLogInterval)
	c.Ledger = c.Ledger.WithDefaults()
	if c.Clock == nil {
		c.Clock = SystemClock{}
	}
	if c.Rand == nil {
		c.Rand = rand.Float64
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Metrics == nil {
		c.Metrics = NewMetrics()
	}
	kinds := make([]Kind, len(c.Kinds))
	for i, k := range c.Kinds {
		def := redisio.DefaultLists(k.Name)
		k.Lists.Input = cmp.Or(k.Lists.Input, def.Input)
		k.Lists.Output = cmp.Or(k.Lists.Output, def.Output)
		k.Lists.Dead = cmp.Or(k.Lists.Dead, def.Dead)
		k.MaxQueued = cmp.Or(k.MaxQueued, DefaultMaxQueued)
		k.Policy.Kind = cmp.Or(k.Policy.Kind, k.Name)
		k.Policy = k.Policy.WithDefaults()
		kinds[i] = k
	}
	c.Kinds = kinds
	return c
}

func (c Config) validate() error {
	var errs []error
	if len(c.Kinds) == 0 {
		errs = append(errs, errors.New("no kinds configured"))
	}
	if c.InstanceID == "" {
		errs = append(errs, errors.New("InstanceID is required (unique per process)"))
	}
	if c.FetchBlock >= c.Heartbeat {
		errs = append(errs, fmt.Errorf("FetchBlock (%s) must be shorter than Heartbeat (%s)", c.FetchBlock, c.Heartbeat))
	}
	names := make([]string, len(c.Kinds))
	lists := make([]redisio.Lists, len(c.Kinds))
	type storeTable struct {
		store models.Store
		table string // lower case
	}
	tables := map[storeTable]string{} // first kind
	for i, k := range c.Kinds {
		names[i], lists[i] = k.Name, k.Lists
		at := storeTable{k.Store, strings.ToLower(k.Table.Name)}
		if first, ok := tables[at]; ok && k.Table.Name != "" {
			errs = append(errs, fmt.Errorf("kinds %q and %q both refresh table %s: each table needs exactly one kind", first, k.Name, k.Table.Name))
		}
		tables[at] = cmp.Or(tables[at], k.Name)
		if k.Lists.MaxDead < 0 || k.Lists.MaxResultBytes < 0 {
			errs = append(errs, fmt.Errorf("kind %q: Lists.MaxDead (%d) and Lists.MaxResultBytes (%d) must not be negative (0: the defaults)", k.Name, k.Lists.MaxDead, k.Lists.MaxResultBytes))
		}
		if k.ThrottleGroup != "" && !slices.Contains(k.Table.Payload, k.ThrottleGroup) {
			errs = append(errs, fmt.Errorf("kind %q: ThrottleGroup %q is not one of the payload columns %v", k.Name, k.ThrottleGroup, k.Table.Payload))
		}
		if k.Schedule == nil {
			errs = append(errs, fmt.Errorf("kind %q: Schedule is required", k.Name))
		}
		if err := k.Policy.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("kind %q: %w", k.Name, err))
		}
		if err := checkLanes(k); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, redisio.CheckDistinct(names, lists)...)
	return errors.Join(errs...)
}
