package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/refresher/refresher/config"
	"github.com/refresher/refresher/internal/redact"
	"github.com/refresher/refresher/redisio"
	"github.com/refresher/refresher/worker"
)

func init() { commands = append(commands, newWorkerCmd) }

// workerSettings is what the worker command needs to know. Each source of
// settings yields one; a zero field means "not set here", and
// workerSettings.overlay lets a later source win:
//
//	workerDefaults() -> workerEnv(REFRESHER_*) -> the flags
//
// A configuration file is one more source of the same shape (Redis URL, and
// the list names of the --kind), placed after the defaults so that the
// environment and the flags still override it.
//
// AllowPrivateNetworks is on when any source turns it on; AllowNetworks of
// a later source replaces an earlier one's.
type workerSettings struct {
	Kind                 string
	RedisURL             string
	Prefix               string // starts the default list names, as the service's redis_prefix
	Input                string // "" means the default "<prefix><kind>-input" (see withLists)
	Output               string // "" means the default "<prefix><kind>-output" (see withLists)
	Concurrency          int
	HTTPTimeout          time.Duration
	MaxBodyBytes         int64
	AllowPrivateNetworks bool
	AllowNetworks        []netip.Prefix
	// ThrottleGroup is the kind's throttle_group (a payload column), from
	// the config file only.
	ThrottleGroup string
	// Lanes are the kind's priority lanes (levels more urgent than its
	// priority:, whose jobs have lists of their own), from the config file
	// or --lanes.
	Lanes []int
	// Lease is the kind's timeout, from the config file only: what a job
	// whose work runs asks for at each request for more time.
	Lease time.Duration
}

// workerDefaults are the settings when nothing else is given.
func workerDefaults() workerSettings {
	return workerSettings{
		RedisURL:     "redis://127.0.0.1:6379/0",
		Concurrency:  worker.ConcurrencyDefault,
		HTTPTimeout:  worker.HTTPTimeoutDefault,
		MaxBodyBytes: worker.MaxBodyBytesDefault,
	}
}

// workerEnv reads the environment variables of the worker: REFRESHER_REDIS
// and REFRESHER_REDIS_PREFIX (shared with the service),
// REFRESHER_WORKER_ALLOW_PRIVATE_NETWORKS (true or false),
// REFRESHER_WORKER_ALLOW_NETWORKS (comma-separated CIDRs) and
// REFRESHER_WORKER_MAX_BODY_BYTES.
func workerEnv(getenv func(string) string) (workerSettings, error) {
	s := workerSettings{RedisURL: getenv("REFRESHER_REDIS"), Prefix: getenv("REFRESHER_REDIS_PREFIX")}
	if v := getenv("REFRESHER_WORKER_ALLOW_PRIVATE_NETWORKS"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return s, fmt.Errorf("worker: REFRESHER_WORKER_ALLOW_PRIVATE_NETWORKS: %q is not true or false", v)
		}
		s.AllowPrivateNetworks = b
	}
	if v := getenv("REFRESHER_WORKER_ALLOW_NETWORKS"); v != "" {
		nets, err := config.ParseNetworks(strings.Split(v, ","))
		if err != nil {
			return s, fmt.Errorf("worker: REFRESHER_WORKER_ALLOW_NETWORKS: %w", err)
		}
		s.AllowNetworks = nets
	}
	if v := getenv("REFRESHER_WORKER_MAX_BODY_BYTES"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return s, fmt.Errorf("worker: REFRESHER_WORKER_MAX_BODY_BYTES: %q is not a positive number of bytes", v)
		}
		s.MaxBodyBytes = n
	}
	return s, nil
}

// withLists returns s with Input and Output set: as given, else the
// service's default lists of the kind, which start with the prefix and are
// tagged on a Redis Cluster ("{<prefix><kind>}-input").
func (s workerSettings) withLists() workerSettings {
	lists := redisio.DefaultListsOn(redisio.TopologyOf(s.RedisURL), s.Prefix+s.Kind)
	s.Input, s.Output = cmp.Or(s.Input, lists.Input), cmp.Or(s.Output, lists.Output)
	return s
}

// overlay returns s with every field that o sets replaced by o's.
func (s workerSettings) overlay(o workerSettings) workerSettings {
	r := workerSettings{
		Kind:                 cmp.Or(o.Kind, s.Kind),
		RedisURL:             cmp.Or(o.RedisURL, s.RedisURL),
		Prefix:               cmp.Or(o.Prefix, s.Prefix),
		Input:                cmp.Or(o.Input, s.Input),
		Output:               cmp.Or(o.Output, s.Output),
		Concurrency:          cmp.Or(o.Concurrency, s.Concurrency),
		HTTPTimeout:          cmp.Or(o.HTTPTimeout, s.HTTPTimeout),
		MaxBodyBytes:         cmp.Or(o.MaxBodyBytes, s.MaxBodyBytes),
		AllowPrivateNetworks: o.AllowPrivateNetworks || s.AllowPrivateNetworks,
		AllowNetworks:        s.AllowNetworks,
		ThrottleGroup:        cmp.Or(o.ThrottleGroup, s.ThrottleGroup),
		Lanes:                s.Lanes,
		Lease:                cmp.Or(o.Lease, s.Lease),
	}
	if o.AllowNetworks != nil {
		r.AllowNetworks = o.AllowNetworks
	}
	if o.Lanes != nil {
		r.Lanes = o.Lanes
	}
	return r
}

func (s workerSettings) validate() error {
	switch {
	case s.Kind == "":
		return errors.New("worker: --kind is required (the kind whose jobs to do, e.g. --kind big_tables)")
	case s.Concurrency < 1:
		return fmt.Errorf("worker: --concurrency must be at least 1, not %d", s.Concurrency)
	case s.HTTPTimeout <= 0:
		return fmt.Errorf("worker: --http-timeout must be positive, not %s", s.HTTPTimeout)
	case s.MaxBodyBytes < 1:
		return fmt.Errorf("worker: --max-body-bytes must be positive, not %d", s.MaxBodyBytes)
	}
	return nil
}

func newWorkerCmd() *cobra.Command {
	var flags workerSettings
	var configPath string
	var allowNetworks []string
	cmd := &cobra.Command{
		Use:   "worker --kind NAME",
		Short: "Run the reference worker: GET each job's input_url and report the result",
		Long: `Run the reference worker for one kind until SIGINT or SIGTERM. It pops JSON
jobs from the kind's input list, GETs the payload's input_url, and pushes a
JSON result onto the kind's output list:

  2xx                          success, status "fetched <n> bytes"
  404, 410, malformed URL,     permanent failure,
    host that does not exist     "Provided URL is invalid: <url>"
  429 or 503 with Retry-After  failure with retry_after_seconds
  anything else, a timeout     failure with a short technical reason

  a non-public address         permanent failure,
    (unless allowed), or a       "Provided URL is not allowed: <url>"
    redirect to file:, gopher:
  a body over --max-body-bytes failure

input_url is end-user input, so the worker refuses to connect to loopback,
private, link-local and other non-public addresses, also after a redirect or
when a public name resolves to one. --allow-private-networks (every such
address) or --allow-networks 10.1.0.0/16 (just those) lifts that, for input
files served inside your network. Proxy environment variables are ignored.

URLs in results and in the log show neither user information
(user:password@) nor the values of parameters such as token, key, password
or signature: those become "xxxxx".

Jobs whose timeout_at has passed are dropped. On SIGTERM it stops popping,
finishes the jobs in hand and pushes their results.

With --config, the Redis URL, the kind's list names and the "worker:"
section (allow_private_networks, allow_networks, max_body_bytes) come from
the service's configuration file. Environment: REFRESHER_REDIS (the Redis
URL), REFRESHER_REDIS_PREFIX (starts the default list names, as the
service's redis_prefix), REFRESHER_WORKER_ALLOW_PRIVATE_NETWORKS (true or false),
REFRESHER_WORKER_ALLOW_NETWORKS (comma-separated CIDRs),
REFRESHER_WORKER_MAX_BODY_BYTES. Flags win over the environment, and it
wins over the file.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if flags.Kind == "" {
				// Before the file: its kinds cannot be looked up without one.
				return workerSettings{}.validate()
			}
			file, err := workerFile(configPath, flags.Kind)
			if err != nil {
				return err
			}
			env, err := workerEnv(os.Getenv)
			if err != nil {
				return err
			}
			nets, err := config.ParseNetworks(allowNetworks)
			if err != nil {
				return fmt.Errorf("worker: --allow-networks: %w", err)
			}
			flags.AllowNetworks = nets
			s := workerDefaults().overlay(file).overlay(env).overlay(flags)
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			if err := s.validate(); err != nil {
				return err
			}
			s = s.withLists()
			logSources(log, s, configPath, file, env, flags)
			return runWorker(cmd.Context(), s, log)
		},
	}
	f := cmd.Flags()
	f.StringVar(&configPath, "config", "", "the service's YAML configuration file (optional): Redis URL and the kind's lists")
	f.StringVar(&flags.Kind, "kind", "", "kind whose jobs to do, e.g. big_tables (required)")
	f.StringVar(&flags.RedisURL, "redis", "", `Redis URL (default $REFRESHER_REDIS, else "redis://127.0.0.1:6379/0")`)
	f.StringVar(&flags.Input, "input", "", `list to pop jobs from (default "<kind>-input", after $REFRESHER_REDIS_PREFIX)`)
	f.IntSliceVar(&flags.Lanes, "lanes", nil, `the kind's priority lanes, most urgent first: their lists "<input>:p<N>" are popped before the input list (default: from --config, the levels more urgent than the kind's priority)`)
	f.StringVar(&flags.Output, "output", "", `list to push results to (default "<kind>-output", after $REFRESHER_REDIS_PREFIX)`)
	f.IntVar(&flags.Concurrency, "concurrency", 0, fmt.Sprintf("jobs done at once (default %d)", worker.ConcurrencyDefault))
	f.DurationVar(&flags.HTTPTimeout, "http-timeout", 0, fmt.Sprintf("time limit of one GET, body included (default %s)", worker.HTTPTimeoutDefault))
	f.Int64Var(&flags.MaxBodyBytes, "max-body-bytes", 0, fmt.Sprintf("size limit of one response body; a larger one is a failure (default %d, 100 MB)", worker.MaxBodyBytesDefault))
	f.BoolVar(&flags.AllowPrivateNetworks, "allow-private-networks", false, "allow input URLs on loopback, private, link-local and other non-public addresses (refused by default: input_url is end-user input)")
	f.StringSliceVar(&allowNetworks, "allow-networks", nil, "allow input URLs on these networks only, in CIDR notation, e.g. 10.1.0.0/16 (comma-separated or repeated)")
	return cmd
}

// workerFile reads the Redis URL and the kind's list names from the
// service's configuration file; no file gives no settings.
func workerFile(path, kind string) (workerSettings, error) {
	if path == "" {
		return workerSettings{}, nil
	}
	c, err := config.Load(path)
	if err != nil {
		return workerSettings{}, err
	}
	k, err := c.Kind(kind)
	if err != nil {
		return workerSettings{}, fmt.Errorf("worker: %w", err)
	}
	nets, err := c.Worker.Networks()
	if err != nil {
		return workerSettings{}, fmt.Errorf("worker: %s: worker.allow_networks: %w", path, err)
	}
	return workerSettings{RedisURL: c.Redis, Input: k.Input, Output: k.Output, MaxBodyBytes: c.Worker.MaxBodyBytes,
		AllowPrivateNetworks: c.Worker.AllowPrivateNetworks, AllowNetworks: nets, ThrottleGroup: k.ThrottleGroup, Lanes: k.Lanes,
		Lease: k.Timeout.D()}, nil
}

// logSources says which Redis and lists the worker uses and where each
// came from, so that a worker started without --config does not wait
// silently on the default Redis while the service uses another. It warns
// when both are the defaults. s is the merged settings with its lists set
// (withLists): what the worker uses.
func logSources(log *slog.Logger, s workerSettings, configPath string, file, env, flags workerSettings) {
	from := func(flag, envName string, f, e, fl string) string {
		switch {
		case fl != "":
			return flag
		case e != "":
			return envName
		case f != "":
			return configPath
		}
		return "default"
	}
	redisFrom := from("--redis", "REFRESHER_REDIS", file.RedisURL, env.RedisURL, flags.RedisURL)
	// The file's lists already hold its redis_prefix, or the environment's
	// (config.Load applies it): the prefix only names the default lists.
	prefix := env.Prefix
	if file.Input+file.Output != "" {
		prefix = ""
	}
	listsFrom := from("--input/--output", "REFRESHER_REDIS_PREFIX", file.Input+file.Output, prefix, flags.Input+flags.Output)
	attrs := []any{"redis", redact.String(s.RedisURL), "redis_from", redisFrom,
		"input", s.Input, "output", s.Output, "lists_from", listsFrom}
	if len(s.Lanes) > 0 {
		inputs := redisio.Lists{Input: s.Input}.Inputs(s.Lanes)
		attrs = append(attrs, "lanes", inputs[:len(inputs)-1])
	}
	if redisFrom == "default" && listsFrom == "default" {
		log.Warn("worker uses the default Redis and lists: pass --config with the service's configuration file (or --redis, --input, --output) if the service uses others", attrs...)
		return
	}
	log.Info("worker settings", attrs...)
}

// runWorker connects to Redis and runs the worker until ctx is cancelled.
func runWorker(ctx context.Context, s workerSettings, log *slog.Logger) error {
	if err := s.validate(); err != nil {
		return err
	}
	s = s.withLists()
	redisio.LogTo(log) // go-redis's failovers, leveled, beside the worker's lines
	rdb, err := redisio.Open(ctx, s.RedisURL, redisio.Options{PoolSize: s.Concurrency + 4})
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	defer rdb.Close()
	tracer, flush, err := startTracing(ctx, "refresher-worker", log)
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	defer flush()
	inputs := redisio.Lists{Input: s.Input}.Inputs(s.Lanes)
	w, err := worker.New(worker.Config{
		Kind:                 s.Kind,
		Redis:                rdb,
		Input:                s.Input,
		PriorityInputs:       inputs[:len(inputs)-1],
		Output:               s.Output,
		Concurrency:          s.Concurrency,
		HTTPTimeout:          s.HTTPTimeout,
		MaxBodyBytes:         s.MaxBodyBytes,
		AllowPrivateNetworks: s.AllowPrivateNetworks,
		AllowNetworks:        s.AllowNetworks,
		ThrottleGroup:        s.ThrottleGroup,
		Lease:                s.Lease,
		Logger:               log,
		Tracer:               tracer,
	})
	if err != nil {
		return err
	}
	return w.Run(ctx)
}
