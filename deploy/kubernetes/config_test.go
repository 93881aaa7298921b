package kubernetes

import (
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
	corev1 "k8s.io/api/core/v1"

	"github.com/refresher/refresher/config"
	"github.com/refresher/refresher/operator"
)

// configEnv returns the names of the environment variables the config
// package reads (config.ApplyEnv asks for each).
func configEnv() map[string]bool {
	names := map[string]bool{}
	var c config.Config
	_ = config.ApplyEnv(&c, func(name string) (string, bool) {
		names[name] = true
		return "", false
	})
	return names
}

// varRef is a dependent environment variable, $(NAME), which Kubernetes
// replaces with the value of a variable defined above it in the list
// ($$ writes a literal $).
var varRef = regexp.MustCompile(`\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// checkEnv lists what is wrong with c's environment: a REFRESHER_ variable
// the binary does not read (a misspelled name would be ignored in silence),
// a $(NAME) that names no variable above it (Kubernetes would leave the
// text as it is), or a helper variable no other one uses.
func checkEnv(owner string, c corev1.Container) []string {
	known := configEnv()
	var bad []string
	defined := map[string]bool{}
	used := map[string]bool{}
	for _, e := range c.Env {
		if strings.HasPrefix(e.Name, config.EnvPrefix) && !known[e.Name] {
			bad = append(bad, fmt.Sprintf("%s: env %s: refresher reads no such variable (it reads %s)", owner, e.Name, strings.Join(slices.Sorted(maps.Keys(known)), ", ")))
		}
		for _, m := range varRef.FindAllStringSubmatch(e.Value, -1) {
			if m[1] == "" {
				continue
			}
			if !defined[m[1]] {
				bad = append(bad, fmt.Sprintf("%s: env %s uses $(%s), which no variable above it defines: Kubernetes would pass the text as it is", owner, e.Name, m[1]))
			}
			used[m[1]] = true
		}
		defined[e.Name] = true
	}
	for _, e := range c.Env {
		if !strings.HasPrefix(e.Name, config.EnvPrefix) && !used[e.Name] {
			bad = append(bad, fmt.Sprintf("%s: env %s: neither read by refresher (no %s prefix) nor used by another variable", owner, e.Name, config.EnvPrefix))
		}
	}
	return bad
}

// expandEnv returns c's environment as the container sees it: Secret keys
// looked up in secret (by key), $(NAME) replaced.
func expandEnv(t *testing.T, owner string, c corev1.Container, secret map[string]string) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, e := range c.Env {
		v := e.Value
		if e.ValueFrom != nil {
			var ok bool
			v, ok = secret[e.ValueFrom.SecretKeyRef.Key]
			require.True(t, ok, "%s: env %s: no Secret key %s", owner, e.Name, e.ValueFrom.SecretKeyRef.Key)
		}
		env[e.Name] = varRef.ReplaceAllStringFunc(v, func(ref string) string {
			if ref == "$$" {
				return "$"
			}
			if val, ok := env[ref[2:len(ref)-1]]; ok {
				return val
			}
			return ref
		})
	}
	return env
}

// loadAs runs config.Load as the container would: the ConfigMap's file at
// its --config path, the container's environment and nothing else of
// refresher's.
func loadAs(t *testing.T, m *manifests, p pod, c corev1.Container, secret map[string]string) (*config.Config, error) {
	t.Helper()
	_, text := configFile(t, m, p, c)
	path := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	env := expandEnv(t, p.owner, c, secret)
	for name := range configEnv() {
		t.Setenv(name, env[name]) // "" is unset for config.ApplyEnv
	}
	return config.Load(path)
}

// secretValues returns the string data of the one Secret.
func secretValues(t *testing.T, m *manifests) map[string]string {
	t.Helper()
	require.Len(t, m.secrets, 1)
	for _, s := range m.secrets {
		require.Empty(t, s.Data, "Secret %s: placeholders go in stringData, readable", s.Name)
		return maps.Clone(s.StringData)
	}
	return nil
}

// tokenKeys are the Secret's keys that hold API tokens: those the
// REFRESHER_API_TOKENS of the service reads.
func tokenKeys(t *testing.T, c corev1.Container) []string {
	t.Helper()
	var keys []string
	for _, e := range c.Env {
		if e.ValueFrom != nil && strings.Contains(apiTokensText(t, c), "$("+e.Name+")") {
			keys = append(keys, e.ValueFrom.SecretKeyRef.Key)
		}
	}
	require.NotEmpty(t, keys, "REFRESHER_API_TOKENS takes its tokens from the Secret")
	return keys
}

func apiTokensText(t *testing.T, c corev1.Container) string {
	t.Helper()
	for _, e := range c.Env {
		if e.Name == config.EnvPrefix+"API_TOKENS" {
			return e.Value
		}
	}
	t.Fatalf("%s sets no %sAPI_TOKENS: off loopback the server refuses to start without a token", c.Name, config.EnvPrefix)
	return ""
}

// strongTokens returns secret with each token key set to a token the
// binary accepts, as an operator would after editing the placeholders.
func strongTokens(t *testing.T, secret map[string]string, keys []string) map[string]string {
	t.Helper()
	out := maps.Clone(secret)
	for i, k := range keys {
		out[k] = fmt.Sprintf("%032x", i+1)
	}
	return out
}

func TestEnvironmentIsRead(t *testing.T) {
	t.Parallel()
	m := loadManifests(t)
	for _, p := range m.pods() {
		for _, c := range p.spec.Containers {
			for _, msg := range checkEnv(p.owner, c) {
				t.Error(msg)
			}
			for _, e := range c.Env {
				require.NotEqual(t, config.EnvPrefix+"INSTANCE_ID", e.Name, "%s: every replica would share one instance_id; leave the default (the pod's name and a random suffix)", p.owner)
			}
		}
		// Kubernetes would otherwise set REFRESHER_SERVICE_HOST,
		// REFRESHER_PORT... for the Service "refresher", in the
		// namespace of the variables refresher reads.
		require.NotNil(t, p.spec.EnableServiceLinks, "%s: enableServiceLinks: false", p.owner)
		require.False(t, *p.spec.EnableServiceLinks, "%s: enableServiceLinks: false", p.owner)
	}
}

// TestConfigMapKeys: the database URL, the Redis URL and the tokens come
// from the Secret only; and the file, which every pod shares, sets no
// instance_id, which must differ from one process to the next (the default
// is the pod's name and a random suffix).
func TestConfigMapKeys(t *testing.T) {
	t.Parallel()
	m := loadManifests(t)
	for name, cm := range m.configMaps {
		for key, text := range cm.Data {
			var top map[string]any
			require.NoError(t, yaml.Unmarshal([]byte(text), &top), "ConfigMap %s, %s", name, key)
			for _, secretKey := range []string{"database", "redis", "api_tokens"} {
				require.NotContains(t, top, secretKey, "ConfigMap %s, %s: %s belongs in the Secret", name, key, secretKey)
			}
			require.NotContains(t, top, "instance_id", "ConfigMap %s, %s: every pod would share one instance_id", name, key)
		}
	}
}

// TestServiceConfig loads the service's configuration as its pod would:
// refused with the Secret's placeholder tokens, accepted once they are
// replaced, listening on the container's port off loopback, with a token
// of role read for Prometheus and one of role act.
func TestServiceConfig(t *testing.T) {
	m := loadManifests(t)
	p, c := m.podRunning(t, runCmd)
	secret := secretValues(t, m)
	keys := tokenKeys(t, *c)

	_, err := loadAs(t, m, p, *c, secret)
	require.Error(t, err, "the Secret's placeholder tokens must be refused, so that nobody runs with them")
	for _, k := range keys {
		require.Less(t, len(secret[k]), config.MinTokenLength, "Secret key %s: the placeholder is shorter than %d characters, so refresher refuses it", k, config.MinTokenLength)
	}
	require.ErrorContains(t, err, fmt.Sprintf("fewer than %d", config.MinTokenLength))

	secret = strongTokens(t, secret, keys)
	cfg, err := loadAs(t, m, p, *c, secret)
	require.NoError(t, err, "the service's configuration with real tokens")
	require.Equal(t, secret["database-url"], cfg.Database, "%s: the Secret's database", p.owner)
	require.Equal(t, secret["redis-url"], cfg.Redis, "%s: the Secret's Redis", p.owner)

	addr := cfg.HTTPAddr()
	require.NotEmpty(t, addr, "the HTTP server is on: the probes and the Service need it")
	require.False(t, operator.IsLoopback(addr), "http: %s listens on loopback only, where the kubelet's probes cannot reach it", addr)
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	_, defPort, err := net.SplitHostPort(config.Defaults.HTTP)
	require.NoError(t, err)
	require.Equal(t, defPort, port, "the documented port, that of the default %s", config.Defaults.HTTP)
	http := containerPort(t, *c, "http")
	require.Equal(t, port, fmt.Sprint(http.ContainerPort), "container port http is the one refresher listens on (%s)", addr)

	require.NotEmpty(t, cfg.TokensOf(config.RoleAct), "a token of role act: without one the API is read-only")
	require.Contains(t, slices.Collect(maps.Values(cfg.TokensOf(config.RoleRead))), secret[readTokenKey],
		"the Secret's %s, which Prometheus sends, is a token of role read", readTokenKey)
	require.False(t, cfg.HTTPPublicRead, "reads need a token: the dashboard shows row keys, URLs and reasons")
}

// readTokenKey is the Secret key of the token Prometheus sends.
const readTokenKey = "read-token"

// containerPort returns c's port named name.
func containerPort(t *testing.T, c corev1.Container, name string) corev1.ContainerPort {
	t.Helper()
	i := slices.IndexFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == name })
	require.GreaterOrEqual(t, i, 0, "container %s has no port named %s", c.Name, name)
	return c.Ports[i]
}

// TestWorkerAndMigrateConfig loads the configuration of the worker and of
// migrate as their pods would: the worker's --kind is a configured kind,
// and migrate reaches the Secret's database.
func TestWorkerAndMigrateConfig(t *testing.T) {
	m := loadManifests(t)
	secret := secretValues(t, m)

	p, c := m.podRunning(t, workerCmd)
	cfg, err := loadAs(t, m, p, *c, secret)
	require.NoError(t, err, "the worker's configuration")
	i := slices.Index(c.Args, "--kind")
	require.True(t, i > 0 && i+1 < len(c.Args), "%s: --kind names the kind whose jobs to do", p.owner)
	_, err = cfg.Kind(c.Args[i+1])
	require.NoError(t, err, "%s: --kind", p.owner)
	require.Equal(t, secret["redis-url"], cfg.Redis, "%s: the Secret's Redis", p.owner)

	p, c = m.podRunning(t, migrateCmd)
	cfg, err = loadAs(t, m, p, *c, secret)
	require.NoError(t, err, "migrate's configuration")
	require.Equal(t, secret["database-url"], cfg.Database, "%s: the Secret's database", p.owner)
}
