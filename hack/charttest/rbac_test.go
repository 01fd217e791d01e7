package charttest

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/dynwatch/dynwatch/discovery"
	"github.com/dynwatch/dynwatch/plan"
	"github.com/dynwatch/dynwatch/rbac"
)

// rbacKinds are the kinds `dynwatch rbac` prints.
var rbacKinds = []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}

// dynwatchRBAC is what `dynwatch rbac --config FILE --namespace dynwatch
// --service-account dynwatch` prints for config (the same calls as the
// command), by key, each object cut to what RBAC means (see rbacShape).
func dynwatchRBAC(t *testing.T, config string) map[string]string {
	t.Helper()
	file, err := plan.Parse("config.yaml", []byte(config))
	if err != nil {
		t.Fatalf("the rendered config does not load: %v\n%s", err, config)
	}
	grants, err := rbac.Grants(file, nil)
	if err != nil {
		t.Fatalf("dynwatch rbac: %v", err)
	}
	out := rbac.Output{SA: rbac.ServiceAccount{Namespace: namespace, Name: release}, Source: "config.yaml"}
	if le := file.Config.LeaderElection; le != nil {
		out.Lease = &rbac.ServiceAccount{Namespace: le.Namespace, Name: le.Name}
		if sh := file.Config.Shards; sh != nil {
			out.LeaseShards = sh.Count
		}
	}
	var b bytes.Buffer
	if err := rbac.WriteYAML(&b, grants, out); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, doc := range strings.Split(b.String(), "\n---\n") {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		want[key(u)] = rbacShape(t, u)
	}
	return want
}

// rbacShape is an RBAC object as JSON without what the chart adds (labels):
// its kind, name, namespace, rules, roleRef and subjects.
func rbacShape(t *testing.T, u *unstructured.Unstructured) string {
	t.Helper()
	m := map[string]any{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(), "name": u.GetName(), "namespace": u.GetNamespace()}
	for _, f := range []string{"rules", "roleRef", "subjects"} {
		if v, ok := u.Object[f]; ok {
			m[f] = v
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkRBAC compares the rendering's RBAC objects with what `dynwatch rbac`
// prints for the rendered config: the same objects, no more, no fewer.
func checkRBAC(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	config := renderedConfig(t, objs)
	want := dynwatchRBAC(t, config)
	got := map[string]string{}
	for _, u := range objs {
		if slices.Contains(rbacKinds, u.GetKind()) {
			got[key(u)] = rbacShape(t, u)
		}
	}
	for k, w := range want {
		switch g, ok := got[k]; {
		case !ok:
			t.Errorf("the chart lacks %s, which dynwatch rbac prints: %s", k, w)
		case g != w:
			t.Errorf("%s differs from dynwatch rbac:\n chart %s\n  want %s", k, g, w)
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("the chart has %s, which dynwatch rbac does not print: %s", k, g)
		}
	}
}

const (
	// nsConfig has rules on namespaces (from defaults and their own), an
	// explicit empty list (every namespace), the core group, a CRD's group,
	// and a resource two rules select.
	nsConfig = `apiVersion: dynwatch/v1alpha1
defaults:
  namespaces: [staging, prod]
actions: [{name: out, log: {}}]
rules:
  - name: config
    resources: [{group: "", resource: configmaps}, {group: "", resource: secrets}]
    actions: [out]
  - name: apps
    namespaces: [prod]
    resources: [{group: apps, resource: deployments}, {group: apps, resource: statefulsets}, {group: "", resource: configmaps}]
    actions: [out]
  - name: widgets-everywhere
    namespaces: []
    resources: [{group: example.com, resource: widgets}, {group: apps, resource: deployments, version: v1}]
    actions: [out]
`
	// leConfig has leader election in it: the chart refuses it (the values set it).
	leConfig = `apiVersion: dynwatch/v1alpha1
leaderElection: {namespace: dynwatch}
actions: [{name: out, log: {}}]
rules: [{name: cms, resources: [{group: "", resource: configmaps}], actions: [out]}]
`
	globConfig = `apiVersion: dynwatch/v1alpha1
actions: [{name: out, log: {}}]
rules: [{name: crds, resources: [{group: "*.example.com", resource: widgets}], actions: [out]}]
`
	kindConfig = `apiVersion: dynwatch/v1alpha1
actions: [{name: out, log: {}}]
rules: [{name: by-kind, resources: [{kind: Deployment}], actions: [out]}]
`
)

// rbacRenderings are configs whose RBAC is not the default's: each is
// compared with dynwatch rbac and applied to the API server (TestDryRun).
var rbacRenderings = []values{
	{file: configValues(nsConfig)},
	{file: configValues(nsConfig), set: "leaderElection.enabled=true,replicas=3,leaderElection.leaseDuration=30s"},
	{file: configValues(nsConfig), set: "shards.count=2,shards.by=namespace,state.enabled=true"},
	{file: configValues(nsConfig), set: "shards.count=3,leaderElection.enabled=true,state.enabled=true"},
}

// The chart's RBAC is dynwatch rbac's for configs with Roles per namespace,
// cluster-wide rules and leader election (the renderings check the defaults).
func TestRBACMatchesDynwatchRBAC(t *testing.T) {
	for _, v := range rbacRenderings {
		t.Run(v.String(), func(t *testing.T) {
			objs := mustRender(t, v)
			checkRendering(t, objs)
			roles := map[string]bool{}
			for _, u := range ofKind(objs, "Role") {
				roles[u.GetNamespace()+"/"+u.GetName()] = true
			}
			if !roles["prod/dynwatch"] || !roles["staging/dynwatch"] {
				t.Errorf("want Roles in prod and staging, got %v", roles)
			}
		})
	}
}

// A rule with namespaces on a built-in cluster-scoped resource (nodes) is
// watched cluster-wide by run, so the chart grants it in the ClusterRole, as
// dynwatch rbac does; a namespaced one in the rule's namespace.
func TestClusterScopedResourceInNamespacedRule(t *testing.T) {
	cfg := "apiVersion: dynwatch/v1alpha1\ndefaults: {namespaces: [prod]}\nactions: [{name: out, log: {}}]\n" +
		"rules: [{name: nodes, resources: [{group: \"\", resource: nodes}, {group: \"\", resource: configmaps}], actions: [out]}]\n"
	objs := mustRender(t, values{file: configValues(cfg)})
	checkRBAC(t, objs)
	b, _ := one(t, objs, "ClusterRole").MarshalJSON()
	if !strings.Contains(string(b), `"nodes"`) {
		t.Errorf("nodes (cluster-scoped) not granted cluster-wide; ClusterRole: %s", b)
	}
	r, _ := one(t, objs, "Role").MarshalJSON()
	if strings.Contains(string(r), `"nodes"`) || !strings.Contains(string(r), `"configmaps"`) {
		t.Errorf("the Role in prod: %s, want configmaps and no nodes", r)
	}
}

// The chart's list of built-in cluster-scoped resources is dynwatch's.
func TestChartClusterScopedListIsDiscoverys(t *testing.T) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	ch.Templates = append(ch.Templates, &chart.File{Name: "templates/cluster-scoped.txt", Data: []byte(`{{ include "dynwatch.clusterScoped" . }}`)})
	rv, err := chartutil.ToRenderValues(ch, map[string]any{}, chartutil.ReleaseOptions{Name: release, Namespace: namespace}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Render(ch, rv)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(files[ch.Name()+"/templates/cluster-scoped.txt"]), "\n")
	var want []string
	for _, b := range discovery.BuiltinClusterScoped {
		want = append(want, b.Group+"/"+b.Resource)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the chart's dynwatch.clusterScoped:\n%v\ndiscovery.BuiltinClusterScoped:\n%v", got, want)
	}
}
