package watcher

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// Review: with state, a grouped action's in-memory window (queueSize, at
// most 1000) caps what an open group can hold; the rest waits on disk and,
// once paged in, joins a group that was just delivered, so it waits the
// whole interval. A burst of 10 events with queueSize 4 arrives as 4 at the
// wait, then 4 an interval later, ...: grouping with state caps an action's
// throughput at window events per interval (1000 per 5m by default), and a
// group's events are split by the window, not by max. Without state all 10
// go at the wait.
func TestReviewGroupWithStateNotCappedByWindow(t *testing.T) {
	ns := namespace(t)
	rc := newGroupReceiver(t)
	db := filepath.Join(t.TempDir(), "state.db")
	config := fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
state: {path: %s}
shutdownGrace: 5s
actions: [{name: hook, queueSize: 4, webhook: {url: %q}, group: {by: [namespace], wait: 2s, interval: 30s, max: 100}}]
rules: [{name: cms, resources: [{group: "", resource: configmaps}], namespaces: [%s], actions: [hook]}]
`, db, rc.srv.URL, ns)
	r, _ := runDurable(t, durableRun{config: config, dbPath: db})
	compared(t, r)
	for i := range 10 {
		create(t, cmGVR, ns, configMap(ns, fmt.Sprint("cm", i), map[string]any{"v": "0"}))
	}
	deadline := time.Now().Add(12 * time.Second)
	for time.Now().Before(deadline) && len(rc.names()) < 10 {
		time.Sleep(100 * time.Millisecond)
	}
	if n := len(rc.names()); n != 10 {
		t.Errorf("12s after a burst of 10 events (wait 2s): %d delivered in %d deliveries; the rest wait an interval behind the window", n, len(rc.groups()))
	}
}
