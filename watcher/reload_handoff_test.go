package watcher

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/event"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A reload that changes only a webhook's timeout while its receiver is down
// keeps the backlog: once the receiver is back every event arrives, in order
// per object, and nothing is reported as not delivered.
func TestReloadKeepsTheBacklogOfAChangedAction(t *testing.T) {
	ns := namespace(t)
	rc := newReceiver(t)
	rc.down.Store(true)
	r := start(t, rc.config(ns, "5s"))
	for i := range 5 {
		create(t, cmGVR, ns, configMap(ns, fmt.Sprint("before-", i), nil))
	}
	waitUntil(t, "the action to fail", eventWait, func() bool { return strings.Contains(r.logs.String(), "action failing") })
	reload(t, r, rc.config(ns, "6s"))
	for i := range 5 {
		create(t, cmGVR, ns, configMap(ns, fmt.Sprint("after-", i), nil))
	}
	mutate(t, cmGVR, ns, "before-0", func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"x": "1"}) })
	// The old settings' queue has handed its backlog over: it is not what keeps them.
	waitUntil(t, "the backlog to move to the new settings", eventWait, func() bool {
		return strings.Contains(r.logs.String(), "action changed: its backlog moves to the new settings, in order")
	})
	rc.down.Store(false)
	waitUntil(t, "every event", eventWait, func() bool { return len(rc.payloads()) >= 11 })
	// Nothing queued or in flight any more: no further delivery can come.
	waitUntil(t, "the queue to empty", eventWait, func() bool { return r.w.Queue("hook").Len() == 0 })
	got := rc.payloads()
	seen := map[string][]event.Type{}
	for _, p := range got {
		seen[p.Name] = append(seen[p.Name], p.Type)
	}
	if len(got) != 11 || len(seen) != 10 || fmt.Sprint(seen["before-0"]) != "[add update]" {
		t.Errorf("received %d events: %v", len(got), seen)
	}
	if logs := r.logs.String(); strings.Contains(logs, "not delivered") || strings.Contains(logs, "action stopped") {
		t.Errorf("events were given up:\n%s", logs)
	}
}

// Reloads while objects are being created lose no event: a handler that still
// holds the old pipeline reaches the queue that took over.
func TestEventsDuringReloadsAreDelivered(t *testing.T) {
	const objects = 150
	ns := namespace(t)
	rc := newReceiver(t)
	r := start(t, rc.config(ns, "5s"))
	done := make(chan error, 1)
	var created atomic.Int64
	go func() {
		cms := dyn(t).Resource(cmGVR).Namespace(ns)
		for i := range objects {
			if _, err := cms.Create(context.Background(), &unstructured.Unstructured{Object: configMap(ns, fmt.Sprint("cm-", i), nil)}, metav1.CreateOptions{}); err != nil {
				done <- err // t.Fatal belongs to the test's goroutine
				return
			}
			created.Add(1)
		}
		done <- nil
	}()
	// Reloads that came while objects were being created: the ones under test.
	reloads, during := 0, 0
	for timeout := 5; ; timeout++ {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		default:
			n := created.Load()
			reload(t, r, rc.config(ns, fmt.Sprint(timeout%7+1, "s")))
			reloads++
			if n > 0 && created.Load() < objects {
				during++
			}
			time.Sleep(5 * time.Millisecond)
			continue
		}
		break
	}
	if during < 10 {
		t.Fatalf("only %d of %d reloads came while objects were created; the test needs them interleaved", during, reloads)
	}
	waitUntil(t, "every add", eventWait, func() bool { return len(rc.payloads()) >= objects })
	waitUntil(t, "the queue to empty", eventWait, func() bool { return r.w.Queue("hook").Len() == 0 })
	ids := map[string]bool{}
	for _, p := range rc.payloads() {
		ids[p.ID] = true
	}
	if len(ids) != objects {
		t.Errorf("%d distinct events for %d objects over %d reloads", len(ids), objects, reloads)
	}
	if logs := r.logs.String(); strings.Contains(logs, "action stopped") || strings.Contains(logs, "not delivered") {
		t.Errorf("events dropped during reloads:\n%s", logs)
	}
	t.Logf("%d objects created during %d reloads (%d while creating), all delivered", objects, reloads, during)
}
