package watcher

import (
	"fmt"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/plan"
)

// scopeConfig is a timed rule on the configmaps of namespaces.
func scopeConfig(namespaces string) string {
	return fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
actions: [{name: out, log: {}}]
rules:
  - name: failing
    resources: [{group: "", resource: configmaps}]
    namespaces: [%s]
    when: [{path: data.phase, op: eq, value: Failed}]
    fire: edges
    for: 1s
    actions: [out]
`, namespaces)
}

// A reload that takes a namespace out of a timed rule leaves its objects
// unwatched: a state kept for one of them (entered, so with nothing due)
// must not outlive that, or an object re-created under the same name once
// the namespace is back inherits it (no enter for the new uid) and
// dynwatch_firing counts the old one for ever.
func TestNarrowedNamespaceForgetsEnteredState(t *testing.T) {
	a, b := namespace(t), namespace(t)
	r := start(t, scopeConfig(a+", "+b))
	reload := func(namespaces string) {
		t.Helper()
		file, err := plan.Parse("reload.yaml", []byte(scopeConfig(namespaces)))
		if err != nil {
			t.Fatal(err)
		}
		if err := r.w.Reload(file); err != nil {
			t.Fatal(err)
		}
	}
	first := create(t, cmGVR, b, configMap(b, "x", map[string]any{"phase": "Failed"}))
	got := r.out.wait(t, 1, 20*time.Second)
	if got[0].Transition != "enter" {
		t.Fatalf("%+v, want enter", got[0])
	}
	reload(a)
	remove(t, cmGVR, b, "x")
	deadline := time.Now().Add(5 * time.Second)
	for r.w.TimedCounts()["failing"] != [2]int{0, 0} && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if c := r.w.TimedCounts()["failing"]; c != [2]int{0, 0} {
		t.Errorf("counts once the namespace is out of the rule: %v, want none", c)
	}
	reload(a + ", " + b)
	// The new object must be a live add, not one of the initial list of
	// the watch the reload starts (which takes what holds as entered).
	waitUntil(t, "the watch of "+b+" to list", 20*time.Second, func() bool {
		for _, k := range r.w.Manager().Watches() {
			if k.Namespace == b {
				return r.w.Manager().HasSynced()
			}
		}
		return false
	})
	second := create(t, cmGVR, b, configMap(b, "x", map[string]any{"phase": "Failed"}))
	r.out.waitMatch(t, "enter for the new uid", 15*time.Second, func(p event.Payload) bool {
		return p.UID == string(second.GetUID()) && p.Transition == "enter"
	})
	if first.GetUID() == second.GetUID() {
		t.Fatal("the object was not re-created")
	}
}
