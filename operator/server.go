// Package operator is the operator's HTTP surface of a running service:
// /metrics, /healthz and /readyz, the JSON API under /api/v1/ and the
// dashboard at / (server-rendered from embedded templates; see docs/operating.md,
// "The dashboard and API"). It reads through models.Store and models.Inspector, so it
// works on every database driver, and changes state only through the
// refresher package's refresher.Admin (enable, trigger, pause and resume),
// which the CLI uses too.
//
// Reading needs no token unless Options.ReadNeedsToken (run sets it off
// loopback): then the API, the dashboard and /metrics need a token of role
// read or act, as a bearer token or, for a browser, as the password of HTTP
// Basic. Every state-changing request needs "Authorization: Bearer <token>"
// with one of Options.Tokens (role act); with none configured the API is
// read-only. There are no cookies and actions never take Basic, so no
// cross-site request forgery. With Options.Loopback, only loopback names in
// Host are served (DNS rebinding). /healthz and /readyz need nothing.
// Nothing served shows a DSN, a Redis URL or a token.
package operator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
	"github.com/refresher/refresher/refresher"
	"github.com/refresher/refresher/schedule"
)

// Kind is what the operator surface knows of one configured kind.
type Kind struct {
	Name  string
	Table models.Table
	Lists redisio.Lists
	// Schedule is the kind's default rule (rows with refresh_rrule NULL).
	Schedule *schedule.Schedule
	Policy   policy.Policy
	// LateAfter: a row due for longer is late. Default 1m.
	LateAfter time.Duration
	// Priority names the kind's priority level; shown on the overview.
	Priority string
	// PriorityLevels maps the names of the configured priority levels to
	// their levels: the API's trigger?priority=NAME.
	PriorityLevels map[string]int
	// ThrottleGroup is the kind's throttle_group: the payload column (one
	// of Table.Payload) naming a row's throttle group; "" for none. A
	// model whose group is held shows the hold.
	ThrottleGroup string
	// Store is the database that holds Table. Default Options.Store.
	// When it implements models.LedgerReader, the model page shows the
	// history and the why API answers.
	Store models.Store
	// LedgerKeep is how long the ledger keeps entries (0: unknown); an
	// answer about an older time says its entries are gone.
	LedgerKeep time.Duration
	// LedgerMaxEntries is how many entries of a row the ledger keeps (0:
	// unknown); LedgerOff says it is off (ledger.enabled: false), so that
	// the why API answers from the schedule and the row's columns only.
	LedgerMaxEntries int
	LedgerOff        bool
}

// Options configure a Server.
type Options struct {
	Kinds []Kind
	// Store is the database of the kinds without a Store of their own
	// (its Inspector part gives the counts and lists); nil when every kind
	// has one.
	Store models.Store
	// Redis holds the kinds' lists.
	Redis redis.UniversalClient
	// Counter owns the kinds' counts (refresher.Counter): give the alert
	// gauges (refresher.GaugeConfig.Counter) the same one, so that the
	// overview takes their count while it is fresh and they take the
	// overview's. Default: a Counter of the server's own.
	Counter *refresher.Counter
	// Gatherer is served on /metrics; nil serves no /metrics.
	Gatherer prometheus.Gatherer
	// Tokens maps a token's name to the bearer token that may change
	// state (role act). None: the API is read-only.
	Tokens map[string]string
	// ReadTokens maps a token's name to a token that may only read (role
	// read).
	ReadTokens map[string]string
	// ReadNeedsToken: reads need a token too (of either role).
	ReadNeedsToken bool
	// Loopback: the server listens on loopback only, so a request must
	// name a loopback host ("localhost", 127.x.x.x, [::1], any port) in
	// Host; others get 421. A web page whose name a DNS server rebinds to
	// 127.0.0.1 cannot read the API from a browser then.
	Loopback bool
	// PageTimeout bounds each dashboard page and API request: one whose
	// queries take longer answers 503 saying so. Default 5s.
	PageTimeout time.Duration
	// CheckTimeout bounds each of /readyz's checks (the database, Redis),
	// each with its own deadline. Default 2s.
	CheckTimeout time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Logger logs actions (with the token's name) and internal errors.
	// Default slog.Default().
	Logger *slog.Logger
	// AuthFailures bounds failed authentications per client IP: Burst
	// failures at once, then one per Every. Defaults 10 and 6s.
	AuthFailureBurst int
	AuthFailureEvery time.Duration
	// SearchBudget is the rows a model search (q=) examines per request
	// before it answers with what it found and where to go on; see
	// models.ListQuery.ScanBudget. Default models.DefaultScanBudget.
	SearchBudget int
	// Ledger records the operator's actions (enable, trigger, pause,
	// resume) in the ledger with the token's name (refresher.Admin's
	// Recording), as `ledger.enabled` asks.
	Ledger bool
}

// Server serves the operator's HTTP surface; see the package doc.
type Server struct {
	o       Options
	kinds   map[string]*Kind
	order   []string
	auth    *authenticator
	handler http.Handler

	mu       sync.Mutex
	overview []KindSummary // last counts; nil after an action
	cachedAt time.Time     // when overview's rows were counted (the oldest kind's count)
	counting bool          // a recount runs
	closed   bool          // Close was called: no recount starts

	chartCache chartCache // the activities read lately (charts.go)

	// recounts is the background recount (see overviewCached), run with
	// recountCtx; Close cancels it and waits for it.
	recounts    sync.WaitGroup
	recountCtx  context.Context
	stopRecount context.CancelFunc
}

// New returns a Server; Handler serves it.
func New(o Options) (*Server, error) {
	if o.Redis == nil {
		return nil, errors.New("operator: Redis is required")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.PageTimeout = cmp.Or(o.PageTimeout, 5*time.Second)
	o.CheckTimeout = cmp.Or(o.CheckTimeout, 2*time.Second)
	if o.Counter == nil {
		o.Counter = refresher.NewCounter()
	}
	s := &Server{o: o, kinds: map[string]*Kind{}}
	s.recountCtx, s.stopRecount = context.WithCancel(context.Background())
	for i := range o.Kinds {
		k := o.Kinds[i]
		k.LateAfter = cmp.Or(k.LateAfter, models.DefaultLateAfter)
		if k.Lists == (redisio.Lists{}) {
			k.Lists = redisio.DefaultLists(k.Name)
		}
		k.Policy = k.Policy.WithDefaults()
		if k.Store == nil {
			k.Store = o.Store
		}
		if k.Store == nil {
			return nil, fmt.Errorf("operator: kind %s has no Store, and Options.Store is nil", k.Name)
		}
		s.kinds[k.Name] = &k
		s.order = append(s.order, k.Name)
	}
	s.auth = newAuthenticator(o.Tokens, o.ReadTokens, cmp.Or(o.AuthFailureBurst, 10), cmp.Or(o.AuthFailureEvery, 6*time.Second))
	s.handler = s.routes()
	return s, nil
}

// Close stops the background recount of the overview, if one runs, and
// waits for it, so that it does not outlive the database and Redis clients
// its caller closes next. Close the HTTP server first: a request after
// Close answers with the counts it has, and counts only when it has none.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.stopRecount()
	s.recounts.Wait()
}

// ReadOnly reports whether no token may act: every state-changing request
// is refused.
func (s *Server) ReadOnly() bool { return s.auth.readOnly() }

// ReadNeedsToken reports whether reads need a token (Options.ReadNeedsToken).
func (s *Server) ReadNeedsToken() bool { return s.o.ReadNeedsToken }

// Handler returns the HTTP handler of every route.
func (s *Server) Handler() http.Handler { return s.handler }

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	if s.o.Gatherer != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(s.o.Gatherer, promhttp.HandlerOpts{}))
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /readyz", s.readyz)
	s.apiRoutes(mux)
	s.dashboardRoutes(mux)
	return secure(s.hostCheck(s.readGate(s.boundReads(mux))))
}

// secure sets the headers every response carries: no caching of operator
// data, no framing, no sniffing, and a content security policy that allows
// only the embedded assets.
func secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Cache-Control", "no-store")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
		next.ServeHTTP(w, r)
	})
}

// readyz answers 200 when every database and Redis answer, and 503
// naming those that do not otherwise. The checks run at once, each with
// its own deadline (CheckTimeout), so a frozen database is never reported
// as Redis, nor as another database. The detail goes to the log only: driver errors may
// name hosts.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	check := func(what string, ping func(context.Context) error) <-chan string {
		out := make(chan string, 1)
		go func() {
			ctx, cancel := context.WithTimeout(r.Context(), s.o.CheckTimeout)
			defer cancel()
			if err := ping(ctx); err != nil {
				s.o.Logger.Warn("readyz: "+what+" does not answer", "err", err)
				out <- what + " does not answer"
			}
			close(out)
		}()
		return out
	}
	var checks []<-chan string
	for _, db := range s.databases() {
		checks = append(checks, check(db.name, db.store.Ping))
	}
	checks = append(checks, check("Redis", func(ctx context.Context) error { return s.o.Redis.Ping(ctx).Err() }))
	var reasons []string
	for _, c := range checks {
		if reason, ok := <-c; ok {
			reasons = append(reasons, reason)
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if len(reasons) > 0 {
		w.WriteHeader(http.StatusServiceUnavailable)
		for _, r := range reasons {
			w.Write([]byte(r + " (see the service log)\n"))
		}
		return
	}
	w.Write([]byte("ok\n"))
}

// database is one database of the kinds, as /readyz names it.
type database struct {
	name  string
	store models.Store
}

// databases lists Options.Store and the kinds' distinct stores, in the
// order of their first kind: "the database" when there is one, else "the
// database of kinds a, b" (never its URL, which may name hosts).
func (s *Server) databases() []database {
	var (
		out   []database
		kinds [][]string
	)
	at := map[models.Store]int{}
	if s.o.Store != nil {
		at[s.o.Store] = 0
		out, kinds = append(out, database{store: s.o.Store}), append(kinds, nil)
	}
	for _, name := range s.order {
		k := s.kinds[name]
		i, ok := at[k.Store]
		if !ok {
			i = len(out)
			at[k.Store] = i
			out = append(out, database{store: k.Store})
			kinds = append(kinds, nil)
		}
		kinds[i] = append(kinds[i], k.Name)
	}
	for i := range out {
		switch {
		case len(out) == 1:
			out[i].name = "the database"
		case len(kinds[i]) == 0:
			out[i].name = "the top-level database"
		default:
			out[i].name = "the database of kinds " + strings.Join(kinds[i], ", ")
		}
	}
	return out
}

// IsLoopback reports whether a listen address only accepts connections from
// this machine ("127.0.0.1:9090", "[::1]:9090", "localhost:9090"). An empty
// host (":9090") listens on every interface.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
