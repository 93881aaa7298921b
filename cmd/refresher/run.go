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
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/refresher/refresher/config"
	"github.com/refresher/refresher/models"
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
			c, store, err := loadAndOpen(cmd.Context(), path)
			if err != nil {
				return err
			}
			defer store.Close()
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			return runService(cmd.Context(), c, store, log)
		},
	}
	configFlag(cmd, &path)
	return cmd
}

func runService(ctx context.Context, c *config.Config, store models.Store, log *slog.Logger) error {
	// Each kind's poller holds a connection while it blocks on its list.
	rdb, err := openRedis(ctx, c.Redis, refresher.RedisPoolSize(len(c.Kinds)))
	if err != nil {
		return err
	}
	defer rdb.Close()
	svc, err := refresher.New(serviceConfig(c, log), store, redisio.New(rdb))
	if err != nil {
		return err
	}
	if c.Metrics != "" {
		ln, err := net.Listen("tcp", c.Metrics)
		if err != nil {
			return fmt.Errorf("listen for metrics on %q: %w (change \"metrics:\" or REFRESHER_METRICS)", c.Metrics, err)
		}
		srv := metricsServer(c.Metrics, svc)
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("metrics server stopped", "addr", c.Metrics, "err", err)
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

// metricsServer serves /metrics (Prometheus) and /healthz.
func metricsServer(addr string, svc *refresher.Service) *http.Server {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(svc.Metrics().Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	return &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
}
