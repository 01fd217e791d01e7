package charttest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/dynwatch/dynwatch/plan"
)

// rendering is one `helm install` of the chart and what it must hold beyond
// what every rendering holds (see checkRendering).
type rendering struct {
	values
	check func(t *testing.T, objs []*unstructured.Unstructured)
}

// renderings are the installs that the chart promises to work: each is
// linted, checked and applied to the API server with a server-side dry run.
var renderings = []rendering{
	{values: values{}, check: func(t *testing.T, objs []*unstructured.Unstructured) {
		w := workload(t, objs)
		if w.GetKind() != "Deployment" || replicas(w) != 1 {
			t.Errorf("defaults: %s with %d replicas, want a Deployment with 1", w.GetKind(), replicas(w))
		}
		if len(ofKind(objs, "Role")) != 0 {
			t.Errorf("defaults: Roles without leader election or namespaces: %v", ofKind(objs, "Role"))
		}
	}},
	{values: values{set: "state.enabled=true"}, check: func(t *testing.T, objs []*unstructured.Unstructured) {
		w := workload(t, objs)
		claims, _, _ := unstructured.NestedSlice(w.Object, "spec", "volumeClaimTemplates")
		b, _ := json.Marshal(claims)
		if w.GetKind() != "StatefulSet" || !strings.Contains(string(b), `"name":"state"`) || !strings.Contains(string(b), `"storage":"1Gi"`) {
			t.Errorf("state.enabled: %s with claims %s, want a StatefulSet claiming 1Gi as state", w.GetKind(), b)
		}
		pod := podSpecJSON(t, w)
		if !strings.Contains(pod, `{"mountPath":"/var/lib/dynwatch","name":"state"}`) {
			t.Errorf("state.enabled: the state volume is not mounted at state.path's directory: %s", pod)
		}
		if cfg := renderedConfig(t, objs) + "\n"; !strings.Contains(cfg, "state:\n  path: /var/lib/dynwatch/state.db\n") {
			t.Errorf("state.enabled: the config has no state.path:\n%s", cfg)
		}
	}},
	{values: values{set: "shards.count=3"}, check: func(t *testing.T, objs []*unstructured.Unstructured) {
		w := workload(t, objs)
		if w.GetKind() != "StatefulSet" || replicas(w) != 3 {
			t.Errorf("shards.count=3: %s with %d replicas, want a StatefulSet of 3", w.GetKind(), replicas(w))
		}
		if pod := podSpecJSON(t, w); !strings.Contains(pod, `{"name":"POD_NAME","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}}`) {
			t.Errorf("shards.count=3: no POD_NAME from the downward API: %s", pod)
		}
		cfg := renderedConfig(t, objs) + "\n"
		if p, _, _ := unstructured.NestedStringMap(w.Object, "spec", "persistentVolumeClaimRetentionPolicy"); p["whenScaled"] != "Delete" || p["whenDeleted"] != "Retain" {
			t.Errorf("shards.count=3: persistentVolumeClaimRetentionPolicy %v, want whenScaled Delete (a scaled-away shard's state must go), whenDeleted Retain", p)
		}
		if !strings.Contains(cfg, "shards:\n  count: 3\n") || strings.Contains(cfg, "index") {
			t.Errorf("shards.count=3: the config must have shards.count 3 and no index (each pod's comes from POD_NAME):\n%s", cfg)
		}
	}},
	{values: values{set: "shards.count=2,leaderElection.enabled=true"}, check: func(t *testing.T, objs []*unstructured.Unstructured) {
		if w := workload(t, objs); w.GetKind() != "StatefulSet" || replicas(w) != 2 {
			t.Errorf("shards with leaderElection: %s with %d replicas, want a StatefulSet of 2", w.GetKind(), replicas(w))
		}
		cfg := renderedConfig(t, objs) + "\n"
		if !strings.Contains(cfg, "shards:\n  count: 2\n") || !strings.Contains(cfg, "leaderElection:\n  name: dynwatch\n") {
			t.Errorf("shards with leaderElection: the config needs both:\n%s", cfg)
		}
		for _, u := range objs {
			if u.GetKind() == "Role" && u.GetName() == "dynwatch-leader-election" {
				rules, _, _ := unstructured.NestedSlice(u.Object, "rules")
				var got []string
				for _, r := range rules {
					names, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "resourceNames")
					verbs, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "verbs")
					got = append(got, strings.Join(verbs, ",")+" "+strings.Join(names, ","))
				}
				// Update on each shard's Lease, get on any (after a reshard a
				// shard reads the Leases of the set before it), create.
				if want := []string{"update dynwatch-0,dynwatch-1", "get ", "create "}; !slices.Equal(got, want) {
					t.Errorf("shards with leaderElection: the Role's rules (verbs names) are %q, want %q", got, want)
				}
				return
			}
		}
		t.Error("shards with leaderElection: no leader-election Role")
	}},
	{values: values{set: "leaderElection.enabled=true,replicas=2"}, check: func(t *testing.T, objs []*unstructured.Unstructured) {
		w := workload(t, objs)
		if w.GetKind() != "Deployment" || replicas(w) != 2 {
			t.Errorf("leaderElection: %s with %d replicas, want a Deployment with 2", w.GetKind(), replicas(w))
		}
		if cfg := renderedConfig(t, objs) + "\n"; !strings.Contains(cfg, "leaderElection:\n  name: dynwatch\n  namespace: dynwatch\n") {
			t.Errorf("leaderElection: the config has no Lease in the release's namespace:\n%s", cfg)
		}
		if len(ofKind(objs, "Role")) != 1 || len(ofKind(objs, "RoleBinding")) != 1 {
			t.Errorf("leaderElection: want the Lease's Role and RoleBinding")
		}
	}},
	{values: values{setFile: exampleConfig}, check: checkExample},
	{values: values{set: "serviceMonitor.enabled=true,prometheusRule.enabled=true,serviceMonitor.labels.release=kps,prometheusRule.labels.release=kps," +
		"grafanaDashboard.enabled=true,grafanaDashboard.namespace=monitoring"}, check: func(t *testing.T, objs []*unstructured.Unstructured) {
		sm := one(t, objs, "ServiceMonitor")
		sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
		if svc := one(t, objs, "Service"); !labels.SelectorFromSet(sel).Matches(labels.Set(svc.GetLabels())) {
			t.Errorf("the ServiceMonitor selects %v, not the Service (%v)", sel, svc.GetLabels())
		}
		if got := alertNames(t, one(t, objs, "PrometheusRule")); len(got) == 0 {
			t.Error("the PrometheusRule has no alerts")
		}
		// kube-prometheus-stack selects both by release: <its release name>.
		for _, kind := range []string{"ServiceMonitor", "PrometheusRule"} {
			if l := one(t, objs, kind).GetLabels(); l["release"] != "kps" || l["app.kubernetes.io/instance"] != release {
				t.Errorf("%s's labels %v: want release=kps and the chart's own", kind, l)
			}
		}
		if cm := named(t, objs, "ConfigMap", release+"-dashboard"); cm.GetNamespace() != "monitoring" || cm.GetLabels()["grafana_dashboard"] != "1" {
			t.Errorf("the dashboard's ConfigMap is in %q with labels %v, want monitoring and grafana_dashboard=1", cm.GetNamespace(), cm.GetLabels())
		}
	}},
}

func replicas(w *unstructured.Unstructured) int64 {
	n, _, _ := unstructured.NestedInt64(w.Object, "spec", "replicas")
	return n
}

func podSpecJSON(t *testing.T, w *unstructured.Unstructured) string {
	t.Helper()
	pod, _, _ := unstructured.NestedMap(w.Object, "spec", "template", "spec")
	b, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Each rendering holds the RBAC `dynwatch rbac` prints for its config, a pod
// that passes the restricted Pod Security level with probes on the operations
// port, the config's checksum on the pod, a NetworkPolicy for the pods, and
// what its values ask for.
func TestRenderings(t *testing.T) {
	for _, r := range renderings {
		t.Run(r.String(), func(t *testing.T) {
			objs := mustRender(t, r.values)
			checkRendering(t, objs)
			r.check(t, objs)
		})
	}
}

// checkRendering checks what every rendering holds.
func checkRendering(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	checkRBAC(t, objs)
	checkRestricted(t, objs)
	w := workload(t, objs)
	pod := podSpecJSON(t, w)
	for _, want := range []string{`"path":"/healthz","port":"http"`, `"path":"/readyz","port":"http"`, `"containerPort":8080,"name":"http"`,
		`"serviceAccountName":"dynwatch"`, `"requests":{"cpu":"50m","memory":"64Mi"}`, `"readOnlyRootFilesystem":true`} {
		if !strings.Contains(pod, want) {
			t.Errorf("%s's pod lacks %s: %s", w.GetKind(), want, pod)
		}
	}
	cfg := renderedConfig(t, objs)
	if !strings.Contains(cfg+"\n", "server:\n  address: :8080\n") {
		t.Errorf("the config does not serve the operations port the probes use:\n%s", cfg)
	}
	sum := sha256.Sum256([]byte(cfg))
	if pods, _, _ := unstructured.NestedStringMap(w.Object, "spec", "template", "metadata", "annotations"); pods["checksum/config"] != hex.EncodeToString(sum[:]) {
		t.Errorf("the pods' checksum/config is %q, want the sha256 of the ConfigMap's config, %x", pods["checksum/config"], sum)
	}
	checkNetworkPolicy(t, objs)
	sel, _, _ := unstructured.NestedStringMap(one(t, objs, "Service").Object, "spec", "selector")
	if pods, _, _ := unstructured.NestedStringMap(w.Object, "spec", "template", "metadata", "labels"); !labels.SelectorFromSet(sel).Matches(labels.Set(pods)) {
		t.Errorf("the Service selects %v, not the pods (%v)", sel, pods)
	}
}

// checkNetworkPolicy checks that the NetworkPolicy selects the workload's pods
// and admits ingress on the operations port only, from labelled namespaces only.
func checkNetworkPolicy(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	np := one(t, objs, "NetworkPolicy")
	pods, _, _ := unstructured.NestedStringMap(workload(t, objs).Object, "spec", "template", "metadata", "labels")
	sel, _, _ := unstructured.NestedStringMap(np.Object, "spec", "podSelector", "matchLabels")
	if len(sel) == 0 || !labels.SelectorFromSet(sel).Matches(labels.Set(pods)) {
		t.Errorf("the NetworkPolicy selects %v, not the pods (%v)", sel, pods)
	}
	types, _, _ := unstructured.NestedStringSlice(np.Object, "spec", "policyTypes")
	ingress, _, _ := unstructured.NestedSlice(np.Object, "spec", "ingress")
	b, _ := json.Marshal(ingress)
	const want = `[{"from":[{"namespaceSelector":{"matchLabels":{"dynwatch.io/scrape":"true"}}}],"ports":[{"port":8080,"protocol":"TCP"}]}]`
	if !slices.Equal(types, []string{"Ingress"}) || string(b) != want {
		t.Errorf("the NetworkPolicy's ingress (%v) is %s, want %s", types, b, want)
	}
}

// helm lint, strict (warnings fail too), passes for every rendering's values.
func TestLint(t *testing.T) {
	kube, err := chartutil.ParseKubeVersion("v1.37.2")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range renderings {
		t.Run(r.String(), func(t *testing.T) {
			vals, err := r.parse()
			if err != nil {
				t.Fatal(err)
			}
			l := lint.AllWithKubeVersionAndSchemaValidation(chartDir, vals, namespace, kube, false)
			for _, m := range l.Messages {
				if m.Severity >= support.WarningSev {
					t.Errorf("helm lint: %s", m)
				}
			}
		})
	}
}

// A change of the config, and only that, changes the checksum that rolls the pods.
func TestConfigChecksumRollsPods(t *testing.T) {
	sum := func(v values) string {
		pods, _, _ := unstructured.NestedStringMap(workload(t, mustRender(t, v)).Object, "spec", "template", "metadata", "annotations")
		return pods["checksum/config"]
	}
	base := sum(values{})
	if got := sum(values{set: "resources.limits.memory=1Gi"}); got != base {
		t.Errorf("the checksum changed with resources only: %s, was %s", got, base)
	}
	if got := sum(values{set: "config.rules[0].name=other"}); got == base {
		t.Error("the checksum did not change with the config")
	}
	if got := sum(values{set: "opsPort=9090"}); got == base {
		t.Error("the checksum did not change with opsPort, which the config's server.address follows")
	}
}

// A value of the wrong type, or an unknown one, fails before anything renders.
func TestSchemaRejectsWrongValues(t *testing.T) {
	for _, set := range []string{
		"replicas=two",
		"state.enabled=yes",
		"leaderElection.enabled=1",
		"shards.count=-1",
		"shards.by=name",
		"opsPort=http",
		"resources=big",
		"nodeSelector.disk=5",
		"config=5",
		"image.repository=",
		"leaderElection.leaseDuration=15",
		"state.path=state.db",
		"replica=2",
		"serviceMonitor.enabled=on",
		"serviceMonitor.interval=500us",
		"serviceMonitor.interval=1.5s",
		"serviceMonitor.interval=30",
		"config.apiVersion=v1",
		"config.rules=none",
	} {
		t.Run(set, func(t *testing.T) {
			_, err := renderChart(values{set: set})
			if err == nil || !strings.Contains(err.Error(), "schema") {
				t.Errorf("--set %s: %v, want a schema error", set, err)
			}
		})
	}
}

// serviceMonitor.interval takes Prometheus's durations, rendered quoted.
func TestServiceMonitorInterval(t *testing.T) {
	for _, iv := range []string{"30s", "1m", "1d", "1h30m", "250ms"} {
		sm := one(t, mustRender(t, values{set: "serviceMonitor.enabled=true,serviceMonitor.interval=" + iv}), "ServiceMonitor")
		eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
		if len(eps) != 1 || eps[0].(map[string]any)["interval"] != iv {
			t.Errorf("interval %s: endpoints %v", iv, eps)
		}
	}
}

// Values that contradict each other, and configs the chart cannot grant RBAC
// for offline, fail the render with what to do.
func TestChartRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    values
		want string
	}{
		{"replicas without leader election", values{set: "replicas=2"}, "need leaderElection.enabled=true"},
		{"state with leader election", values{set: "state.enabled=true,leaderElection.enabled=true,replicas=2"}, "each pod of the StatefulSet gets its own ReadWriteOnce volume"},
		{"YAML 1.1 words in a string config", values{file: "config: " + quoteYAML(offConfig)}, `config: unquoted [": off"]: Helm reads these words as YAML 1.1 booleans`},
		{"leaderElection in config", values{file: configValues(leConfig)}, "config.leaderElection: set it through the chart's values"},
		{"state in config", values{file: configValues("apiVersion: dynwatch/v1alpha1\nstate: {path: /x}\nactions: [{name: o, log: {}}]\nrules: []\n")}, "config.state"},
		{"a glob selector", values{file: configValues(globConfig)}, `rbac.create: rule crds: selector {"group":"*.example.com","resource":"widgets"} need discovery to resolve`},
		{"a kind selector", values{file: configValues(kindConfig)}, `rbac.create: rule by-kind: selector {"kind":"Deployment"} need discovery`},
		{"config that is no YAML map", values{file: "config: |\n  - a\n  - b\n"}, "config: not a YAML map"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := renderChart(tc.v)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v, want an error with %q", err, tc.want)
			}
		})
	}
}

// The config as a string (--set-file config=rules.yaml) renders as the same
// config as a map, YAML 1.1's `on` included.
func TestConfigAsString(t *testing.T) {
	const rules = "apiVersion: dynwatch/v1alpha1\nactions: [{name: out, log: {}}]\n" +
		"rules:\n  - name: cms\n    resources: [{group: \"\", resource: configmaps}]\n    on: [add, delete]\n    when: [{path: data.mode, op: eq, value: \"off\"}]\n    actions: [out]\n"
	fromString := renderedConfig(t, mustRender(t, values{file: "config: " + quoteYAML(rules)}))
	fromMap := renderedConfig(t, mustRender(t, values{file: configValues(rules)}))
	if fromString != fromMap {
		t.Errorf("as a string:\n%s\nas a map:\n%s", fromString, fromMap)
	}
	file, err := plan.Parse("config.yaml", []byte(fromString))
	if err != nil {
		t.Fatalf("the rendered config does not load: %v\n%s", err, fromString)
	}
	r := file.Rule("cms")
	if r == nil || !strings.Contains(fromString, "\"on\":\n  - add\n  - delete\n") || !strings.Contains(fromString, "value: \"off\"") {
		t.Errorf("`on` or the quoted value did not survive:\n%s", fromString)
	}
}

// offConfig compares a field with the string off, unquoted: dynwatch reads
// YAML 1.2 (a string), Helm YAML 1.1 (false).
const offConfig = "apiVersion: dynwatch/v1alpha1\nactions: [{name: out, log: {}}]\n" +
	"rules:\n  - name: cms\n    resources: [{group: \"\", resource: configmaps}]\n    on: [add]\n    when: [{path: data.mode, op: eq, value: off}]\n    actions: [out]\n"

// A string config (--set-file) never reaches the pods with a meaning changed
// by YAML 1.1: an unquoted off is refused (TestChartRefuses), and quoted it
// stays the string dynwatch compares with.
func TestSetFileKeepsMeaning(t *testing.T) {
	quoted := strings.Replace(offConfig, "value: off", `value: "off"`, 1)
	cfg := renderedConfig(t, mustRender(t, values{file: "config: " + quoteYAML(quoted)}))
	if strings.Contains(cfg, "value: false") || !strings.Contains(cfg, `value: "off"`) {
		t.Errorf("the quoted off lost its meaning:\n%s", cfg)
	}
	for _, ok := range []string{"  note: \"no\" # no: quoted\n", "  # a comment: {\"count\": N, \"on\": off}\n", "  list: [\"yes\", \"n\"]\n", "  name: no-op\n"} {
		doc := strings.Replace(quoted, "actions: [{name: out, log: {}}]", "actions: [{name: out, log: {}}]\nx:\n"+ok, 1)
		if err := renderErr(values{file: "config: " + quoteYAML(doc)}); err != nil && strings.Contains(err.Error(), "YAML 1.1") {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
}

// renderErr is renderChart's error.
func renderErr(v values) error {
	_, err := renderChart(v)
	return err
}

// Without leader election every pod acts, so the Deployment is replaced, not
// rolled (a surge pod would deliver every event a second time); with it the
// standby takes over and a rolling update is right.
func TestDeploymentStrategy(t *testing.T) {
	for _, tc := range []struct {
		set, want string
	}{
		{"", "Recreate"},
		{"leaderElection.enabled=true,replicas=2", ""},
	} {
		w := workload(t, mustRender(t, values{set: tc.set}))
		got, _, _ := unstructured.NestedString(w.Object, "spec", "strategy", "type")
		if got != tc.want {
			t.Errorf("--set %q: strategy %q, want %q", tc.set, got, tc.want)
		}
	}
}

// configValues is a values file whose config is the YAML document doc.
func configValues(doc string) string {
	var m map[string]any
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		panic(err)
	}
	b, err := yaml.Marshal(map[string]any{"config": m})
	if err != nil {
		panic(err)
	}
	return string(b)
}

func quoteYAML(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// exampleConfig is `--set-file config=config.example.yaml`, the README's own
// example.
const exampleConfig = "config=" + "../../config.example.yaml"

// Selectors that need discovery (globs, kinds, no group) fail the render in
// one line that names every one of them and says what to set: exact names,
// or rbac.create=false and `dynwatch rbac --cluster` with this release's
// namespace and ServiceAccount.
func TestSelectorsNeedingDiscoveryFailInOneLine(t *testing.T) {
	cfg := "apiVersion: dynwatch/v1alpha1\nactions: [{name: out, log: {}}]\nrules:\n" +
		"  - {name: globs, resources: [{group: \"*.example.com\", resource: widgets}], actions: [out]}\n" +
		"  - {name: kinds, resources: [{group: \"\", kind: ConfigMap}, {resource: pods}], actions: [out]}\n"
	err := renderErr(values{file: "config: " + quoteYAML(cfg)})
	if err == nil {
		t.Fatal("rendered")
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") {
		t.Errorf("more than one line:\n%s", msg)
	}
	for _, want := range []string{`rule globs: selector {"group":"*.example.com","resource":"widgets"}`, `rule kinds: selector {"group":"","kind":"ConfigMap"}`,
		`rule kinds: selector {"resource":"pods"}`, "--set rbac.create=false", "dynwatch rbac --cluster --config FILE --namespace dynwatch --service-account dynwatch"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error lacks %q: %s", want, msg)
		}
	}
}

// The config the pods get from `--set-file config=config.example.yaml` loads,
// its RBAC is dynwatch rbac's (checkRendering, in TestRenderings), and every
// log action's file, a relative path, resolves against the container's
// working directory to a writable volume (the root file system is
// read-only: anywhere else, run could not open it and the pod would
// crash-loop).
func checkExample(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	file, err := plan.Parse("config.yaml", []byte(renderedConfig(t, objs)))
	if err != nil {
		t.Fatalf("the rendered example config does not load: %v", err)
	}
	roles := map[string]bool{}
	for _, u := range ofKind(objs, "Role") {
		roles[u.GetNamespace()] = true
	}
	if !roles["demo"] {
		t.Errorf("no Role in demo, the namespace of the example's rules: %v", roles)
	}
	pt := podTemplate(t, workload(t, objs))
	c := pt.Spec.Containers[0]
	var paths int
	for _, a := range file.Config.Actions {
		if a.Log == nil || a.Log.Path == "" {
			continue
		}
		paths++
		p := a.Log.Path
		if !filepath.IsAbs(p) {
			p = filepath.Join(c.WorkingDir, p)
		}
		if !writable(pt.Spec, c, p) {
			t.Errorf("action %s writes %s (working directory %q), on no writable volume of the pod: %+v", a.Name, p, c.WorkingDir, c.VolumeMounts)
		}
	}
	if paths == 0 {
		t.Error("the example has no log action with a path: this check checks nothing")
	}
}

// writable: path is under a mount of c that is not read-only, of an emptyDir
// or a claim.
func writable(pod corev1.PodSpec, c corev1.Container, path string) bool {
	for _, m := range c.VolumeMounts {
		rel, err := filepath.Rel(m.MountPath, path)
		if err != nil || m.ReadOnly || rel == "." || strings.HasPrefix(rel, "..") {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name == m.Name && (v.EmptyDir != nil || v.PersistentVolumeClaim != nil) {
				return true
			}
		}
	}
	return false
}
