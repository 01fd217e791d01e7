package watcher

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/dynwatch/dynwatch/event"
)

// A backlog queued on disk without clusters, then a restart whose config
// adds clusters: east (the command line's API server) adopts the records
// and the queued deliveries. The object's backlog and its new events must
// share one ordering key, or the queue sends the new event beside the old
// ones. The receiver holds the first delivery after the restart until the
// new event has been made: a new event that overtakes is seen arriving
// while it holds.
func TestAdoptedBacklogKeepsOrderWithNewEvents(t *testing.T) {
	ns := namespace(t)
	dbPath := filepath.Join(t.TempDir(), "state.db")
	var (
		mu      sync.Mutex
		up      atomic.Bool
		arrived []string // "type resourceVersion", in arrival order
		held    = make(chan struct{})
		first   atomic.Bool
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		var pl event.Payload
		if err := json.NewDecoder(r.Body).Decode(&pl); err != nil {
			t.Errorf("bad body: %v", err)
		}
		mu.Lock()
		arrived = append(arrived, fmt.Sprintf("%s %s", pl.Type, pl.ResourceVersion))
		mu.Unlock()
		if first.CompareAndSwap(false, true) {
			select {
			case <-held:
			case <-time.After(eventWait):
			}
		}
	}))
	defer srv.Close()
	hook := fmt.Sprintf(`actions: [{name: hook, concurrency: 4, webhook: {url: %q, retry: {max: 1000, initialBackoff: 50ms, maxBackoff: 200ms}}}]
rules: [{name: cms, resources: [{group: "", resource: configmaps}], namespaces: [%s], actions: [hook]}]
`, srv.URL, ns)

	one, stop := runWithState(t, env, "apiVersion: dynwatch/v1alpha1\nstate: {path: "+dbPath+"}\n"+hook, dbPath, nil)
	compared(t, one)
	create(t, cmGVR, ns, configMap(ns, "x", map[string]any{"v": "0"}))
	for i := 1; i <= 2; i++ {
		mutate(t, cmGVR, ns, "x", func(u *unstructured.Unstructured) { u.Object["data"] = map[string]any{"v": strconv.Itoa(i)} })
	}
	waitUntil(t, "three deliveries queued on disk", eventWait, func() bool {
		return pendingOf(t, one, "hook") == 3
	})
	stop()

	up.Store(true)
	cr := runClusters(t, "apiVersion: dynwatch/v1alpha1\nstate: {path: "+dbPath+"}\nclusters:\n  - name: east\n"+hook, dbPath, nil)
	cr.synced(t, "east")
	waitUntil(t, "the backlog's first delivery", eventWait, func() bool { return first.Load() })
	mutate(t, cmGVR, ns, "x", func(u *unstructured.Unstructured) { u.Object["data"] = map[string]any{"v": "3"} })
	time.Sleep(time.Second) // the new event is queued (or, out of order, sent) by now
	close(held)
	waitUntil(t, "four deliveries", eventWait, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(arrived) >= 4
	})
	mu.Lock()
	defer mu.Unlock()
	last := 0
	for i, a := range arrived {
		var typ string
		var rv int
		if _, err := fmt.Sscanf(a, "%s %d", &typ, &rv); err != nil {
			t.Fatal(err)
		}
		if rv <= last || (i == 0) != (typ == string(event.Add)) {
			t.Fatalf("x's deliveries out of order after clusters were added: %v", arrived)
		}
		last = rv
	}
}
