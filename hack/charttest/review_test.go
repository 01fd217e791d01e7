package charttest

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
)

// Review: a rule with namespaces on a cluster-scoped resource (nodes) is
// watched cluster-wide by run (namespaces are ignored for it), so it needs a
// ClusterRole grant; the chart (like offline dynwatch rbac) gives a Role in prod.
func TestReviewClusterScopedResourceInNamespacedRule(t *testing.T) {
	cfg := "apiVersion: dynwatch/v1alpha1\ndefaults: {namespaces: [prod]}\nactions: [{name: out, log: {}}]\n" +
		"rules: [{name: nodes, resources: [{group: \"\", resource: nodes}], actions: [out]}]\n"
	objs := mustRender(t, values{file: configValues(cfg)})
	cr := one(t, objs, "ClusterRole")
	b, _ := cr.MarshalJSON()
	if !strings.Contains(string(b), `"nodes"`) {
		t.Errorf("nodes (cluster-scoped) not granted cluster-wide; ClusterRole: %s", b)
	}
}

// Review: a rules file that dynwatch reads with value "off" (YAML 1.2) is
// changed by --set-file into value false.
func TestReviewSetFileKeepsMeaning(t *testing.T) {
	rules := "apiVersion: dynwatch/v1alpha1\nactions: [{name: out, log: {}}]\n" +
		"rules:\n  - name: cms\n    resources: [{group: \"\", resource: configmaps}]\n    when: [{path: data.mode, op: eq, value: off}]\n    actions: [out]\n"
	cfg := renderedConfig(t, mustRender(t, values{file: "config: " + quoteYAML(rules)}))
	if strings.Contains(cfg, "value: false") {
		t.Errorf("--set-file turned value: off into false:\n%s", cfg)
	}
}

// Review: with leader election, the per-pod volumes of state.enabled mean the
// next leader diffs against its own stale records, not the last leader's.
func TestReviewStateWithLeaderElection(t *testing.T) {
	if _, err := renderChart(values{set: "state.enabled=true,leaderElection.enabled=true,replicas=2"}); err == nil {
		t.Error("state.enabled with leaderElection renders per-pod RWO volumes; want a refusal or a shared claim")
	}
}

// Review: one replica without leader election rolls with the default
// RollingUpdate (maxSurge 25% -> 1): two pods deliver every event meanwhile.
func TestReviewSingleReplicaStrategy(t *testing.T) {
	w := workload(t, mustRender(t, values{}))
	if s, _, _ := unstructuredString(w.Object, "spec", "strategy", "type"); s != "Recreate" {
		t.Errorf("strategy %q: an upgrade runs two acting pods at once", s)
	}
}

// Review: the alert check ignores label values: result="error" (never served) passes.
func TestReviewCheckCatchesLabelValue(t *testing.T) {
	if len(problems("test", `rate(dynwatch_deliveries_total{result="error"}[5m]) > 0`, registered(t))) == 0 {
		t.Error(`result="error" passed the check; dynwatch serves ok, retry, failed, dropped`)
	}
}

// Review: helm upgrade of a StatefulSet changing state.size, or adding shards
// to state (podManagementPolicy), is refused by the API server (immutable).
func TestReviewStatefulSetUpgrade(t *testing.T) {
	env := controlPlane(t)
	d := dynamic.NewForConfigOrDie(env.Config)
	ensureNamespace(t, d, namespace, nil)
	for _, tc := range []struct{ from, to string }{
		{"state.enabled=true", "state.enabled=true,state.size=5Gi"},
		{"state.enabled=true", "state.enabled=true,shards.count=3"},
	} {
		t.Run(tc.from+" -> "+tc.to, func(t *testing.T) {
			old := workload(t, mustRender(t, values{set: tc.from}))
			gvr := gvrOf(old)
			c := d.Resource(gvr).Namespace(namespace)
			_ = c.Delete(t.Context(), old.GetName(), metav1.DeleteOptions{})
			got, err := c.Create(t.Context(), old, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Delete(t.Context(), old.GetName(), metav1.DeleteOptions{})
			nw := workload(t, mustRender(t, values{set: tc.to}))
			nw.SetResourceVersion(got.GetResourceVersion())
			if _, err := c.Update(t.Context(), nw, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
				t.Errorf("helm upgrade %s -> %s fails: %v", tc.from, tc.to, err)
			}
		})
	}
}

func unstructuredString(m map[string]any, path ...string) (string, bool, error) {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return "", false, nil
		}
		cur = mm[p]
	}
	s, ok := cur.(string)
	return s, ok, nil
}
