package watcher

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/dynwatch/dynwatch/event"
)

// crdVersion is a CRD of group mix.example.com served in the one version v.
func crdVersion(plural, kind, v string) map[string]any {
	c := crd("mix.example.com", plural, kind)
	c["spec"].(map[string]any)["versions"].([]any)[0].(map[string]any)["name"] = v
	return c
}

// A group that mixes versions, as Prometheus Operator's and Argo CD's do: a
// resource served only in v1alpha1 next to one in v1 is selected by a glob and
// by its kind, and a CRD added later that changes the group's preferred version
// moves no other watch and fires nothing again.
func TestMixedVersionsInOneGroup(t *testing.T) {
	ns := namespace(t)
	for _, c := range []map[string]any{crdVersion("alphas", "Alpha", "v1alpha1"), crdVersion("gammas", "Gamma", "v1")} {
		create(t, crdGVR, "", c)
		name := c["metadata"].(map[string]any)["name"].(string)
		t.Cleanup(func() { _ = dyn(t).Resource(crdGVR).Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	alphas := schema.GroupVersionResource{Group: "mix.example.com", Version: "v1alpha1", Resource: "alphas"}
	gammas := schema.GroupVersionResource{Group: "mix.example.com", Version: "v1", Resource: "gammas"}
	createCRObject(t, alphas, ns, "a1", "Alpha")
	createCRObject(t, gammas, ns, "g1", "Gamma")
	r := startLive(t, fmt.Sprintf(`
apiVersion: dynwatch/v1alpha1
actions: [{name: stdout, log: {}}]
rules:
  - name: glob
    resources: [{group: "*.example.com", resource: "*"}]
    namespaces: [%[1]s]
    onStart: all
    actions: [stdout]
  - name: by-kind
    resources: [{kind: Alpha}]
    namespaces: [%[1]s]
    actions: [stdout]
`, ns))
	waitUntil(t, "both resources watched", 15*time.Second, func() bool { return watching(r.w, alphas) && watching(r.w, gammas) })
	r.out.wait(t, 2, eventWait) // a1 and g1 at start
	if strings.Contains(r.logs.String(), "selects no served resource") {
		t.Errorf("a rule was said to select nothing:\n%s", r.logs.String())
	}
	started := r.w.Manager().Started()

	create(t, crdGVR, "", crdVersion("deltas", "Delta", "v2"))
	t.Cleanup(func() {
		_ = dyn(t).Resource(crdGVR).Delete(context.Background(), "deltas.mix.example.com", metav1.DeleteOptions{})
	})
	deltas := schema.GroupVersionResource{Group: "mix.example.com", Version: "v2", Resource: "deltas"}
	waitUntil(t, "the new CRD watched", 15*time.Second, func() bool { return watching(r.w, deltas) })
	time.Sleep(time.Second)
	if !watching(r.w, alphas) || !watching(r.w, gammas) {
		t.Errorf("a CRD that changed the group's preferred version stopped other watches: %v", r.w.Manager().Watches())
	}
	if n := r.w.Manager().Started() - started; n != 1 {
		t.Errorf("%d informers started; want 1 (deltas only)", n)
	}
	mutate(t, alphas, ns, "a1", func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"x": "1"}) })
	r.out.waitMatch(t, "the update of a1 by kind", eventWait, func(p event.Payload) bool {
		return p.Rule == "by-kind" && p.Name == "a1" && p.Type == event.Update
	})
	adds := 0
	for _, p := range r.out.snapshot() {
		if p.Type == event.Add && p.Name != "d1" {
			adds++
		}
	}
	if adds != 2 {
		t.Errorf("%d adds of a1 and g1; the new CRD must not fire them again", adds)
	}
}
