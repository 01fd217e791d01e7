//go:build opendefects

// Tests of defects still open (docs/delivery.md, "Known open defects", and
// docs/scaling.md, "Resharding", say what they lose):
// they fail today, so they build only with -tags opendefects
// (go test -tags opendefects -run TestMovedInFieldRemovalReplaysWithoutMarks ./watcher/).

package watcher

import (
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// An object that moved in after a reshard from a shard that published no
// marks (no leaderElection: no Leases; a file of too many scopes), whose one
// change while the set was stopped removed a field (a label, a data key),
// changed after its old owner's end: its update must replay. The API server does not move any
// managedFields time for an update that only removes fields (the field
// manager records no set for the operation), so the latest managedFields
// time is no proof that nothing changed.
func TestMovedInFieldRemovalReplaysWithoutMarks(t *testing.T) {
	ns := namespace(t)
	ri := dyn(t).Resource(cmGVR).Namespace(ns)
	cm := create(t, cmGVR, ns, map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "moved", "namespace": ns, "labels": map[string]any{"tier": "gold"}},
		"data":     map[string]any{"a": "1", "b": "2"}})
	time.Sleep(1100 * time.Millisecond)
	end := time.Now() // the old owner stops: it delivered the object as created
	time.Sleep(1100 * time.Millisecond)
	// While the set is stopped: the label and a key removed, nothing added.
	patch := []byte(`[{"op":"remove","path":"/metadata/labels/tier"},{"op":"remove","path":"/data/b"}]`)
	if _, err := ri.Patch(t.Context(), "moved", types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	u, err := ri.Get(t.Context(), "moved", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u.GetResourceVersion() == cm.GetResourceVersion() {
		t.Fatal("the patch changed nothing")
	}
	raw, err := json.Marshal(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("created %s, old owner's end %s, managedFields %s", u.GetCreationTimestamp().UTC(), end.UTC(), mfTimes(u.GetManagedFields()))
	if got := movedInFires(t, ns, raw, end); got != "update" {
		t.Errorf("a moved-in object changed after its old owner's end (label and key removed) fires %q, want a replayed update", got)
	}
}
