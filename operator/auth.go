package operator

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
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
const NoTokenHelp = `set api_tokens in the config (api_tokens: {alice: "<long random text>"}) or REFRESHER_API_TOKENS='{alice: "<long random text>"}', e.g. with a token from "openssl rand -hex 16"`

// Role is what a token may do.
type Role int

const (
	// RoleRead reads: the API's GETs, the dashboard, /metrics.
	RoleRead Role = iota + 1
	// RoleAct reads and changes state.
	RoleAct
)

// authenticator checks tokens (a bearer token, or for reads only HTTP Basic
// with the token as the password, which a browser can send for a page) and
// limits failed attempts per client IP. A valid token is always served,
// however many failures came from its address: the limit applies to the
// failures only, and lifts as soon as they stop (one more is allowed every
// `every`).
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
	role Role
}

// newAuthenticator knows act and read tokens (name → token; empty tokens
// are ignored).
func newAuthenticator(act, read map[string]string, burst int, every time.Duration) *authenticator {
	a := &authenticator{burst: burst, every: every, limiters: map[string]*rate.Limiter{}}
	for role, tokens := range map[Role]map[string]string{RoleAct: act, RoleRead: read} {
		for name, tok := range tokens {
			if tok != "" {
				a.tokens = append(a.tokens, namedToken{name: name, sum: sha256.Sum256([]byte(tok)), role: role})
			}
		}
	}
	return a
}

// readOnly reports whether no token may act.
func (a *authenticator) readOnly() bool {
	for _, t := range a.tokens {
		if t.role == RoleAct {
			return false
		}
	}
	return true
}

// viewer returns the name and role of the token r carries (a bearer token,
// or HTTP Basic with the token as the password, which a browser resends
// with every page once it has asked for it); role 0 when r carries none
// or an unknown one. It only says what the dashboard may offer: the
// routes check the token themselves, and an unknown one here is not
// counted as a failure.
func (a *authenticator) viewer(r *http.Request) (name string, role Role) {
	given := credential(r, true)
	if given == "" {
		return "", 0
	}
	sum := sha256.Sum256([]byte(given))
	for _, t := range a.tokens {
		if subtle.ConstantTimeCompare(sum[:], t.sum[:]) == 1 {
			name, role = t.name, t.role
		}
	}
	return name, role
}

// credential returns the token r carries: "Authorization: Bearer <token>",
// or, when basic is true, HTTP Basic with the token as the password (any
// user name). Actions take only a bearer token, which a browser never sends
// on its own: no cross-site request can act.
func credential(r *http.Request, basic bool) string {
	h := r.Header.Get("Authorization")
	if tok, ok := strings.CutPrefix(h, "Bearer "); ok {
		return strings.TrimSpace(tok)
	}
	if basic {
		if _, pass, ok := r.BasicAuth(); ok {
			return pass
		}
	}
	return ""
}

// check returns the name of the token r carries if its role is at least
// need. Otherwise it returns the status (401, 403, or 429 while the client
// IP's failures go on) and a message. Tokens are compared through their
// SHA-256 sums in constant time, each of them, so the time taken says
// nothing about which one is close.
func (a *authenticator) check(r *http.Request, need Role) (name string, status int, msg string) {
	if need == RoleAct && a.readOnly() {
		return "", http.StatusForbidden, "the API is read-only: no token of role act is configured; " + NoTokenHelp
	}
	given := credential(r, need == RoleRead)
	if given == "" {
		if need == RoleRead {
			return "", http.StatusUnauthorized, `reading needs a token: send "Authorization: Bearer <token>" (a token of role read or act), or in a browser enter the token as the password`
		}
		return "", http.StatusUnauthorized, `this action needs a token: send "Authorization: Bearer <token>" (in the dashboard, enter it in the token field at the top)`
	}
	sum := sha256.Sum256([]byte(given))
	var role Role
	for _, t := range a.tokens {
		if subtle.ConstantTimeCompare(sum[:], t.sum[:]) == 1 {
			name, role = t.name, t.role
		}
	}
	if name == "" {
		if !a.limiter(clientIP(r)).Allow() {
			return "", http.StatusTooManyRequests, fmt.Sprintf("too many failed authentications from this address; retry in %d s", a.retryAfter())
		}
		return "", http.StatusUnauthorized, "the token is not valid"
	}
	if role < need {
		return "", http.StatusForbidden, "the token " + name + " may only read; this action needs a token of role act"
	}
	return name, 0, ""
}

// retryAfter is the seconds until a limited client IP may fail once more
// (Retry-After of a 429): one `every`, at least 1.
func (a *authenticator) retryAfter() int { return max(1, int(a.every.Seconds()+0.5)) }

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
