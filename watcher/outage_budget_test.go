package watcher

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// With state, an outage far longer than the retry budget removes nothing from
// disk: 10 ConfigMaps created while the webhook's receiver answers 503, for a
// second against a budget of {max: 1, initialBackoff: 20ms, maxBackoff: 50ms},
// stay in the action's outbox, none given up, and once the receiver answers
// 200 each arrives and leaves the disk. Against a real API server, a real
// bbolt file and a real receiver.
func TestOutageLongerThanRetryBudgetKeepsDurableBacklog(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	rc := newReceiver(t)
	rc.down.Store(true)
	dbPath := filepath.Join(t.TempDir(), "state.db")
	config := fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
state: {path: %s}
shutdownGrace: 500ms
actions: [{name: hook, webhook: {url: %q, timeout: 2s, retry: {max: 1, initialBackoff: 20ms, maxBackoff: 50ms}}}]
rules: [{name: cms, resources: [{group: "", resource: configmaps}], namespaces: [%s], actions: [hook]}]
`, dbPath, rc.srv.URL, ns)
	r, _ := runDurable(t, durableRun{config: config, dbPath: dbPath})
	compared(t, r)
	var want []string
	for i := range 10 {
		name := fmt.Sprint("cm", i)
		create(t, cmGVR, ns, configMap(ns, name, map[string]any{"v": "0"}))
		want = append(want, name+" add")
	}
	q := r.w.Queue("hook")
	waitUntil(t, "the 10 events queued", eventWait, func() bool { return q.Stats().Enqueued == 10 })
	time.Sleep(time.Second) // the outage goes on, 20 times the retry budget
	if st, onDisk := q.Stats(), pendingOf(t, r, "hook"); st.Failed != 0 || onDisk != 10 {
		t.Fatalf("after a 1s outage: %d given up, %d of 10 still on disk; want none given up, all on disk", st.Failed, onDisk)
	}
	rc.down.Store(false)
	waitUntil(t, "the backlog delivered and off the disk", eventWait, func() bool {
		return len(rc.payloads()) >= 10 && pendingOf(t, r, "hook") == 0
	})
	got := names(rc.payloads())
	sort.Strings(got)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("the receiver got %v, want %v", got, want)
	}
	if log := r.logs.String(); strings.Contains(log, "delivery failed") {
		t.Errorf("an event was given up:\n%s", log)
	}
}
