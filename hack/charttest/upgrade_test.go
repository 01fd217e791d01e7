package charttest

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
)

// `helm upgrade` of a StatefulSet the chart made, created for real and the
// upgrade applied with a server-side dry run: adding shards to state is
// accepted (podManagementPolicy is Parallel either way); a new state.size is
// refused by the API server (volumeClaimTemplates are immutable) and goes
// through after `kubectl delete sts --cascade=orphan`, as docs/operations.md ("Upgrades") says.
func TestStatefulSetUpgrade(t *testing.T) {
	env := controlPlane(t)
	d := dynamic.NewForConfigOrDie(env.Config)
	ensureNamespace(t, d, namespace, nil)
	for _, tc := range []struct {
		from, to string
		orphan   bool // the upgrade needs the StatefulSet orphan-deleted first
	}{
		{"state.enabled=true", "state.enabled=true,shards.count=3", false},
		{"state.enabled=true", "state.enabled=true,state.size=5Gi", true},
		{"state.enabled=true", "state.enabled=true,state.storageClassName=fast", true},
	} {
		t.Run(tc.from+" -> "+tc.to, func(t *testing.T) {
			old := workload(t, mustRender(t, values{set: tc.from}))
			c := d.Resource(gvrOf(old)).Namespace(namespace)
			_ = c.Delete(t.Context(), old.GetName(), metav1.DeleteOptions{})
			got, err := c.Create(t.Context(), old, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Delete(t.Context(), old.GetName(), metav1.DeleteOptions{})
			nw := workload(t, mustRender(t, values{set: tc.to}))
			nw.SetResourceVersion(got.GetResourceVersion())
			dry := []string{metav1.DryRunAll}
			_, err = c.Update(t.Context(), nw, metav1.UpdateOptions{DryRun: dry})
			switch {
			case !tc.orphan && err != nil:
				t.Fatalf("helm upgrade %s -> %s fails: %v", tc.from, tc.to, err)
			case tc.orphan && (err == nil || !strings.Contains(err.Error(), "immutable")):
				t.Fatalf("the API server took the upgrade (%v): the orphan step of docs/operations.md is not needed", err)
			case !tc.orphan:
				return
			}
			orphan := metav1.DeletePropagationOrphan
			if err := c.Delete(t.Context(), old.GetName(), metav1.DeleteOptions{PropagationPolicy: &orphan}); err != nil {
				t.Fatal(err)
			}
			// The test's API server runs no garbage collector: do its part,
			// dropping the orphan finalizer once the pods would be orphaned.
			if cur, err := c.Get(t.Context(), old.GetName(), metav1.GetOptions{}); err == nil {
				cur.SetFinalizers(nil)
				if _, err := c.Update(t.Context(), cur, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			nw.SetResourceVersion("")
			if _, err := c.Create(t.Context(), nw, metav1.CreateOptions{DryRun: dry}); err != nil {
				t.Errorf("after the orphan delete, the upgrade fails: %v", err)
			}
		})
	}
}
