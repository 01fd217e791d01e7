package watcher

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/metrics"
)

// scrapeURL returns the value of the series line of /metrics that starts with
// series, or "" when there is none.
func scrapeURL(t *testing.T, url, series string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return v
		}
	}
	return ""
}

// With state, dynwatch_queue_depth counts every undelivered event of the
// action: with its receiver down and more events than the window kept in
// memory (1000), those on disk count too.
func TestQueueDepthCountsTheBacklogOnDisk(t *testing.T) {
	ns := namespace(t)
	rc := newReceiver(t)
	rc.down.Store(true)
	const rules, objects = 25, 50 // every rule fires on every object: 1250 events
	var rs strings.Builder
	for i := range rules {
		fmt.Fprintf(&rs, "  - {name: r%d, resources: [{group: \"\", resource: configmaps}], namespaces: [%s], actions: [hook]}\n", i, ns)
	}
	dbPath := filepath.Join(t.TempDir(), "state.db")
	config := fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
state: {path: %s}
shutdownGrace: 100ms
actions: [{name: hook, webhook: {url: %q, retry: {max: 1000, initialBackoff: 1s, maxBackoff: 2s}}}]
rules:
%s`, dbPath, rc.srv.URL, rs.String())
	r, _ := runWithState(t, env, config, dbPath, nil)
	waitUntil(t, "the watcher to sync", 30*time.Second, func() bool { return r.w.Synced() && len(r.w.durable.listingKeys()) == 0 })
	for i := range objects {
		create(t, cmGVR, ns, configMap(ns, fmt.Sprint("c", i), nil))
	}
	srv := httptest.NewServer(metrics.New(metrics.Sources{Queues: r.w.QueueSamples}).Handler())
	t.Cleanup(srv.Close)
	want := fmt.Sprint(rules * objects)
	var got string
	deadline := time.Now().Add(60 * time.Second)
	for got != want && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		got = scrapeURL(t, srv.URL, `dynwatch_queue_depth{action="hook"}`)
	}
	if got != want {
		t.Errorf("dynwatch_queue_depth %q with %s events undelivered (in memory: %d)", got, want, r.w.Queue("hook").Len())
	}
}

// An action's counters go on across a reload that replaces its queue (a
// change of its settings): they never go back to zero.
func TestCountersSurviveAReload(t *testing.T) {
	ns := namespace(t)
	hooks := map[string]*receiver{"a": newReceiver(t)}
	r := start(t, hookConfig(ns, "5s", hooks, "a"))
	delivered := func() uint64 {
		for _, s := range r.w.QueueSamples() {
			if s.Action == "a" {
				return s.Delivered
			}
		}
		return 0
	}
	create(t, cmGVR, ns, configMap(ns, "c1", nil))
	waitUntil(t, "c1 delivered and counted", eventWait, func() bool { return delivered() == 1 })
	reload(t, r, hookConfig(ns, "6s", hooks, "a"))
	if n := delivered(); n != 1 {
		t.Errorf("after the reload that replaced the queue, %d delivered; want 1", n)
	}
	create(t, cmGVR, ns, configMap(ns, "c2", nil))
	waitUntil(t, "c2 delivered and counted", eventWait, func() bool { return delivered() == 2 })
}
