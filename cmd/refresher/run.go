package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/refresher/refresher/config"
	"github.com/refresher/refresher/models/stores"
	"github.com/refresher/refresher/operator"
	"github.com/refresher/refresher/redisio"
	"github.com/refresher/refresher/refresher"
)

func init() { commands = append(commands, newRunCmd) }

func newRunCmd() *cobra.Command {
	var path string
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the service: dispatch due rows and apply workers' results",
		Long: `Run the service until SIGINT or SIGTERM. The first signal finishes the
batches in hand and stops; a second one stops at once (nothing is lost either
way: unapplied results stay in Redis, unanswered attempts time out).

Configuration comes from --config and the REFRESHER_* environment variables.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, dbs, err := loadAndOpen(cmd.Context(), path, stores.Options{})
			if err != nil {
				return err
			}
			defer dbs.Close()
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			return runService(cmd.Context(), c, dbs, log)
		},
	}
	configFlag(cmd, &path)
	return cmd
}

func runService(ctx context.Context, c *config.Config, dbs *databases, log *slog.Logger) error {
	redisio.LogTo(log) // go-redis's failovers, leveled, beside the service's lines
	refresher.SetGCPercent()
	// Each kind's poller holds a connection while it blocks on its list.
	rdb, err := openRedis(ctx, c.Redis, refresher.RedisPoolSize(len(c.Kinds)))
	if err != nil {
		return err
	}
	defer rdb.Close()
	cfg := c.Service(log)
	tracer, flush, err := startTracing(ctx, "refresher", log)
	if err != nil {
		return err
	}
	defer flush()
	cfg.Tracer = tracer
	for i := range cfg.Kinds {
		cfg.Kinds[i].Store = dbs.Of(&c.Kinds[i])
	}
	// The one owner of the kinds' counts: the gauges and the dashboard
	// share a count while it is fresh (refresher.Counter).
	counter := refresher.NewCounter()
	if c.HTTPAddr() != "" {
		// The alert gauges are served on /metrics. The service runs them
		// and stops them before Run returns, so before Redis is closed: a
		// start that fails (a missing table) returns its error without a
		// gauge logging "redis: client is closed" after it.
		cfg.Metrics = refresher.NewMetrics()
		cfg.Gauges = alertGauges(c, dbs, rdb, cfg.Metrics, counter, log)
	}
	svc, err := refresher.New(cfg, nil, redisio.New(rdb))
	if err != nil {
		return err
	}
	if addr := c.HTTPAddr(); addr != "" {
		op, err := operatorServer(c, dbs, rdb, svc, counter, log)
		if err != nil {
			return err
		}
		defer op.Close() // after the HTTP server's: no request starts a recount then
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("listen on %q: %w (change \"http:\" or REFRESHER_HTTP; \"off\" for no server)", addr, err)
		}
		srv, ln := operator.NewHTTPServer(op.Handler(), ln, c.HTTPLimits())
		announce(log, ln.Addr().String(), op)
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("HTTP server stopped", "addr", addr, "err", err)
			}
		}()
		defer srv.Close()
	}
	sig, done := make(chan os.Signal, 2), make(chan struct{})
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	defer close(done)
	go exitOnSecondSignal(sig, done, log, os.Exit)
	return svc.Run(ctx)
}

// announce logs where the operator surface listens and what it allows, as
// the server itself decides it (a config whose tokens cannot act is
// read-only).
func announce(log *slog.Logger, addr string, op *operator.Server) {
	log.Info("operator dashboard and API", "url", "http://"+addr+"/", "read_only", op.ReadOnly(), "reads_need_token", op.ReadNeedsToken())
}

// exitOnSecondSignal counts the signals on sig until done is closed: the
// first one (which also cancelled the service's context through main's
// NotifyContext) only logs, the second calls exit(130). sig is registered
// before the service starts, so a quick second Ctrl-C is never lost.
func exitOnSecondSignal(sig <-chan os.Signal, done <-chan struct{}, log *slog.Logger, exit func(int)) {
	for n := 1; ; n++ {
		select {
		case <-done:
			return
		case <-sig:
		}
		if n == 1 {
			log.Info("stopping after the batches in hand; send the signal again to stop at once")
			continue
		}
		log.Warn("second signal: stopping at once")
		exit(130)
		return
	}
}

// alertGauges registers the alert gauges of c's kinds on m's registry; each
// kind is counted on its own database, through counter.
func alertGauges(c *config.Config, dbs *databases, rdb redis.UniversalClient, m *refresher.Metrics, counter *refresher.Counter, log *slog.Logger) *refresher.Gauges {
	gk := make([]refresher.GaugeKind, len(c.Kinds))
	for i := range c.Kinds {
		gk[i] = c.Kinds[i].Gauge()
		gk[i].Inspector = dbs.Of(&c.Kinds[i])
	}
	return refresher.NewGauges(m.Registry, refresher.GaugeConfig{Kinds: gk, Priorities: c.GaugePriorities(), Redis: redisio.New(rdb),
		Interval: c.GaugeInterval.D(), Counter: counter, Logger: log})
}

// operatorServer is the one HTTP surface: /metrics, /healthz, /readyz, the
// API and the dashboard (package operator); its caller closes it. It
// refuses a non-loopback address without a token; there, reads need a
// token too unless http_public_read says otherwise, and on loopback only
// loopback names are served (DNS rebinding).
func operatorServer(c *config.Config, dbs *databases, rdb redis.UniversalClient,
	svc *refresher.Service, counter *refresher.Counter, log *slog.Logger) (*operator.Server, error) {
	addr := c.HTTPAddr()
	if !operator.IsLoopback(addr) && len(c.APITokens) == 0 {
		return nil, fmt.Errorf("http: %q accepts connections from other machines, but no API token is configured: %s; or listen on 127.0.0.1 only", addr, operator.NoTokenHelp)
	}
	kinds := make([]operator.Kind, len(c.Kinds))
	for i := range c.Kinds {
		kinds[i] = c.Kinds[i].Operator()
		kinds[i].Store = dbs.Of(&c.Kinds[i])
		if c.Ledger.Enabled { // pruned to ledger.max_age by the service
			kinds[i].LedgerKeep, kinds[i].LedgerMaxEntries = c.Ledger.MaxAge.D(), c.Ledger.MaxEntries
		}
		kinds[i].LedgerOff = !c.Ledger.Enabled
	}
	return operator.New(c.OperatorAccess(operator.Options{Kinds: kinds, Redis: rdb, Counter: counter, Gatherer: svc.Metrics().Registry,
		Logger: log, SearchBudget: c.SearchScanBudget, Ledger: c.Ledger.Enabled}))
}
