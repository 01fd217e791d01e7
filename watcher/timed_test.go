package watcher

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/dynwatch/dynwatch/event"
)

// A timed rule without state.path: the wait runs in memory, fires on time
// with no event in between, and the counts say what is pending and firing.
func TestTimedRuleInMemory(t *testing.T) {
	ns := namespace(t)
	r := start(t, fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
actions: [{name: out, log: {}}]
rules:
  - name: failing
    resources: [{group: "", resource: configmaps}]
    namespaces: [%s]
    when: [{path: data.phase, op: eq, value: Failed}]
    fire: edges
    for: 2s
    actions: [out]
`, ns))
	create(t, cmGVR, ns, configMap(ns, "a", map[string]any{"phase": "Failed"}))
	waitUntil(t, "a to be pending", 10*time.Second, func() bool { return r.w.TimedCounts()["failing"] == [2]int{1, 0} })
	created := time.Now()
	got := r.out.wait(t, 1, 20*time.Second)
	if got[0].Transition != "enter" || got[0].Since == "" {
		t.Fatalf("%+v, want a timed enter", got[0])
	}
	if since := time.Since(created); since < 1500*time.Millisecond {
		t.Errorf("entered %s after the wait was seen pending, want about 2s", since)
	}
	if c := r.w.TimedCounts()["failing"]; c != [2]int{0, 1} {
		t.Errorf("counts after enter: %v, want 0 pending, 1 firing", c)
	}
	mutate(t, cmGVR, ns, "a", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "Running", "data", "phase")
	})
	got = r.out.wait(t, 2, 20*time.Second)
	if got[1].Transition != "exit" || got[1].Type != event.Update {
		t.Fatalf("%+v, want exit on the update", got[1])
	}
	if c := r.w.TimedCounts()["failing"]; c != [2]int{0, 0} {
		t.Errorf("counts after exit: %v, want none", c)
	}
}

// A condition that reads the clock fires when its time comes, with no
// event: olderThan on a time the object holds.
func TestOlderThanFiresWithNoEvent(t *testing.T) {
	ns := namespace(t)
	r := start(t, fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
actions: [{name: out, log: {}}]
rules:
  - name: old
    resources: [{group: "", resource: configmaps}]
    namespaces: [%s]
    when: [{path: data.since, op: olderThan, value: 3s}]
    fire: enter
    actions: [out]
`, ns))
	stamp := time.Now().UTC()
	create(t, cmGVR, ns, configMap(ns, "a", map[string]any{"since": stamp.Format(time.RFC3339)}))
	got := r.out.wait(t, 1, 20*time.Second)
	at, err := time.Parse(time.RFC3339Nano, got[0].Time)
	if err != nil {
		t.Fatal(err)
	}
	// RFC 3339 without fractions: the time is stamp's second, at most 1s before.
	if at.Before(stamp.Add(2 * time.Second)) {
		t.Errorf("fired at %s, before 3s after %s", at, stamp)
	}
	if got[0].Transition != "enter" || got[0].Due == "" {
		t.Errorf("%+v, want enter made by a timer (due set)", got[0])
	}
}
