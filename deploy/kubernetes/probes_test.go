package kubernetes

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/refresher/refresher/config"
	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/models/stores"
	"github.com/refresher/refresher/operator"
)

// podAddr is the address the kubelet probes: the pod's, not loopback.
const podAddr = "10.1.2.3"

// operatorHandlers returns the operator's HTTP handler as the service
// serves it with cfg (the access rules of `refresher run`: off loopback,
// reads need a token unless http_public_read), once with the database
// answering and once with it down. Redis is the test Redis.
func operatorHandlers(t *testing.T, cfg *config.Config) (up, dbDown http.Handler) {
	t.Helper()
	rdb, _ := testenv.Redis(t)
	loopback := operator.IsLoopback(cfg.HTTPAddr())
	serve := func(down bool) http.Handler {
		store, err := stores.Open(context.Background(), "sqlite::memory:", stores.Options{})
		require.NoError(t, err)
		if down {
			require.NoError(t, store.Close()) // every Ping fails from now on
		} else {
			t.Cleanup(func() { _ = store.Close() })
		}
		op, err := operator.New(operator.Options{Store: store, Redis: rdb, Gatherer: prometheus.NewRegistry(),
			Tokens: cfg.TokensOf(config.RoleAct), ReadTokens: cfg.TokensOf(config.RoleRead),
			ReadNeedsToken: !loopback && !cfg.HTTPPublicRead, Loopback: loopback})
		require.NoError(t, err)
		return op.Handler()
	}
	return serve(false), serve(true)
}

// get sends a GET for path to h at the pod's address and port, with a
// bearer token when token is not empty, and returns the status.
func get(h http.Handler, port, path, token string) int {
	r := httptest.NewRequest(http.MethodGet, "http://"+net.JoinHostPort(podAddr, port)+path, nil)
	r.RemoteAddr = "10.1.0.1:40000" // the kubelet, or Prometheus
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code
}

// checkProbes lists what is wrong with the probes of the service's
// container c, which listens on port: each must reach the port, need no
// token, and answer 200 while all is well; readiness must fail while the
// database is down, and liveness must not (a restart would not bring the
// database back, and restarting every pod at once would stop the service).
func checkProbes(c corev1.Container, port string, up, dbDown http.Handler) []string {
	var bad []string
	for _, pr := range []struct {
		what      string
		probe     *corev1.Probe
		whileDown int // the status wanted while the database is down
	}{
		{"readinessProbe", c.ReadinessProbe, http.StatusServiceUnavailable},
		{"livenessProbe", c.LivenessProbe, http.StatusOK},
	} {
		at := fmt.Sprintf("container %s: %s", c.Name, pr.what)
		if pr.probe == nil || pr.probe.HTTPGet == nil {
			bad = append(bad, at+": an httpGet probe")
			continue
		}
		g := pr.probe.HTTPGet
		probePort := g.Port.String()
		for _, cp := range c.Ports {
			if cp.Name == probePort {
				probePort = fmt.Sprint(cp.ContainerPort)
			}
		}
		if probePort != port {
			bad = append(bad, fmt.Sprintf("%s: port %s is not the one refresher listens on, %s", at, g.Port.String(), port))
			continue
		}
		if g.Scheme != "" && g.Scheme != corev1.URISchemeHTTP {
			bad = append(bad, fmt.Sprintf("%s: scheme %s: refresher serves plain HTTP", at, g.Scheme))
		}
		if len(g.HTTPHeaders) > 0 {
			bad = append(bad, at+": no headers: probes need no token")
		}
		if st := get(up, port, g.Path, ""); st != http.StatusOK {
			bad = append(bad, fmt.Sprintf("%s: GET %s without a token answers %d, not 200", at, g.Path, st))
		}
		if st := get(dbDown, port, g.Path, ""); st != pr.whileDown {
			bad = append(bad, fmt.Sprintf("%s: GET %s while the database is down answers %d, not %d", at, g.Path, st, pr.whileDown))
		}
	}
	return bad
}

// TestProbes checks the service's probes against the operator's HTTP
// server as `refresher run` configures it from the manifests.
func TestProbes(t *testing.T) {
	m := loadManifests(t)
	p, c := m.podRunning(t, runCmd)
	secret := secretValues(t, m)
	secret = strongTokens(t, secret, tokenKeys(t, *c))
	cfg, err := loadAs(t, m, p, *c, secret)
	require.NoError(t, err)
	_, port, err := net.SplitHostPort(cfg.HTTPAddr())
	require.NoError(t, err)
	up, down := operatorHandlers(t, cfg)

	for _, msg := range checkProbes(*c, port, up, down) {
		t.Error(msg)
	}

	// Prometheus scrapes /metrics with the Secret's read token, and
	// without a token gets nothing.
	require.Equal(t, http.StatusOK, get(up, port, "/metrics", secret[readTokenKey]), "GET /metrics with the read token")
	require.Equal(t, http.StatusUnauthorized, get(up, port, "/metrics", ""), "GET /metrics without a token")
}
