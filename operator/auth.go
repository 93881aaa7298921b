package operator

import (
	"crypto/sha256"
	"crypto/subtle"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// NoTokenHelp says how to configure a token; it ends the 403 of a
// state-changing request on a read-only API and run's refusal to listen on a
// non-loopback address without one.
const NoTokenHelp = `set api_tokens in the config (api_tokens: {alice: "<long random text>"}) or REFRESHER_API_TOKENS='{alice: "<long random text>"}', e.g. with a token from "openssl rand -hex 32"`

// authenticator checks bearer tokens and limits failed attempts per client
// IP.
type authenticator struct {
	tokens []namedToken
	burst  int
	every  time.Duration

	mu       sync.Mutex
	limiters map[string]*rate.Limiter // by client IP
}

type namedToken struct {
	name string
	sum  [32]byte
}

func newAuthenticator(tokens map[string]string, burst int, every time.Duration) *authenticator {
	a := &authenticator{burst: burst, every: every, limiters: map[string]*rate.Limiter{}}
	for name, tok := range tokens {
		if tok != "" {
			a.tokens = append(a.tokens, namedToken{name: name, sum: sha256.Sum256([]byte(tok))})
		}
	}
	return a
}

// readOnly reports whether no token is configured.
func (a *authenticator) readOnly() bool { return len(a.tokens) == 0 }

// check returns the name of the token r carries. Otherwise it returns the
// status (401, 403, or 429 once the client IP used up its failures) and a
// message. Tokens are compared through their SHA-256 sums in constant time,
// each of them, so the time taken says nothing about which one is close.
func (a *authenticator) check(r *http.Request) (name string, status int, msg string) {
	if a.readOnly() {
		return "", http.StatusForbidden, "the API is read-only: no token is configured; " + NoTokenHelp
	}
	lim := a.limiter(clientIP(r))
	if lim.Tokens() < 1 {
		return "", http.StatusTooManyRequests, "too many failed authentications from this address; wait a minute"
	}
	given, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || given == "" {
		lim.Allow()
		return "", http.StatusUnauthorized, `this action needs a token: send "Authorization: Bearer <token>" (in the dashboard, enter it in the token field at the top)`
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(given)))
	for _, t := range a.tokens {
		if subtle.ConstantTimeCompare(sum[:], t.sum[:]) == 1 {
			name = t.name
		}
	}
	if name == "" {
		lim.Allow()
		return "", http.StatusUnauthorized, "the token is not valid"
	}
	return name, 0, ""
}

// limiter returns the failure limiter of one client IP. The table is
// emptied when it grows past 10000 addresses, which bounds its memory.
func (a *authenticator) limiter(ip string) *rate.Limiter {
	a.mu.Lock()
	defer a.mu.Unlock()
	l, ok := a.limiters[ip]
	if !ok {
		if len(a.limiters) >= 10000 {
			a.limiters = map[string]*rate.Limiter{}
		}
		l = rate.NewLimiter(rate.Every(a.every), a.burst)
		a.limiters[ip] = l
	}
	return l
}

// clientIP is the connection's remote address without the port. Headers
// such as X-Forwarded-For are not trusted: any client can set them.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
