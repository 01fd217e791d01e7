package charttest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"
	"helm.sh/helm/v3/pkg/strvals"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// chartDir is the chart under test.
var chartDir = filepath.Join("..", "..", "charts", "dynwatch")

// release and namespace are the test's `helm install dynwatch -n dynwatch`.
const (
	release   = "dynwatch"
	namespace = "dynwatch"
)

// values are a rendering's values: `--set` strings (as helm parses them) over
// a values file (YAML), and `--set-file` over both (KEY=PATH: the value is
// the file's text, a string); any may be empty.
type values struct {
	file    string
	set     string
	setFile string
}

func (v values) String() string {
	var parts []string
	if v.set != "" {
		parts = append(parts, "--set "+v.set)
	}
	if v.file != "" {
		parts = append(parts, "-f <values>")
	}
	if v.setFile != "" {
		parts = append(parts, "--set-file "+v.setFile)
	}
	if len(parts) == 0 {
		return "defaults"
	}
	return strings.Join(parts, " ")
}

// parse merges them as `helm install -f FILE --set SET --set-file KEY=PATH` does.
func (v values) parse() (map[string]any, error) {
	vals := map[string]any{}
	if v.file != "" {
		file, err := chartutil.ReadValues([]byte(v.file))
		if err != nil {
			return nil, fmt.Errorf("values file: %w", err)
		}
		vals = file.AsMap()
	}
	if v.set != "" {
		if err := strvals.ParseInto(v.set, vals); err != nil {
			return nil, fmt.Errorf("--set %s: %w", v.set, err)
		}
	}
	if v.setFile != "" {
		// helm's own reader for --set-file: the file's text as a string.
		read := func(rs []rune) (any, error) {
			b, err := os.ReadFile(string(rs))
			return string(b), err
		}
		if err := strvals.ParseIntoFile(v.setFile, vals, read); err != nil {
			return nil, fmt.Errorf("--set-file %s: %w", v.setFile, err)
		}
	}
	return vals, nil
}

// renderFiles renders the chart as `helm install --dry-run` would, the
// values checked against values.schema.json first: each template's text by
// its name (dynwatch/templates/NOTES.txt among them).
func renderFiles(v values) (map[string]string, error) {
	vals, err := v.parse()
	if err != nil {
		return nil, err
	}
	ch, err := loader.Load(chartDir)
	if err != nil {
		return nil, fmt.Errorf("load chart: %w", err)
	}
	opts := chartutil.ReleaseOptions{Name: release, Namespace: namespace, Revision: 1, IsInstall: true}
	rv, err := chartutil.ToRenderValuesWithSchemaValidation(ch, vals, opts, chartutil.DefaultCapabilities, false)
	if err != nil {
		return nil, err
	}
	return engine.Render(ch, rv)
}

// renderChart renders the chart (renderFiles) and returns its objects, hooks
// included, in the order of their files.
func renderChart(v values) ([]*unstructured.Unstructured, error) {
	files, err := renderFiles(v)
	if err != nil {
		return nil, err
	}
	var names []string
	for name := range files {
		if strings.HasSuffix(name, ".yaml") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var objs []*unstructured.Unstructured
	for _, name := range names {
		docs := releaseutil.SplitManifests(files[name])
		keys := make([]string, 0, len(docs))
		for k := range docs {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b string) int { return manifestIndex(a) - manifestIndex(b) })
		for _, k := range keys {
			j, err := yaml.YAMLToJSON([]byte(docs[k]))
			if err != nil {
				return nil, fmt.Errorf("%s: %w\n%s", name, err, docs[k])
			}
			if string(j) == "null" {
				continue
			}
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(j); err != nil {
				return nil, fmt.Errorf("%s: %w\n%s", name, err, docs[k])
			}
			objs = append(objs, u)
		}
	}
	return objs, nil
}

// manifestIndex is N of SplitManifests' key "manifest-N".
func manifestIndex(key string) int {
	var n int
	fmt.Sscanf(key, "manifest-%d", &n)
	return n
}

// mustRender renders v or fails the test.
func mustRender(t *testing.T, v values) []*unstructured.Unstructured {
	t.Helper()
	objs, err := renderChart(v)
	if err != nil {
		t.Fatalf("render %s: %v", v, err)
	}
	return objs
}

func key(u *unstructured.Unstructured) string {
	return u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
}

// ofKind returns the objects of kind.
func ofKind(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, u := range objs {
		if u.GetKind() == kind {
			out = append(out, u)
		}
	}
	return out
}

// one returns the one object of kind, or fails.
func one(t *testing.T, objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	t.Helper()
	got := ofKind(objs, kind)
	if len(got) != 1 {
		t.Fatalf("%d objects of kind %s, want 1", len(got), kind)
	}
	return got[0]
}

// workload returns the Deployment or StatefulSet of the rendering.
func workload(t *testing.T, objs []*unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	var w []*unstructured.Unstructured
	for _, u := range objs {
		if u.GetKind() == "Deployment" || u.GetKind() == "StatefulSet" {
			w = append(w, u)
		}
	}
	if len(w) != 1 {
		t.Fatalf("%d workloads, want 1", len(w))
	}
	return w[0]
}

// renderedConfig is the config file the pods run: the config.yaml of the
// ConfigMap named after the release.
func renderedConfig(t *testing.T, objs []*unstructured.Unstructured) string {
	t.Helper()
	return configOf(t, named(t, objs, "ConfigMap", release))
}

// configOf is a ConfigMap's config.yaml.
func configOf(t *testing.T, cm *unstructured.Unstructured) string {
	t.Helper()
	s, found, _ := unstructured.NestedString(cm.Object, "data", "config.yaml")
	if !found {
		t.Fatalf("the ConfigMap %s has no config.yaml", cm.GetName())
	}
	return s
}

// named returns the object of kind with that name, or fails.
func named(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, u := range ofKind(objs, kind) {
		if u.GetName() == name {
			return u
		}
	}
	t.Fatalf("no %s named %s", kind, name)
	return nil
}
