package watcher

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/state"
	"github.com/dynwatch/dynwatch/timed"
)

// A wait of an object that the start's list does not have (it moved to
// another shard at a reshard, or it went with no record to replay its
// delete) is forgotten once the list is complete: no watch here sees its
// delete, so an entered state would count in dynwatch_firing for ever and
// pass to an object made again under its name.
func TestUnlistedObjectsWaitIsForgotten(t *testing.T) {
	ns := namespace(t)
	dbPath := filepath.Join(t.TempDir(), "state.db")
	create(t, cmGVR, ns, configMap(ns, "here", map[string]any{"phase": "Failed"}))
	store, err := state.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	entered := timed.State{Holding: true, Entered: true, Since: time.Now().Add(-time.Hour)}
	ghost, here := waitKey("/configmaps/"+ns+"/ghost", "failing"), waitKey("/configmaps/"+ns+"/here", "failing")
	if err := store.Update(func(tx *state.Tx) error {
		if err := tx.PutWait(ghost, entered); err != nil {
			return err
		}
		return tx.PutWait(here, entered)
	}); err != nil {
		t.Fatal(err)
	}
	store.Close()
	r, stop := runDurable(t, durableRun{dbPath: dbPath, config: fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
state: {path: %s}
actions: [{name: out, log: {}}]
rules:
  - name: failing
    resources: [{group: "", resource: configmaps}]
    namespaces: [%s]
    when: [{path: data.phase, op: eq, value: Failed}]
    fire: edges
    for: 1s
    actions: [out]
`, dbPath, ns)})
	compared(t, r)
	waitUntil(t, "only here's wait counted", 10*time.Second, func() bool { return r.w.TimedCounts()["failing"] == [2]int{0, 1} })
	stop()
	store, err = state.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	_ = store.View(func(tx *state.Tx) error {
		if _, ok, _ := tx.Wait(ghost); ok {
			t.Error("the unlisted object's wait is still in the file")
		}
		if _, ok, _ := tx.Wait(here); !ok {
			t.Error("the listed object's wait went")
		}
		return nil
	})
	if got := r.out.snapshot(); len(got) != 0 {
		t.Errorf("forgetting a wait fired: %+v", got)
	}
}
