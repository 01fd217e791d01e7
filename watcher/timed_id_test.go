package watcher

import (
	"fmt"
	"testing"
	"time"
)

// Two timers of one rule on one object that fall due within one second,
// with no event in between, make two firings with different content (an
// enter, then an exit): they must not share the delivery key <id>:<rule>
// (SPEC §4: one key always names one content).
func TestTimerFiringsWithinOneSecondHaveDistinctKeys(t *testing.T) {
	ns := namespace(t)
	r := start(t, fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
actions: [{name: out, log: {}}]
rules:
  - name: window
    resources: [{group: "", resource: configmaps}]
    namespaces: [%s]
    when:
      - {path: data.from, op: olderThan, value: 0s}
      - {path: data.until, op: newerThan, value: 0s}
    fire: edges
    actions: [out]
`, ns))
	// The conditions hold from 200ms to 700ms into a second that is at
	// least 2s away: both timers fall due within it.
	sec := time.Now().Truncate(time.Second).Add(3 * time.Second)
	create(t, cmGVR, ns, configMap(ns, "a", map[string]any{
		"from":  sec.Add(200 * time.Millisecond).UTC().Format(time.RFC3339Nano),
		"until": sec.Add(700 * time.Millisecond).UTC().Format(time.RFC3339Nano),
	}))
	got := r.out.wait(t, 2, 20*time.Second)
	if got[0].Transition != "enter" || got[1].Transition != "exit" {
		t.Fatalf("got %s then %s, want enter then exit", got[0].Transition, got[1].Transition)
	}
	if k0, k1 := got[0].ID+":"+got[0].Rule, got[1].ID+":"+got[1].Rule; k0 == k1 {
		t.Errorf("enter and exit share the delivery key %q", k0)
	}
}
