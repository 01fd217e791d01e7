package watcher

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/state"
)

// recorded reports whether the state holds a record of uid among the
// ConfigMaps.
func recorded(t *testing.T, w *Watcher, uid string) bool {
	t.Helper()
	ok := false
	if err := w.durable.store.View(func(tx *state.Tx) error {
		_, _, ok = tx.Version(recordsOf("", "", "configmaps"), uid)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return ok
}

// A live add that lands between the end of a restart's list and its
// comparison with the records is not taken for an object that went while
// dynwatch was down: no replayed delete, and its record stays. The seam
// pauses the comparison exactly there.
func TestLiveAddRacingEndOfListing(t *testing.T) {
	ns := namespace(t)
	dbPath := filepath.Join(t.TempDir(), "state.db")
	config := cmsConfig(dbPath, ns)
	create(t, cmGVR, ns, configMap(ns, "before", nil))
	r, stop := runDurable(t, durableRun{config: config, dbPath: dbPath})
	compared(t, r) // the baseline
	stop()

	paused, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	r, _ = runDurable(t, durableRun{config: config, dbPath: dbPath, setup: func(w *Watcher) {
		w.durable.beforeCompare = func(dyninformer.Key) {
			once.Do(func() {
				close(paused)
				<-release
			})
		}
	}})
	select {
	case <-paused:
	case <-time.After(30 * time.Second):
		t.Fatal("the list never ended")
	}
	u := create(t, cmGVR, ns, configMap(ns, "racer", nil))
	r.out.waitMatch(t, "the live add", eventWait, func(p event.Payload) bool { return p.Name == "racer" && p.Type == event.Add })
	close(release)
	compared(t, r)
	if !recorded(t, r.w, string(u.GetUID())) {
		t.Error("the record of the object added live was dropped by the comparison")
	}
	// A later event of the same object comes after anything the comparison
	// fired for it, in its order.
	mutate(t, cmGVR, ns, "racer", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "2", "data", "v")
	})
	r.out.waitMatch(t, "the update", eventWait, func(p event.Payload) bool { return p.Name == "racer" && p.Type == event.Update })
	for _, p := range r.out.snapshot() {
		if p.Type == event.Delete {
			t.Errorf("a delete fired: %s", summary([]event.Payload{p}))
		}
	}
}
