// Package demo runs the whole refresh loop in one process with nothing to
// install: an embedded SQLite database, an embedded Redis-protocol server
// (miniredis), a local HTTP target, an example table of about 20 models, the
// service, the reference worker and the dashboard (`refresher demo`).
package demo

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/refresher/refresher/operator"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/refresher/refresher/config"
	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/models/stores"
	"github.com/refresher/refresher/redisio"
	"github.com/refresher/refresher/refresher"
	"github.com/refresher/refresher/worker"
)

// Kind is the demo's one kind.
const Kind = "reports"

// Options configure Run. The zero value is a usable demo.
type Options struct {
	// Data is the directory of the SQLite file; default a temporary
	// directory, removed at the end.
	Data string
	// HTTP is the dashboard's listen address. Default 127.0.0.1:9090.
	HTTP string
	// RedisPort is the embedded Redis server's port on 127.0.0.1; 0 picks a
	// free one.
	RedisPort int
	// Speed runs the demo clock that many times faster than the wall clock.
	// Default 60: an hour of schedules in a minute.
	Speed float64
	// For stops the demo after that much real time; 0 runs until ctx ends.
	For time.Duration
	// Out receives what to look at; default os.Stdout. Log receives the
	// service's log; default a text logger on Out at WARN.
	Out io.Writer
	Log *slog.Logger
	// Ready, when set, receives the demo's addresses once everything runs.
	Ready func(Addrs)
}

// Addrs are where the demo's parts listen.
type Addrs struct {
	Dashboard string // http://127.0.0.1:9090/
	Redis     string // 127.0.0.1:PORT
	Target    string // http://127.0.0.1:PORT
	Database  string // the SQLite file
	// Calls reports when (in demo time) the target served a path.
	Calls func(path string) []time.Time `json:"-"`
	// Now is the demo clock, which every part of the demo reads.
	Now func() time.Time `json:"-"`
}

// Run starts the demo and blocks until ctx ends or opts.For has passed.
func Run(ctx context.Context, o Options) (err error) {
	o.Speed = cmp.Or(o.Speed, 60)
	o.HTTP = cmp.Or(o.HTTP, "127.0.0.1:9090")
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(o.Out, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	if o.Speed < 1 || o.Speed > 10000 {
		return fmt.Errorf("demo: --speed %g is out of range: use 1 (real time) to 10000", o.Speed)
	}
	parent := ctx
	if o.For > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.For)
		defer cancel()
	}

	// The demo clock starts at 13:50 UTC today, so the daily 14:00 run
	// comes within seconds.
	day := time.Now().UTC().Truncate(24 * time.Hour)
	clock := &Clock{Origin: day.Add(13*time.Hour + 50*time.Minute), Speed: o.Speed}
	clock.Now()

	dir := o.Data
	if dir == "" {
		if dir, err = os.MkdirTemp("", "refresher-demo-"); err != nil {
			return fmt.Errorf("demo: temporary directory: %w", err)
		}
		defer os.RemoveAll(dir)
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("demo: --data %s: %w", dir, err)
	}

	// Redis: an embedded server whose key expiry follows the wall clock.
	mr := miniredis.NewMiniRedis()
	mr.ClockTTL(true)
	if err := mr.StartAddr(net.JoinHostPort("127.0.0.1", strconv.Itoa(o.RedisPort))); err != nil {
		return fmt.Errorf("demo: start the embedded Redis on port %d: %w (pick another with --redis-port, or 0 for a free one)", o.RedisPort, err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	// The HTTP target the models point at.
	target := &Target{RetryAfter: 30 * time.Minute, Hang: clock.Real(10 * time.Minute), Clock: clock}
	tln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("demo: listen for the HTTP target: %w", err)
	}
	tsrv := &http.Server{Handler: target.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = tsrv.Serve(tln) }()
	defer tsrv.Close()
	targetURL := "http://" + tln.Addr().String()

	// The app's database and its example table.
	dbFile := filepath.Join(dir, "demo.db")
	if err := seed(ctx, dbFile, targetURL, clock.Now()); err != nil {
		return err
	}
	store, err := stores.Open(ctx, "sqlite://"+dbFile, stores.Options{})
	if err != nil {
		return fmt.Errorf("demo: open the database: %w", err)
	}
	defer store.Close()
	if _, err := store.Migrate(ctx, []string{"reports"}, io.Discard, false); err != nil {
		return fmt.Errorf("demo: migrate: %w", err)
	}

	token := rand.Text()
	conf, err := demoConfig(o.HTTP, token)
	if err != nil {
		return err
	}
	kind := &conf.Kinds[0]
	// Dead letters are stamped on the demo clock too, like everything the
	// dashboard shows.
	rio, err := redisio.NewWithConfig(rdb, redisio.Config{Now: clock.Now})
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	metrics := refresher.NewMetrics()
	counter := refresher.NewCounter() // the gauges' and the dashboard's counts, shared
	cfg := refresher.Config{
		Kinds:      []refresher.Kind{kind.Service()},
		InstanceID: "demo",
		MaxSleep:   100 * time.Millisecond,
		Clock:      clock,
		Logger:     o.Log,
		Metrics:    metrics,
		Gauges:     demoGauges(conf, store, rio, clock, metrics, counter, o.Log),
	}
	svc, err := refresher.New(cfg, store, rio)
	if err != nil {
		return err
	}
	w, err := worker.New(worker.Config{
		Kind: Kind, Redis: rdb, Concurrency: 16,
		HTTPTimeout: clock.Real(kind.Timeout.D()) + time.Second,
		Now:         clock.Now,
		// The slow path shows a timeout: the demo's worker never asks for
		// more time (its lease would be in demo time, its pacing in real).
		Lease:  -1,
		Logger: o.Log,
		// The demo's target is on 127.0.0.1, which the worker refuses by
		// default (see docs/protocol.md, "The reference worker").
		AllowPrivateNetworks: true,
	})
	if err != nil {
		return err
	}

	hln, err := net.Listen("tcp", o.HTTP)
	if err != nil {
		return fmt.Errorf("demo: listen for the dashboard on %s: %w (pick another with --http)", o.HTTP, err)
	}
	handler, err := dashboard(svc, store, rdb, clock, conf, counter)
	if err != nil {
		return err
	}
	// Served as `refresher run` serves it: connection cap, time limits.
	hsrv, hln := operator.NewHTTPServer(handler, hln, conf.HTTPLimits())
	go func() { _ = hsrv.Serve(hln) }()
	defer hsrv.Close()

	addrs := Addrs{Dashboard: "http://" + hln.Addr().String() + "/", Redis: mr.Addr(), Target: targetURL, Database: dbFile, Calls: target.Calls, Now: clock.Now}
	printIntro(o.Out, addrs, o.Speed, o.For, clock, token, !operator.IsLoopback(conf.HTTPAddr()))
	if o.Ready != nil {
		o.Ready(addrs)
	}

	errc := make(chan error, 2)
	go func() { errc <- svc.Run(ctx) }()
	go func() { errc <- w.Run(ctx) }()
	for range 2 {
		if e := <-errc; e != nil && !errors.Is(e, context.Canceled) && !errors.Is(e, context.DeadlineExceeded) {
			err = errors.Join(err, e)
		}
	}
	if err == nil {
		printStop(o.Out, parent, o.For, clock)
	}
	return err
}

// demoGauges are the alert gauges of `refresher run`, which also sample the
// due backlog and the lateness into the dashboard's charts. They count once
// a demo minute (but no more often than every 250 ms of real time), so that
// the charts get a sample in each minute, as a service does with the
// default gauge_interval of 15 s.
func demoGauges(c *config.Config, store models.Store, rio *redisio.Client, clock *Clock, m *refresher.Metrics,
	counter *refresher.Counter, log *slog.Logger) *refresher.Gauges {
	k := c.Kinds[0].Gauge()
	k.Inspector = store
	return refresher.NewGauges(m.Registry, refresher.GaugeConfig{Kinds: []refresher.GaugeKind{k}, Priorities: c.GaugePriorities(),
		Redis: rio, Interval: max(clock.Real(time.Minute), 250*time.Millisecond), Clock: clock, Counter: counter, Logger: log})
}

// printStop says why the demo stopped: --for ran out (and how to run
// longer) or it was interrupted.
func printStop(w io.Writer, parent context.Context, runFor time.Duration, clock *Clock) {
	at := clock.Now().Format("15:04")
	if parent.Err() == nil && runFor > 0 {
		fmt.Fprintf(w, "\nrefresher demo: stopped after --for %s of real time (demo time %s). Run longer with --for 10m, or without --for until Ctrl-C.\n", runFor, at)
		return
	}
	fmt.Fprintf(w, "\nrefresher demo: stopped (interrupted at demo time %s).\n", at)
}

// demoConfig is the demo's configuration, as a file would give it, with
// the same defaults: the dashboard on httpAddr with one act token, and the
// example kind, hourly by default, with 2-minute attempts and a short retry
// list so that a disable happens within the first demo hours.
func demoConfig(httpAddr, token string) (*config.Config, error) {
	c := config.Config{HTTP: httpAddr, APITokens: map[string]config.APIToken{"demo": {Token: token}}, Kinds: []config.Kind{{
		Name:           Kind,
		Table:          "reports",
		Key:            "uid",
		Payload:        []string{"name", "input_url"},
		Schedule:       hourly,
		Timeout:        config.Duration(2 * time.Minute),
		Retry:          "delays:0s,5m,15m",
		DisabledReason: "Cannot refresh this report after {attempts} attempts",
	}}}
	c.SetDefaults()
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	return &c, nil
}

// printIntro says what runs where. Off loopback (readsNeedToken), reading
// the dashboard needs the token too, as the password the browser asks for.
func printIntro(w io.Writer, a Addrs, speed float64, runFor time.Duration, clock *Clock, token string, readsNeedToken bool) {
	tokenFor := "token for its actions"
	if readsNeedToken {
		tokenFor = "token for reading it (the password your browser asks for) and its actions"
	}
	fmt.Fprintf(w, `refresher demo: the whole loop in one process, the clock %gx faster (demo time now %s)

  dashboard   %s   (%s: %s)
  redis       redis-cli -p %s   (lists %s-input, %s-output, %s-dead)
  target      %s   (/ok, /flaky, /throttled, /slow, /missing, /down)
  database    %s   (table reports)

What to look at in the first minutes: the hourly refreshes, "flaky" retrying
and yielding to the planned run, "throttled" waiting out its Retry-After,
"slow" timing out and retrying, "missing" disabled with the reason its user
would see, and "down" disabled once its retries are used up.
%s
`, speed, clock.Now().Format("15:04"), a.Dashboard, tokenFor, token, portOf(a.Redis), Kind, Kind, Kind, a.Target, a.Database, stopHint(runFor))
}

// stopHint says how the demo will end.
func stopHint(runFor time.Duration) string {
	if runFor > 0 {
		return fmt.Sprintf("It stops after %s (--for); press Ctrl-C to stop sooner.", runFor)
	}
	return "Press Ctrl-C to stop."
}

func portOf(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return port
}

// dashboard is the operator surface of the demo's kind, with the access of
// `refresher run` on the same address: the token made for this run (printed
// at start) acts, and reads need it off loopback.
func dashboard(svc *refresher.Service, store models.Store, rdb *redis.Client, clock *Clock, c *config.Config,
	counter *refresher.Counter) (http.Handler, error) {
	srv, err := operator.New(c.OperatorAccess(operator.Options{
		Kinds:    []operator.Kind{c.Kinds[0].Operator()},
		Store:    store,
		Redis:    rdb,
		Counter:  counter,
		Gatherer: svc.Metrics().Registry,
		Now:      clock.Now,
	}))
	if err != nil {
		return nil, err
	}
	return srv.Handler(), nil
}
