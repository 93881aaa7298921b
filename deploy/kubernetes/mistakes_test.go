package kubernetes

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// TestChecksCatchMistakes makes each check of these tests fail on a copy of
// the manifests with one mistake in it, so that a check that could not
// fail is found.
func TestChecksCatchMistakes(t *testing.T) {
	m := loadManifests(t)
	p, c := m.podRunning(t, runCmd)
	secret := strongTokens(t, secretValues(t, m), tokenKeys(t, *c))
	cfg, err := loadAs(t, m, p, *c, secret)
	require.NoError(t, err)
	_, port, err := net.SplitHostPort(cfg.HTTPAddr())
	require.NoError(t, err)
	up, down := operatorHandlers(t, cfg)
	require.Empty(t, checkProbes(*c, port, up, down), "the manifests as they are pass")
	require.Empty(t, checkEnv(p.owner, *c))
	require.Empty(t, restricted(p))

	probes := map[string]func(*corev1.Container){
		"readiness on a path that is not served": func(c *corev1.Container) { c.ReadinessProbe.HTTPGet.Path = "/ready" },
		"readiness on /healthz, which ignores the database": func(c *corev1.Container) {
			c.ReadinessProbe.HTTPGet.Path = "/healthz"
		},
		"liveness on /readyz, which fails with the database": func(c *corev1.Container) { c.LivenessProbe.HTTPGet.Path = "/readyz" },
		"liveness on /metrics, which needs a token":          func(c *corev1.Container) { c.LivenessProbe.HTTPGet.Path = "/metrics" },
		"a probe on another port":                            func(c *corev1.Container) { c.LivenessProbe.HTTPGet.Port = intstr.FromInt32(8080) },
		"a probe over HTTPS":                                 func(c *corev1.Container) { c.ReadinessProbe.HTTPGet.Scheme = corev1.URISchemeHTTPS },
		"no readiness probe":                                 func(c *corev1.Container) { c.ReadinessProbe = nil },
	}
	for name, mistake := range probes {
		bad := *c.DeepCopy()
		mistake(&bad)
		require.NotEmpty(t, checkProbes(bad, port, up, down), "checkProbes misses %s", name)
	}

	envs := map[string]func(*corev1.Container){
		"a misspelled variable": func(c *corev1.Container) { c.Env[0].Name = "REFRESHER_DATABSE" },
		"$(NAME) before NAME": func(c *corev1.Container) {
			c.Env = append([]corev1.EnvVar{{Name: "REFRESHER_API_TOKENS", Value: "{a: $(API_TOKEN_ACT)}"}}, c.Env...)
		},
		"a helper variable nobody uses": func(c *corev1.Container) {
			c.Env = append(c.Env, corev1.EnvVar{Name: "API_TOKEN_OTHER", Value: "x"})
		},
	}
	for name, mistake := range envs {
		bad := *c.DeepCopy()
		mistake(&bad)
		require.NotEmpty(t, checkEnv(p.owner, bad), "checkEnv misses %s", name)
	}

	pods := map[string]func(*corev1.PodSpec){
		"root":                 func(s *corev1.PodSpec) { s.SecurityContext.RunAsNonRoot = ptr.To(false) },
		"no seccomp profile":   func(s *corev1.PodSpec) { s.SecurityContext.SeccompProfile = nil },
		"a writable root":      func(s *corev1.PodSpec) { s.Containers[0].SecurityContext.ReadOnlyRootFilesystem = ptr.To(false) },
		"privilege escalation": func(s *corev1.PodSpec) { s.Containers[0].SecurityContext.AllowPrivilegeEscalation = nil },
		"a capability kept": func(s *corev1.PodSpec) {
			s.Containers[0].SecurityContext.Capabilities.Drop = []corev1.Capability{"NET_RAW"}
		},
		"a capability added": func(s *corev1.PodSpec) {
			s.Containers[0].SecurityContext.Capabilities.Add = []corev1.Capability{"NET_ADMIN"}
		},
		"the service account token": func(s *corev1.PodSpec) { s.AutomountServiceAccountToken = nil },
	}
	for name, mistake := range pods {
		bad := p
		bad.spec = p.spec.DeepCopy()
		mistake(bad.spec)
		require.NotEmpty(t, restricted(bad), "restricted misses %s", name)
	}
}
