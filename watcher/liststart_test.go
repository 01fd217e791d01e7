package watcher

import (
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/event"
)

// A watch that a reload adds is registered for the comparison with the
// records before its informer starts: an object its first list hands over
// before Set's caller goes on is counted as listed, so its record stays and a
// delete while dynwatch is down fires after the next start. The seam holds
// Set's caller until that object's record is on disk.
func TestListingRegisteredBeforeInformerStarts(t *testing.T) {
	ns := namespace(t)
	dbPath := filepath.Join(t.TempDir(), "state.db")
	base := fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
state: {path: %s}
actions: [{name: out, log: {}}]
rules:
  - {name: secrets, resources: [{group: "", resource: secrets}], namespaces: [%s], actions: [out]}
`, dbPath, ns)
	withCMs := base + fmt.Sprintf(`  - {name: cms, resources: [{group: "", resource: configmaps}], namespaces: [%s], actions: [out]}
`, ns)
	u := create(t, cmGVR, ns, configMap(ns, "early", nil))
	uid := string(u.GetUID())

	var armed atomic.Bool
	var once sync.Once
	held := false
	r, stop := runDurable(t, durableRun{config: base, dbPath: dbPath, setup: func(w *Watcher) {
		w.durable.afterStart = func() {
			if !armed.Load() {
				return // the start's Set: no informer runs before its listing
			}
			once.Do(func() {
				// The new informer lists while Set's caller is held.
				deadline := time.Now().Add(eventWait)
				for !recorded(t, w, uid) && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
				held = recorded(t, w, uid)
			})
		}
	}})
	compared(t, r)
	armed.Store(true)
	reload(t, r, withCMs)
	if !held {
		t.Fatal("the new informer's first object was never recorded while Set's caller was held")
	}
	compared(t, r)
	if !recorded(t, r.w, uid) {
		t.Error("the comparison dropped the record of an object its list held")
	}
	stop()

	remove(t, cmGVR, ns, "early")
	r, _ = runDurable(t, durableRun{config: withCMs, dbPath: dbPath})
	r.out.waitMatch(t, "the delete while dynwatch was down", eventWait, func(p event.Payload) bool {
		return p.Name == "early" && p.Type == event.Delete && p.Replay
	})
}
