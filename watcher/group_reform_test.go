package watcher

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/event"
)

// dedupReceiver handles each X-Dynwatch-Delivery-Id once, as a receiver
// that drops what it has seen: a key seen before is answered and not
// handled again. While slow, it answers nothing until the sender gives up
// (a late acknowledgement), having handled the delivery or not.
type dedupReceiver struct {
	srv     *httptest.Server
	mu      sync.Mutex
	slow    bool
	seen    map[string]bool
	keys    []string // every request's key, in order
	handled []string // the names of the events handled
}

func newDedupReceiver(t *testing.T) *dedupReceiver {
	rc := &dedupReceiver{seen: map[string]bool{}}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var g event.GroupPayload
		if err := json.Unmarshal(b, &g); err != nil || g.Count != len(g.Events) {
			t.Errorf("not a grouped delivery: %s", b)
		}
		key := r.Header.Get("X-Dynwatch-Delivery-Id")
		rc.mu.Lock()
		rc.keys = append(rc.keys, key)
		slow := rc.slow
		if !rc.seen[key] {
			rc.seen[key] = true
			for _, p := range g.Events {
				rc.handled = append(rc.handled, p.Name)
			}
		}
		rc.mu.Unlock()
		if slow {
			<-r.Context().Done()
		}
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *dedupReceiver) setSlow(slow bool) { rc.mu.Lock(); rc.slow = slow; rc.mu.Unlock() }

func (rc *dedupReceiver) got() (keys, handled []string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.keys), slices.Clone(rc.handled)
}

// A group [cm0 cm1] is delivered, but the receiver's acknowledgement comes
// too late, and again for the retry (same members, same key: handled once).
// cm2 is created meanwhile and waits on disk in the group's next delivery. A
// kill -9 lands before any done mark. The next start forms the group again
// from the state file as [cm0 cm1 cm2]: other content, so another key, and
// the receiver that drops what it has seen handles cm2.
func TestGroupReformedAfterLateAckReachesDedupingReceiver(t *testing.T) {
	ns := namespace(t)
	rc := newDedupReceiver(t)
	rc.setSlow(true)
	db := filepath.Join(t.TempDir(), "state.db")
	config := fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
state: {path: %s}
shutdownGrace: 5s
actions: [{name: hook, webhook: {url: %q, timeout: 500ms, retry: {max: 100, initialBackoff: 50ms, maxBackoff: 200ms}}, group: {by: [namespace], wait: 1s}}]
rules: [{name: cms, resources: [{group: "", resource: configmaps}], namespaces: [%s], actions: [hook]}]
`, db, rc.srv.URL, ns)
	r1, stop1 := runDurable(t, durableRun{config: config, dbPath: db})
	compared(t, r1)
	for _, name := range []string{"cm0", "cm1"} {
		create(t, cmGVR, ns, configMap(ns, name, map[string]any{"v": "0"}))
	}
	waitUntil(t, "[cm0 cm1] sent and retried", 30*time.Second, func() bool { keys, _ := rc.got(); return len(keys) >= 2 })
	create(t, cmGVR, ns, configMap(ns, "cm2", map[string]any{"v": "0"}))
	waitUntil(t, "cm2 waiting in the group", 30*time.Second, func() bool { return r1.w.Queue("hook").GroupEvents() == 1 })
	r1.w.Halt() // as kill -9: nothing more is delivered or marked done
	stop1()
	keys, handled := rc.got()
	if keys[1] != keys[0] {
		t.Errorf("the retry of [cm0 cm1] has key %q, its first attempt %q", keys[1], keys[0])
	}
	if !slices.Equal(handled, []string{"cm0", "cm1"}) {
		t.Fatalf("handled %v before the restart, want [cm0 cm1]", handled)
	}

	rc.setSlow(false)
	r2, _ := runDurable(t, durableRun{config: config, dbPath: db})
	compared(t, r2)
	waitUntil(t, "the backlog delivered", 30*time.Second, func() bool { k, _ := rc.got(); return r2.w.Queue("hook").Len() == 0 && len(k) > len(keys) })
	keys, handled = rc.got()
	if !slices.Contains(handled, "cm2") {
		t.Errorf("the receiver never handled cm2: handled %v; the attempts' keys %q", handled, keys)
	}
}
