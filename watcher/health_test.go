package watcher

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/dynwatch/dynwatch/event"
)

// run's pipeline reads health through the config's Checker: a kind's own
// health (here ConfigMap's, from its data) fires a rule on health.status as
// it changes, and the payload carries the health and a health field.
func TestPipelineHealth(t *testing.T) {
	ns := namespace(t)
	r := start(t, fmt.Sprintf(`
apiVersion: dynwatch/v1alpha1
actions: [{name: stdout, log: {}}]
health:
  - {kind: ConfigMap, cel: 'object.data.mode == "on" ? "Current" : "Failed"'}
rules:
  - name: failing
    resources: [{resource: configmaps}]
    namespaces: [%s]
    fire: edges
    when: [{path: health.status, op: eq, value: Failed}]
    fields: {h: health.status}
    actions: [stdout]
  - name: sentinel
    resources: [{resource: configmaps}]
    namespaces: [%s]
    when: [{path: metadata.name, op: eq, value: sentinel}]
    actions: [stdout]
`, ns, ns))
	create(t, cmGVR, ns, configMap(ns, "a", map[string]any{"mode": "on"}))
	mutate(t, cmGVR, ns, "a", func(u *unstructured.Unstructured) { u.Object["data"] = map[string]any{"mode": "off"} })
	mutate(t, cmGVR, ns, "a", func(u *unstructured.Unstructured) { u.Object["data"] = map[string]any{"mode": "on"} })
	create(t, cmGVR, ns, configMap(ns, "sentinel", nil))
	got := r.settle(t, "stdout", "sentinel")
	if len(got) != 2 {
		t.Fatalf("%d payloads, want enter and exit: %+v", len(got), got)
	}
	want := []struct {
		transition string
		health     event.Health
	}{{"enter", event.Health{Status: "Failed"}}, {"exit", event.Health{Status: "Current"}}}
	for i, p := range got {
		if p.Transition != want[i].transition || p.Health == nil || *p.Health != want[i].health {
			t.Errorf("payload %d: %s with health %+v, want %s with %+v", i, p.Transition, p.Health, want[i].transition, want[i].health)
		}
		if string(p.Fields["h"]) != `"`+want[i].health.Status+`"` {
			t.Errorf("payload %d: field h %s, want %q", i, p.Fields["h"], want[i].health.Status)
		}
	}
}
