package kubernetes

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
)

// The subcommands the pods run (the first argument).
const (
	runCmd     = "run"
	workerCmd  = "worker"
	migrateCmd = "migrate"
)

// pod is one pod template of the manifests and what runs it.
type pod struct {
	owner    string // "Deployment refresher", "Job refresher-migrate"
	labels   map[string]string
	spec     *corev1.PodSpec
	replicas int32 // of a Deployment; 0 for a Job
}

// pods returns every pod template: the Deployments' and the Jobs'.
func (m *manifests) pods() []pod {
	var out []pod
	for name, d := range m.deployments {
		out = append(out, pod{"Deployment " + name, d.Spec.Template.Labels, &d.Spec.Template.Spec, ptr.Deref(d.Spec.Replicas, 1)})
	}
	for name, j := range m.jobs {
		out = append(out, pod{"Job " + name, j.Spec.Template.Labels, &j.Spec.Template.Spec, 0})
	}
	slices.SortFunc(out, func(a, b pod) int { return strings.Compare(a.owner, b.owner) })
	return out
}

// podRunning returns the one pod whose container runs `refresher sub`, and
// that container.
func (m *manifests) podRunning(t *testing.T, sub string) (pod, *corev1.Container) {
	t.Helper()
	var found []pod
	var c *corev1.Container
	for _, p := range m.pods() {
		for i := range p.spec.Containers {
			if args := p.spec.Containers[i].Args; len(args) > 0 && args[0] == sub {
				found, c = append(found, p), &p.spec.Containers[i]
			}
		}
	}
	require.Len(t, found, 1, "one container runs `refresher %s`", sub)
	return found[0], c
}

// TestPodsRunTheImage: one image for every container, which runs
// `refresher run`, `worker` and `migrate` (the Dockerfile's ENTRYPOINT is
// the binary, so args are its command line).
func TestPodsRunTheImage(t *testing.T) {
	t.Parallel()
	m := loadManifests(t)
	var image string
	for _, p := range m.pods() {
		require.Len(t, p.spec.Containers, 1, "%s: one container", p.owner)
		require.Empty(t, p.spec.InitContainers, "%s", p.owner)
		c := p.spec.Containers[0]
		require.Empty(t, c.Command, "%s: the image's entrypoint is the binary; set args only", p.owner)
		if image == "" {
			image = c.Image
		}
		require.Equal(t, image, c.Image, "%s: every pod runs the one refresher image", p.owner)
	}
	for _, sub := range []string{runCmd, workerCmd, migrateCmd} {
		m.podRunning(t, sub)
	}
	run, _ := m.podRunning(t, runCmd)
	require.GreaterOrEqual(t, run.replicas, int32(2), "%s: two replicas or more, so that one runs while another restarts", run.owner)
}

// TestPodsAreRestricted checks the restricted security context of every
// pod (the Pod Security Standard "restricted", and a read-only root
// filesystem): the binary writes no file and needs no privilege.
func TestPodsAreRestricted(t *testing.T) {
	t.Parallel()
	m := loadManifests(t)
	for _, p := range m.pods() {
		for _, msg := range restricted(p) {
			t.Error(msg)
		}
	}
}

// restricted lists what is not restricted in p.
func restricted(p pod) []string {
	var bad []string
	no := func(format string, args ...any) { bad = append(bad, p.owner+": "+fmt.Sprintf(format, args...)) }
	s := p.spec
	if psc := s.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		no("securityContext.runAsNonRoot: true")
	} else if psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		no("securityContext.runAsUser: the image's nonroot user, 65532")
	}
	if psc := s.SecurityContext; psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		no("securityContext.seccompProfile.type: RuntimeDefault")
	}
	if s.AutomountServiceAccountToken == nil || *s.AutomountServiceAccountToken {
		no("automountServiceAccountToken: false (refresher never calls the Kubernetes API)")
	}
	if s.HostNetwork || s.HostPID || s.HostIPC {
		no("no host network, PID or IPC namespace")
	}
	for _, c := range s.Containers {
		sc := c.SecurityContext
		switch {
		case sc == nil:
			no("container %s: no securityContext", c.Name)
			continue
		case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
			no("container %s: allowPrivilegeEscalation: false", c.Name)
		case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
			no("container %s: readOnlyRootFilesystem: true", c.Name)
		case sc.Privileged != nil && *sc.Privileged:
			no("container %s: not privileged", c.Name)
		case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0:
			no("container %s: capabilities: {drop: [ALL]} and none added", c.Name)
		}
	}
	return bad
}

// TestReferencesResolve: every Secret key, ConfigMap and --config path a
// pod names exists in the manifests.
func TestReferencesResolve(t *testing.T) {
	t.Parallel()
	m := loadManifests(t)
	for _, p := range m.pods() {
		for _, c := range p.spec.Containers {
			for _, e := range c.Env {
				if e.ValueFrom == nil {
					continue
				}
				ref := e.ValueFrom.SecretKeyRef
				require.NotNil(t, ref, "%s: env %s: only Secret keys are read", p.owner, e.Name)
				s, ok := m.secrets[ref.Name]
				require.True(t, ok, "%s: env %s names the Secret %q, which the manifests lack", p.owner, e.Name, ref.Name)
				_, ok = s.StringData[ref.Key]
				require.True(t, ok, "%s: env %s names the key %q of the Secret %s, which it lacks", p.owner, e.Name, ref.Key, ref.Name)
			}
			path, file := configFile(t, m, p, c)
			require.NotEmpty(t, file, "%s: --config %s", p.owner, path)
		}
	}
}

// configFile returns the --config path of c and the text of the ConfigMap
// key mounted there.
func configFile(t *testing.T, m *manifests, p pod, c corev1.Container) (string, string) {
	t.Helper()
	i := slices.Index(c.Args, "--config")
	require.True(t, i > 0 && i+1 < len(c.Args), "%s: args %v: --config names the mounted configuration", p.owner, c.Args)
	path := c.Args[i+1]
	for _, vm := range c.VolumeMounts {
		key, under := strings.CutPrefix(path, vm.MountPath+"/")
		if !under || vm.SubPath != "" {
			continue
		}
		require.True(t, vm.ReadOnly, "%s: mount %s is read-only", p.owner, vm.MountPath)
		for _, v := range p.spec.Volumes {
			if v.Name != vm.Name || v.ConfigMap == nil {
				continue
			}
			cm, ok := m.configMaps[v.ConfigMap.Name]
			require.True(t, ok, "%s: volume %s names the ConfigMap %q, which the manifests lack", p.owner, v.Name, v.ConfigMap.Name)
			text, ok := cm.Data[key]
			require.True(t, ok, "%s: --config %s: the ConfigMap %s has no key %q", p.owner, path, cm.Name, key)
			return path, text
		}
	}
	t.Fatalf("%s: --config %s: no ConfigMap is mounted there", p.owner, path)
	return "", ""
}

// TestSelectors: each Deployment selects its own pods; the Service and the
// service's PodDisruptionBudget select the pods of `refresher run` and no
// other; the worker's budget those of `refresher worker`.
func TestSelectors(t *testing.T) {
	t.Parallel()
	m := loadManifests(t)
	for name, d := range m.deployments {
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		require.NoError(t, err, "Deployment %s", name)
		require.True(t, sel.Matches(labels.Set(d.Spec.Template.Labels)), "Deployment %s: the selector matches the template's labels", name)
	}
	runPod, runC := m.podRunning(t, runCmd)
	workerPod, _ := m.podRunning(t, workerCmd)
	selects := func(sel labels.Selector) []string {
		var out []string
		for _, p := range m.pods() {
			if sel.Matches(labels.Set(p.labels)) {
				out = append(out, p.owner)
			}
		}
		return out
	}
	require.Len(t, m.services, 1)
	for name, s := range m.services {
		require.Equal(t, []string{runPod.owner}, selects(labels.SelectorFromSet(s.Spec.Selector)), "Service %s selects the service's pods only", name)
		for _, sp := range s.Spec.Ports {
			require.True(t, slices.ContainsFunc(runC.Ports, func(cp corev1.ContainerPort) bool {
				return cp.Name == sp.TargetPort.String() || fmt.Sprint(cp.ContainerPort) == sp.TargetPort.String()
			}), "Service %s: targetPort %s is a port of the container %s", name, sp.TargetPort.String(), runC.Name)
		}
	}
	var budgeted []string
	for name, b := range m.pdbs {
		sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
		require.NoError(t, err, "PodDisruptionBudget %s", name)
		var got []pod
		for _, p := range m.pods() {
			if sel.Matches(labels.Set(p.labels)) {
				got = append(got, p)
			}
		}
		require.Len(t, got, 1, "PodDisruptionBudget %s selects the pods of one Deployment", name)
		budgeted = append(budgeted, got[0].owner)
		// A budget that allows no eviction blocks every node drain.
		if b.Spec.MinAvailable != nil {
			require.Less(t, b.Spec.MinAvailable.IntValue(), int(got[0].replicas), "PodDisruptionBudget %s: minAvailable below the replicas of %s, or no node can be drained", name, got[0].owner)
		}
		if b.Spec.MaxUnavailable != nil {
			require.Positive(t, b.Spec.MaxUnavailable.IntValue(), "PodDisruptionBudget %s: maxUnavailable above 0, or no node can be drained", name)
		}
	}
	slices.Sort(budgeted)
	require.Equal(t, []string{runPod.owner, workerPod.owner}, budgeted, "one budget for the service, one for the workers")
}
