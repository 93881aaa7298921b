package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/operator"
	"github.com/refresher/refresher/redisio"
	"github.com/refresher/refresher/refresher"
)

// operatorSide is what a service child runs beside the service for
// --operator, wired as `refresher run` wires it (docs/operating.md):
// the alert gauges on the service's registry, store and Redis client, and
// the operator's HTTP server (dashboard and API) on the same store, whose
// counts are counted (see accounting).
type operatorSide struct {
	gauges *refresher.Gauges // nil: no gauges
	srv    *http.Server      // nil: no dashboard
}

// startOperator registers the gauges (o.gauges > 0) and starts serving the
// dashboard on a free loopback port (o.dashboard), whose address it reports
// to the parent ("http <addr>") before the child says it is ready.
func startOperator(ctx context.Context, o childOpts, k refresher.Kind, store models.Store, rdb *redis.Client,
	svc *refresher.Service, log *slog.Logger, rep *reporter, acct *accounting) (*operatorSide, error) {
	counted := countingStore{Store: store, a: acct}
	side := &operatorSide{}
	counter := refresher.NewCounter() // as `refresher run` wires it: one owner of the counts
	if o.gauges > 0 {
		side.gauges = refresher.NewGauges(svc.Metrics().Registry, refresher.GaugeConfig{
			Kinds: []refresher.GaugeKind{{Name: k.Name, Table: k.Table, Lists: k.Lists}},
			// Its own lock and snapshot (beside the kind's lists): another
			// process's gauges on the same Redis do not count for this one.
			Inspector: counted, Redis: redisio.New(rdb), Interval: o.gauges, Counter: counter, Logger: log})
	}
	if o.dashboard {
		op, err := operator.New(operator.Options{
			Kinds: []operator.Kind{{Name: k.Name, Table: k.Table, Lists: k.Lists, Schedule: k.Schedule, Policy: k.Policy}},
			Store: counted, Redis: rdb, Counter: counter, Gatherer: svc.Metrics().Registry, Logger: log})
		if err != nil {
			return nil, err
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("listen for the dashboard: %w", err)
		}
		side.srv = &http.Server{Handler: op.Handler(), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = side.srv.Serve(ln) }()
		rep.text("http", ln.Addr().String())
	}
	return side, nil
}

// around returns run with the gauges running beside it: they start with the
// cycle ("go"), so their first count runs at its start, and stop with it.
func (s *operatorSide) around(run func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		var wg sync.WaitGroup
		if s.gauges != nil {
			wg.Go(func() { s.gauges.Run(ctx) })
		}
		err := run(ctx)
		wg.Wait()
		return err
	}
}

func (s *operatorSide) close() {
	if s.srv != nil {
		_ = s.srv.Close()
	}
}
