// Package operator is the operator's HTTP surface of a running service:
// /metrics, /healthz and /readyz, the JSON API under /api/v1/ and the
// dashboard at / (server-rendered from embedded templates; see docs/operating.md,
// "The dashboard and API"). It reads through models.Store and models.Inspector, so it
// works on every database driver, and changes state only through the
// refresher package's refresher.Admin (enable, trigger, pause and resume),
// which the CLI uses too.
//
// Reading needs no token. Every state-changing request needs
// "Authorization: Bearer <token>" with one of Options.Tokens; with none
// configured the API is read-only. There are no cookies, so no cross-site
// request forgery. Nothing served shows a DSN, a Redis URL or a token.
package operator

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
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
	// Priority labels the kind (free text); shown on the overview.
	Priority string
	// ThrottleGroup is the kind's throttle_group: the payload column (one
	// of Table.Payload) naming a row's throttle group; "" for none. A
	// model whose group is held shows the hold.
	ThrottleGroup string
}

// Options configure a Server.
type Options struct {
	Kinds []Kind
	// Store is the database; it must also implement models.Inspector for
	// the counts and lists (every driver does).
	Store models.Store
	// Redis holds the kinds' lists.
	Redis redis.UniversalClient
	// Gatherer is served on /metrics; nil serves no /metrics.
	Gatherer prometheus.Gatherer
	// Tokens maps a token's name to the bearer token that may change
	// state. None: the API is read-only.
	Tokens map[string]string
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
}

// Server serves the operator's HTTP surface; see the package doc.
type Server struct {
	o       Options
	kinds   map[string]*Kind
	order   []string
	insp    models.Inspector
	auth    *authenticator
	handler http.Handler

	mu       sync.Mutex
	overview []KindSummary // last counts; nil after an action
	cachedAt time.Time
	counting bool // a recount runs
}

// New returns a Server; Handler serves it.
func New(o Options) (*Server, error) {
	if o.Store == nil || o.Redis == nil {
		return nil, errors.New("operator: Store and Redis are required")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	s := &Server{o: o, kinds: map[string]*Kind{}}
	s.insp, _ = o.Store.(models.Inspector)
	for i := range o.Kinds {
		k := o.Kinds[i]
		k.LateAfter = cmp.Or(k.LateAfter, models.DefaultLateAfter)
		if k.Lists == (redisio.Lists{}) {
			k.Lists = redisio.DefaultLists(k.Name)
		}
		k.Policy = k.Policy.WithDefaults()
		s.kinds[k.Name] = &k
		s.order = append(s.order, k.Name)
	}
	s.auth = newAuthenticator(o.Tokens, cmp.Or(o.AuthFailureBurst, 10), cmp.Or(o.AuthFailureEvery, 6*time.Second))
	s.handler = s.routes()
	return s, nil
}

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
	return secure(mux)
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

// readyz answers 200 when the database and Redis both answer within 2s, and
// 503 naming the one that does not otherwise. The detail goes to the log
// only: driver errors may name hosts.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	var reasons []string
	if err := s.o.Store.Ping(ctx); err != nil {
		s.o.Logger.Warn("readyz: database does not answer", "err", err)
		reasons = append(reasons, "the database does not answer")
	}
	if err := s.o.Redis.Ping(ctx).Err(); err != nil {
		s.o.Logger.Warn("readyz: Redis does not answer", "err", err)
		reasons = append(reasons, "Redis does not answer")
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
