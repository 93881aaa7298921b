package refresher

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/redisio"
)

// Service runs the dispatcher and the poller of every configured kind.
type Service struct {
	cfg   Config
	store models.Store
	rdb   *redisio.Client
}

// New checks cfg and returns a Service on the given database and Redis.
func New(cfg Config, store models.Store, rdb *redisio.Client) (*Service, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("refresher config: %w", err)
	}
	for _, k := range cfg.Kinds {
		cfg.Metrics.initKind(k.Name)
	}
	return &Service{cfg: cfg, store: store, rdb: rdb}, nil
}

// Metrics returns the service's metrics.
func (s *Service) Metrics() *Metrics { return s.cfg.Metrics }

// Check verifies that every kind's table has its key, payload and refresh
// columns, so a misconfiguration fails at start with a clear message rather
// than in every batch.
func (s *Service) Check(ctx context.Context) error {
	var errs []error
	for _, k := range s.cfg.Kinds {
		if err := s.store.Check(ctx, k.Table); err != nil {
			errs = append(errs, fmt.Errorf("kind %s: %w", k.Name, err))
		}
	}
	return errors.Join(errs...)
}

// Run runs every kind's dispatcher and poller until ctx is cancelled, then
// waits for each loop to finish the batch in hand. It returns nil after a
// clean shutdown.
func (s *Service) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, k := range s.cfg.Kinds {
		r := &kindRunner{
			cfg: s.cfg, kind: k, store: s.store, rdb: s.rdb, clock: s.cfg.Clock,
			log: s.cfg.Logger.With("kind", k.Name), metrics: s.cfg.Metrics, hooks: s.cfg.Hooks,
			activity: &activity{},
		}
		wake := make(chan struct{}, 1)
		d := &dispatcher{kindRunner: r, wake: wake, schedules: schedules{kindDefault: k.Schedule}}
		p := &poller{kindRunner: r, wake: wake, drain: s.rdb.Drain(k.Lists, s.cfg.InstanceID, s.cfg.Heartbeat),
			schedules: schedules{kindDefault: k.Schedule}}
		wg.Go(func() { d.loop(ctx) })
		wg.Go(func() { p.loop(ctx) })
		wg.Go(func() { r.activity.loop(ctx, r.log, s.cfg.LogInterval) })
	}
	s.cfg.Logger.Info("refresher running", "kinds", len(s.cfg.Kinds), "instance", s.cfg.InstanceID)
	wg.Wait()
	s.cfg.Logger.Info("refresher stopped")
	return nil
}
