package watcher

import (
	"errors"
	"testing"
	"time"
)

// stopRun stops r's watcher and waits for its Run to return: every queue has
// then stopped, those that drain included. Halted without state, the events
// still queued are lost, and Run must say so (ErrUndelivered).
func stopRun(t *testing.T, r *running) {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		if !errors.Is(err, ErrUndelivered) {
			t.Errorf("the watcher's Run returned %v, want %v", err, ErrUndelivered)
		}
		r.done <- nil // for the cleanup's stop: checked here
	case <-time.After(60 * time.Second):
		t.Fatal("the watcher did not stop within 60s")
	}
}

// A halt (a lost Lease) stops the queues a reload retired too: a removed
// action still draining its backlog delivers nothing once halted, even when
// its receiver comes back within the shutdown grace.
func TestHaltStopsRetiredQueues(t *testing.T) {
	ns := namespace(t)
	hooks := map[string]*receiver{"a": newReceiver(t), "b": newReceiver(t)}
	hooks["b"].down.Store(true)
	r := start(t, hookConfig(ns, "5s", hooks, "a", "b"))
	create(t, cmGVR, ns, configMap(ns, "c1", nil))
	waitUntil(t, "c1 delivered to a", eventWait, func() bool { return len(hooks["a"].payloads()) == 1 })
	waitUntil(t, "b to fail on c1", eventWait, func() bool { down, _ := r.w.Queue("b").Down(); return down })

	reload(t, r, hookConfig(ns, "5s", hooks, "a")) // b retires: it drains c1 for up to 30s
	r.w.Halt()
	hooks["b"].down.Store(false)
	stopRun(t, r)
	if got := hooks["b"].payloads(); len(got) != 0 {
		t.Errorf("the retired action delivered %d events after the halt: %s", len(got), names(got))
	}
}

// A reload that lands after a halt builds no queue that delivers: neither an
// action it adds nor one whose settings it changes.
func TestReloadAfterHaltDeliversNothing(t *testing.T) {
	ns := namespace(t)
	hooks := map[string]*receiver{"a": newReceiver(t), "c": newReceiver(t)}
	r := start(t, hookConfig(ns, "5s", hooks, "a"))
	r.w.Halt()
	reload(t, r, hookConfig(ns, "6s", hooks, "a", "c")) // a replaced, c added
	create(t, cmGVR, ns, configMap(ns, "c2", nil))
	waitUntil(t, "c2 queued for a and c", eventWait, func() bool {
		return r.w.Queue("a").Stats().Enqueued == 1 && r.w.Queue("c").Stats().Enqueued == 1
	})
	stopRun(t, r)
	for name, rc := range hooks {
		if got := rc.payloads(); len(got) != 0 {
			t.Errorf("action %s delivered %d events after the halt: %s", name, len(got), names(got))
		}
	}
}
