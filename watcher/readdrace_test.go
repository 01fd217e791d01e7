package watcher

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/dynwatch/dynwatch/event"
)

// holdingReceiver accepts deliveries, but holds the first one until release
// is closed.
type holdingReceiver struct {
	srv     *httptest.Server
	release chan struct{}
	mu      sync.Mutex
	got     []event.Payload
	held    bool
}

func newHoldingReceiver(t *testing.T) *holdingReceiver {
	rc := &holdingReceiver{release: make(chan struct{})}
	first := make(chan struct{}, 1)
	first <- struct{}{}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var pl event.Payload
		if err := json.NewDecoder(r.Body).Decode(&pl); err != nil {
			t.Errorf("bad body: %v", err)
		}
		select {
		case <-first:
			rc.mu.Lock()
			rc.held = true
			rc.mu.Unlock()
			<-rc.release
		default:
		}
		rc.mu.Lock()
		rc.got = append(rc.got, pl)
		rc.mu.Unlock()
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *holdingReceiver) holding() bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.held
}

func (rc *holdingReceiver) payloads() []event.Payload {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]event.Payload(nil), rc.got...)
}

// An action removed by a reload and added again while its old queue still
// waits for the queue it replaced (an attempt in flight) delivers each
// object's events once, in order: the old queue's backlog, read again from
// disk for the new one, is not also moved into it, and what the old queues
// delivered is marked done before the disk is read. Repeated: which of the
// old queue's stop and hand-over it saw first was left to chance.
func TestReAddedWhileOldQueueWaitsKeepsOrder(t *testing.T) {
	t.Parallel()
	for round := range 4 {
		t.Run(strconv.Itoa(round), func(t *testing.T) {
			t.Parallel()
			ns := namespace(t)
			rc := newHoldingReceiver(t)
			dbPath := filepath.Join(t.TempDir(), "state.db")
			hook := func(timeout string) string {
				return fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
state: {path: %s}
actions: [{name: hook, webhook: {url: %q, timeout: %s}}, {name: out, log: {}}]
rules:
  - {name: cms, resources: [{group: "", resource: configmaps}], namespaces: [%s], actions: [hook]}
  - {name: all, resources: [{group: "", resource: configmaps}], namespaces: [%s], actions: [out]}
`, dbPath, rc.srv.URL, timeout, ns, ns)
			}
			without := fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
state: {path: %s}
actions: [{name: out, log: {}}]
rules: [{name: all, resources: [{group: "", resource: configmaps}], namespaces: [%s], actions: [out]}]
`, dbPath, ns)
			r, _ := runDurable(t, durableRun{config: hook("30s"), dbPath: dbPath})
			compared(t, r)
			create(t, cmGVR, ns, configMap(ns, "x", map[string]any{"v": "0"}))
			waitUntil(t, "the first attempt held", eventWait, rc.holding)
			setData(t, ns, "x", "1")
			setData(t, ns, "x", "2")
			waitUntil(t, "the backlog on disk", eventWait, func() bool { return pendingOf(t, r, "hook") == 3 })

			reload(t, r, hook("29s")) // new settings: the new queue waits for the attempt in flight
			reload(t, r, without)     // removed while that queue waits
			reload(t, r, hook("29s")) // back: its name's backlog comes first
			close(rc.release)
			waitUntil(t, "the backlog delivered", eventWait, func() bool { return pendingOf(t, r, "hook") == 0 })
			if got, want := seq(rc.payloads(), "x"), "add 0, update 1, update 2"; got != want {
				t.Errorf("hook delivered %q, want %q", got, want)
			}
		})
	}
}
