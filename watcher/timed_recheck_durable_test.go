package watcher

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// With state.path, a condition that reads the clock fires when its time
// comes, with no event, as it does without: the recheck the evaluation
// schedules must find something to step when it falls due.
func TestOlderThanFiresWithNoEventWithState(t *testing.T) {
	ns := namespace(t)
	dbPath := filepath.Join(t.TempDir(), "state.db")
	r, _ := runDurable(t, durableRun{dbPath: dbPath, config: fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
state: {path: %s}
actions: [{name: out, log: {}}]
rules:
  - name: old
    resources: [{group: "", resource: configmaps}]
    namespaces: [%s]
    when: [{path: data.since, op: olderThan, value: 3s}]
    fire: enter
    actions: [out]
`, dbPath, ns)})
	compared(t, r)
	create(t, cmGVR, ns, configMap(ns, "a", map[string]any{"since": time.Now().UTC().Format(time.RFC3339)}))
	got := r.out.wait(t, 1, 15*time.Second)
	if got[0].Transition != "enter" || got[0].Due == "" {
		t.Errorf("%+v, want enter made by a timer (due set)", got[0])
	}
}

// olderThanConfig is an olderThan rule on the configmaps of ns, its state
// at dbPath.
func olderThanConfig(dbPath, ns, age string) string {
	return fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
state: {path: %s}
actions: [{name: out, log: {}}]
rules:
  - name: old
    resources: [{group: "", resource: configmaps}]
    namespaces: [%s]
    when: [{path: data.since, op: olderThan, value: %s}]
    fire: enter
    actions: [out]
`, dbPath, ns, age)
}

// A time condition's wait is kept as a for wait is (SPEC §3 "Time"): when
// its time passed while dynwatch was down, it fires at start, late, rather
// than the object being taken as entered with nothing fired.
func TestOlderThanThatPassedWhileDownFiresLate(t *testing.T) {
	ns := namespace(t)
	dbPath := filepath.Join(t.TempDir(), "state.db")
	config := olderThanConfig(dbPath, ns, "4s")
	r, stop := runDurable(t, durableRun{dbPath: dbPath, config: config})
	compared(t, r)
	stamp := time.Now().UTC()
	create(t, cmGVR, ns, configMap(ns, "a", map[string]any{"since": stamp.Format(time.RFC3339)}))
	time.Sleep(time.Second) // the add is committed
	stop()
	if n := len(r.out.snapshot()); n != 0 {
		t.Fatalf("%d firings before the time passed", n)
	}
	time.Sleep(time.Until(stamp.Add(6 * time.Second)))
	r2, _ := runDurable(t, durableRun{dbPath: dbPath, config: config})
	got := r2.out.wait(t, 1, 15*time.Second)
	if got[0].Transition != "enter" || !got[0].Late {
		t.Errorf("%+v, want a late enter", got[0])
	}
}
