package refresher

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/redisio"
)

// Service runs the dispatcher and the poller of every configured kind, and
// the alert gauges (Config.Gauges) if any.
//
// # Errors: fatal or retried
//
// A misconfiguration is fatal: the service cannot work until an operator
// changes the config or the database, so Run returns it and the process
// exits with the message. It is found before any loop starts: New refuses an
// invalid Config (including the kinds' Redis lists and the heartbeat), and
// Run calls Check itself, so no caller can forget it: a missing table, key,
// payload or refresh column stops Run before the first claim. (An unknown
// database URL scheme, or a driver that cannot do what the config asks,
// fails earlier, in models/stores.Open.) A loop that panics is a bug and
// fatal too: Run stops the others in order and returns the panic as an
// error.
//
// An outage is retried: a database or Redis that does not answer, a lost
// connection, a deadlock. The loops log it, back off (up to 5s) and try
// again for as long as it lasts; at start, Run retries Check while the
// database does not answer (Ping fails). A table the service may not write
// (missing privilege, read-only server) found after start is treated as an
// outage too: its results wait in Redis, and each retry logs how to fix it.
//
// # Shutdown
//
// Run is the one owner of shutdown, in this order:
//
//  1. the signal: Run's context is cancelled (cmd/refresher cancels it on
//     SIGINT or SIGTERM), or a loop fails fatally; the alert gauges stop
//     counting with the signal (not with a fatal error);
//  2. the dispatchers stop: each finishes the batch in hand (commit, then
//     push, or undo) with a context that is not cancelled, bounded by
//     OpTimeout, and claims nothing more;
//  3. only when every dispatcher has stopped are the pollers told to stop,
//     so that results of the last jobs that arrive meanwhile are applied;
//     each finishes its batch in hand (apply, commit, acknowledge in Redis);
//     a blocking fetch is cut short;
//  4. Run waits for the alert gauges' last count, then returns (also when
//     the start-up check fails); its caller, which opened them, closes
//     Redis and then the database (cmd/refresher does, with defers).
//
// Nothing is lost if the process dies at any step instead (see the package
// doc).
type Service struct {
	cfg Config // each kind with its Store
	rdb *redisio.Client
}

// New checks cfg and returns a Service on the given database and Redis:
// store is the database of the kinds whose Kind.Store is nil (nil when
// every kind names its own). An invalid Config (see Service) is an error
// here, before anything runs.
func New(cfg Config, store models.Store, rdb *redisio.Client) (*Service, error) {
	cfg = cfg.WithDefaults()
	for i := range cfg.Kinds { // WithDefaults copied them
		if cfg.Kinds[i].Store == nil {
			cfg.Kinds[i].Store = store
		}
		if cfg.Kinds[i].Store == nil {
			return nil, fmt.Errorf("refresher config: kind %q has no Store and New was given none", cfg.Kinds[i].Name)
		}
	}
	if err := errors.Join(cfg.validate(), validateLists(cfg)); err != nil {
		return nil, fmt.Errorf("refresher config: %w", err)
	}
	for _, k := range cfg.Kinds {
		cfg.Metrics.initKind(k.Name)
	}
	return &Service{cfg: cfg, rdb: rdb}, nil
}

// validateLists checks what each kind's Redis drain needs, which the drain
// would otherwise return from every call for ever.
func validateLists(cfg Config) error {
	var errs []error
	if cfg.Heartbeat < redisio.MinHeartbeatTTL {
		errs = append(errs, fmt.Errorf("Heartbeat %s is shorter than %s: results of a live instance would be taken over", cfg.Heartbeat, redisio.MinHeartbeatTTL))
	}
	for _, k := range cfg.Kinds {
		if k.Lists.Input == "" || k.Lists.Output == "" || k.Lists.Dead == "" {
			errs = append(errs, fmt.Errorf("kind %q: Lists needs Input, Output and Dead list names (got %+v); leave Lists empty for the defaults", k.Name, k.Lists))
		}
	}
	return errors.Join(errs...)
}

// Metrics returns the service's metrics.
func (s *Service) Metrics() *Metrics { return s.cfg.Metrics }

// Check verifies that every kind's table has its key, payload and refresh
// columns, so a misconfiguration fails at start with a clear message rather
// than in every batch. Run calls it.
func (s *Service) Check(ctx context.Context) error {
	var errs []error
	for _, k := range s.cfg.Kinds {
		if err := k.Store.Check(ctx, k.Table); err != nil {
			errs = append(errs, fmt.Errorf("kind %s: %w", k.Name, err))
		}
	}
	return errors.Join(errs...)
}

// checkAtStart runs Check until it passes, or fails while the database
// answers (a misconfiguration: returned), or ctx is cancelled. While the
// database does not answer (Ping fails) it retries with a backoff of up to
// 5s: an outage at start is waited out, like one later.
func (s *Service) checkAtStart(ctx context.Context) error {
	retry := backoff{limit: 5 * time.Second}
	for {
		err := s.Check(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return nil // stopped before starting: a clean shutdown
		}
		pingErr := s.ping(ctx)
		if pingErr == nil {
			return err
		}
		wait := retry.failed()
		s.cfg.Logger.Error("database does not answer; retrying the start-up check", "err", pingErr, "retry_in", wait)
		if !sleep(ctx, wait) {
			return nil
		}
	}
}

// ping pings every kind's database, each once, and returns the errors of
// those that do not answer, naming their kinds.
func (s *Service) ping(ctx context.Context) error {
	var errs []error
	for _, st := range s.stores() {
		pctx, cancel := context.WithTimeout(ctx, s.cfg.OpTimeout)
		if err := st.store.Ping(pctx); err != nil {
			errs = append(errs, fmt.Errorf("the database of kinds %s: %w", strings.Join(st.kinds, ", "), err))
		}
		cancel()
	}
	return errors.Join(errs...)
}

// kindStore is one database of the service and the kinds on it.
type kindStore struct {
	store models.Store
	kinds []string
}

// stores lists the kinds' distinct stores, in the order of their first
// kind.
func (s *Service) stores() []kindStore {
	var out []kindStore
	at := map[models.Store]int{}
	for _, k := range s.cfg.Kinds {
		i, ok := at[k.Store]
		if !ok {
			i = len(out)
			at[k.Store] = i
			out = append(out, kindStore{store: k.Store})
		}
		out[i].kinds = append(out[i].kinds, k.Name)
	}
	return out
}

// Run checks the kinds' tables (see Check), then runs every kind's
// dispatcher and poller until ctx is cancelled or a loop fails fatally, and
// stops them in the order the Service doc gives. It returns nil after a
// clean shutdown, the misconfiguration Check found, or the first fatal
// error of a loop.
func (s *Service) Run(ctx context.Context) error {
	defer s.runGauges(ctx)()
	if err := s.checkAtStart(ctx); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return nil
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	// The pollers outlive the dispatchers: their context is cancelled only
	// after every dispatcher returned.
	pollCtx, stopPollers := context.WithCancel(context.WithoutCancel(ctx))
	defer stopPollers()

	var (
		mu         sync.Mutex
		firstFatal error
	)
	fatal := func(err error) {
		mu.Lock()
		if firstFatal == nil {
			firstFatal = err
			s.cfg.Logger.Error("fatal error: stopping", "err", err)
		}
		mu.Unlock()
		stop()
	}
	guard := func(what string, loop func()) func() {
		return func() {
			defer func() {
				if p := recover(); p != nil {
					fatal(fmt.Errorf("%s: panic: %v", what, p))
				}
			}()
			loop()
		}
	}

	var dispatchers, pollers sync.WaitGroup
	watch := newDueWatch(s.cfg)
	claims := s.claimGates()
	ledgers := s.ledgers(ctx)
	dispatchers.Go(guard("due watch", func() { watch.loop(runCtx) }))
	for _, ls := range ledgers {
		dispatchers.Go(guard("ledger pruning", func() { s.pruneLedger(runCtx, ls) }))
	}
	for _, k := range s.cfg.Kinds {
		r := &kindRunner{
			cfg: s.cfg, kind: k, store: k.Store, rdb: s.rdb, clock: s.cfg.Clock,
			log: s.cfg.Logger.With("kind", k.Name), metrics: s.cfg.Metrics,
			observer: s.cfg.Observer, faults: s.cfg.faults,
			activity: &activity{},
			fatal:    fatal,
			throttle: newThrottle(s.rdb, k),
			ledger:   ledgers[k.Store],
		}
		r.incident = newIncident(s.rdb, k, r.log, s.cfg.Metrics)
		if r.ledger != nil {
			r.incident.ledger = r.recordKind
		}
		wake := make(chan struct{}, 1)
		sched := newSchedules(k) // one parse cache for both
		lc := s.cfg.Ledger
		lc.On = r.ledger != nil
		d := &dispatcher{kindRunner: r, wake: wake, schedules: sched, watch: watch, claims: claims[k.Store],
			gate: &dueGate{store: k.Store, table: k.Table, clock: s.cfg.Clock}, entries: newLedgerBatch(k.Name, lc)}
		p := &poller{kindRunner: r, wake: wake, drain: s.rdb.Drain(k.Lists, s.cfg.InstanceID, s.cfg.Heartbeat),
			schedules: sched, entries: newLedgerBatch(k.Name, lc)}
		dispatchers.Go(guard("kind "+k.Name+": dispatcher", func() { d.loop(runCtx) }))
		if len(k.Lanes) > 0 {
			d.backlog = newBacklogSignal()
			// No due gate: it asks Store.UrgentDue before each pass.
			u := &dispatcher{kindRunner: r, schedules: sched, claims: claims[k.Store], urgent: true, backlog: d.backlog,
				entries: newLedgerBatch(k.Name, lc)}
			dispatchers.Go(guard("kind "+k.Name+": urgent dispatcher", func() { u.urgentLoop(runCtx) }))
		}
		pollers.Go(guard("kind "+k.Name+": poller", func() { p.loop(pollCtx) }))
		dispatchers.Go(guard("kind "+k.Name+": activity log", func() { r.activity.loop(runCtx, r.log, s.cfg.LogInterval) }))
	}
	s.cfg.Logger.Info("refresher running", "kinds", len(s.cfg.Kinds), "instance", s.cfg.InstanceID)

	<-runCtx.Done()
	dispatchers.Wait()
	stopPollers()
	pollers.Wait()
	s.cfg.Logger.Info("refresher stopped")
	mu.Lock()
	defer mu.Unlock()
	return firstFatal
}

// claimGates returns the claim gate of each store that holds several kinds
// (one pool of connections each), when Config.ClaimConnections asks for
// them: the kinds of one database take turns by priority for its
// connections; a kind alone on its database needs no order.
func (s *Service) claimGates() map[models.Store]*claimGate {
	gates := map[models.Store]*claimGate{}
	if s.cfg.ClaimConnections <= 0 {
		return gates
	}
	kinds := map[models.Store]int{}
	for _, k := range s.cfg.Kinds {
		kinds[k.Store]++
	}
	for store, n := range kinds {
		if n > 1 {
			gates[store] = newClaimGate(s.cfg.ClaimConnections)
		}
	}
	return gates
}

// runGauges runs the alert gauges, if any, until ctx ends or the returned
// stop is called; stop returns once they stopped, so that no count outlives
// Run (and the Redis client its caller closes then).
func (s *Service) runGauges(ctx context.Context) (stop func()) {
	if s.cfg.Gauges == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { s.cfg.Gauges.Run(ctx) })
	return func() {
		cancel()
		wg.Wait()
	}
}

// RedisPoolSize is the size of the Redis connection pool a service of kinds
// kinds needs: each kind's poller holds a connection for up to FetchBlock
// while it waits for results, and the dispatchers' pushes, heartbeats and
// acknowledgements need others. With go-redis's default (10 per CPU), 200
// pollers would make every push wait for a blocking fetch to end.
func RedisPoolSize(kinds int) int { return 2*kinds + 16 }
