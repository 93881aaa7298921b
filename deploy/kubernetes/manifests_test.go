// Package kubernetes holds the Kubernetes manifests of refresher (the
// service, the reference worker, the migrate Job, their configuration,
// Secret, Service and disruption budgets) and the tests that check them.
//
// There is no cluster on the development machines or in CI, so the tests
// decode every manifest strictly into the Kubernetes API types, the way the
// API server does (an unknown or misspelled field fails), and check the
// manifests against the code: the environment variables against those the
// config package reads, the configuration against config.Load, the probes
// against what the operator's HTTP server answers, the grace periods
// against how long a drain can take.
package kubernetes

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
)

// kustomizationFile lists the manifests (kubectl apply -k).
const kustomizationFile = "kustomization.yaml"

// kustomization is the part of kustomization.yaml the manifests use; a key
// outside it fails the test, so that it is added here and checked.
type kustomization struct {
	APIVersion string   `yaml:"apiVersion"`
	Kind       string   `yaml:"kind"`
	Resources  []string `yaml:"resources"`
}

// manifests is every object of the directory, by kind and name.
type manifests struct {
	deployments map[string]*appsv1.Deployment
	jobs        map[string]*batchv1.Job
	configMaps  map[string]*corev1.ConfigMap
	secrets     map[string]*corev1.Secret
	services    map[string]*corev1.Service
	pdbs        map[string]*policyv1.PodDisruptionBudget
}

// decoder decodes YAML into the API types of the kinds the manifests use,
// strictly: an unknown field, a field in the wrong case or a duplicate one
// is an error, as with kubectl's server-side field validation.
var decoder = func() runtime.Decoder {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme, policyv1.AddToScheme} {
		if err := add(scheme); err != nil {
			panic(err)
		}
	}
	return json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme, scheme, json.SerializerOptions{Yaml: true, Strict: true})
}()

// decodeAll decodes each YAML document of data.
func decodeAll(data []byte) ([]runtime.Object, error) {
	r := k8syaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []runtime.Object
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(stripYAMLComments(doc))) == 0 {
			continue
		}
		obj, _, err := decoder.Decode(doc, nil, nil)
		if err != nil {
			return nil, err
		}
		objs = append(objs, obj)
	}
}

// stripYAMLComments drops whole-line comments, to tell a document of
// comments only from one with content.
func stripYAMLComments(doc []byte) []byte {
	var out []byte
	for line := range bytes.Lines(doc) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out = append(out, line...)
		}
	}
	return out
}

// add files obj under its kind and name; a second object of the same kind
// and name is an error.
func (m *manifests) add(obj runtime.Object) error {
	var dup bool
	switch o := obj.(type) {
	case *appsv1.Deployment:
		dup = put(m.deployments, o.Name, o)
	case *batchv1.Job:
		dup = put(m.jobs, o.Name, o)
	case *corev1.ConfigMap:
		dup = put(m.configMaps, o.Name, o)
	case *corev1.Secret:
		dup = put(m.secrets, o.Name, o)
	case *corev1.Service:
		dup = put(m.services, o.Name, o)
	case *policyv1.PodDisruptionBudget:
		dup = put(m.pdbs, o.Name, o)
	default:
		return fmt.Errorf("%T: a kind these tests do not check; add it to manifests", obj)
	}
	if dup {
		return fmt.Errorf("%T: two objects of one name", obj)
	}
	return nil
}

func put[T any](m map[string]T, name string, v T) (dup bool) {
	_, dup = m[name]
	m[name] = v
	return dup
}

// loadManifests decodes every file kustomization.yaml lists, and checks that
// it lists every YAML file of the directory.
func loadManifests(t *testing.T) *manifests {
	t.Helper()
	m, err := readManifests(".", nil)
	require.NoError(t, err)
	return m
}

// readManifests reads the manifests of dir; edit, when not nil, changes a
// file's text before it is decoded (the tests' own mistakes).
func readManifests(dir string, edit func(file string, text []byte) []byte) (*manifests, error) {
	raw, err := os.ReadFile(filepath.Join(dir, kustomizationFile))
	if err != nil {
		return nil, err
	}
	var k kustomization
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&k); err != nil {
		return nil, fmt.Errorf("%s: %w", kustomizationFile, err)
	}
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		return nil, fmt.Errorf("%s: apiVersion %q, kind %q: want kustomize.config.k8s.io/v1beta1, Kustomization", kustomizationFile, k.APIVersion, k.Kind)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var listed []string
	for _, f := range files {
		if name := filepath.Base(f); name != kustomizationFile {
			listed = append(listed, name)
		}
	}
	if want := slices.Sorted(slices.Values(k.Resources)); !slices.Equal(listed, want) {
		return nil, fmt.Errorf("%s lists %v, the directory holds %v: list every manifest, and only those", kustomizationFile, want, listed)
	}
	m := &manifests{deployments: map[string]*appsv1.Deployment{}, jobs: map[string]*batchv1.Job{},
		configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{},
		services: map[string]*corev1.Service{}, pdbs: map[string]*policyv1.PodDisruptionBudget{}}
	for _, name := range listed {
		text, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		if edit != nil {
			text = edit(name, text)
		}
		objs, err := decodeAll(text)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(objs) == 0 {
			return nil, fmt.Errorf("%s: no object", name)
		}
		for _, obj := range objs {
			if err := m.add(obj); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	return m, nil
}

func TestManifestsDecodeStrictly(t *testing.T) {
	t.Parallel()
	m := loadManifests(t)
	require.NotEmpty(t, m.deployments)
	require.NotEmpty(t, m.jobs)
	require.NotEmpty(t, m.configMaps)
	require.NotEmpty(t, m.secrets)
	require.NotEmpty(t, m.services)
	require.NotEmpty(t, m.pdbs)
}

// TestStrictDecodingCatchesMistakes makes sure the decoding above would
// catch a wrong field: each mistake, made in a copy of the text, fails.
func TestStrictDecodingCatchesMistakes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ file, old, new, want string }{
		{"service-deployment.yaml", "readinessProbe:", "readinesProbe:", `unknown field "spec.template.spec.containers[0].readinesProbe"`},
		{"service-deployment.yaml", "containerPort:", "containerport:", `unknown field "spec.template.spec.containers[0].ports[0].containerport"`},
		{"service.yaml", "targetPort: http", "targetPort: http\n      targetPort: 9090", `key "targetPort" already set in map`},
		{"pdb.yaml", "minAvailable:", "minAvaliable:", `unknown field "spec.minAvaliable"`},
		{"migrate-job.yaml", "apiVersion: batch/v1", "apiVersion: apps/v1", `no kind "Job" is registered for version "apps/v1"`},
	} {
		_, err := readManifests(".", func(file string, text []byte) []byte {
			if file != c.file {
				return text
			}
			require.Contains(t, string(text), c.old, "%s no longer holds the text this case changes", file)
			return []byte(strings.Replace(string(text), c.old, c.new, 1))
		})
		require.ErrorContains(t, err, c.want, "%s with %q for %q", c.file, c.new, c.old)
	}
}
