package watcher

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Reloads that change the action and start or stop another informer each
// time (the pipeline is published only once the stopped informer's calls
// end) lose no event of the informer that keeps running, and deliver each
// once.
func TestEventsDuringReloadsThatStopInformersAreDelivered(t *testing.T) {
	const objects = 120
	ns := namespace(t)
	rc := newReceiver(t)
	withSecrets := func(timeout string, on bool) string {
		c := rc.config(ns, timeout)
		if on {
			c += fmt.Sprintf("  - {name: secrets, resources: [{group: \"\", resource: secrets}], namespaces: [%s], actions: [hook]}\n", ns)
			c = strings.Replace(c, "rules: [{name: cms", "rules:\n  - {name: cms", 1)
			c = strings.Replace(c, "actions: [hook]}]\n", "actions: [hook]}\n", 1)
		}
		return c
	}
	r := start(t, rc.config(ns, "5s"))
	done := make(chan error, 1)
	var created atomic.Int64
	go func() {
		cms := dyn(t).Resource(cmGVR).Namespace(ns)
		for i := range objects {
			if _, err := cms.Create(context.Background(), &unstructured.Unstructured{Object: configMap(ns, fmt.Sprint("cm-", i), nil)}, metav1.CreateOptions{}); err != nil {
				done <- err
				return
			}
			created.Add(1)
		}
		done <- nil
	}()
	reloads := 0
loop:
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			break loop
		default:
			reload(t, r, withSecrets(fmt.Sprint(reloads%5+1, "s"), reloads%2 == 0))
			reloads++
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitUntil(t, "every add", eventWait, func() bool { return len(rc.payloads()) >= objects })
	ids := map[string]int{}
	for _, p := range rc.payloads() {
		ids[p.ID]++
	}
	for id, n := range ids {
		if n != 1 {
			t.Errorf("event %s delivered %d times", id, n)
		}
	}
	if len(ids) != objects {
		t.Errorf("%d distinct events for %d objects over %d reloads", len(ids), objects, reloads)
	}
	if logs := r.logs.String(); strings.Contains(logs, "action stopped") || strings.Contains(logs, "not delivered") {
		t.Errorf("events dropped during reloads")
	}
	t.Logf("%d reloads", reloads)
}
