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
