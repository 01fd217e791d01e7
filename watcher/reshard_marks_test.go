package watcher

import (
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// An object that moved in after a reshard, whose one change while the set
// was stopped removed a field (a label, a data key): the API server moves
// no managedFields time for it, but its resourceVersion is above the mark
// its old owner published (the highest it recorded in the scope), and its
// update replays. The same object unchanged, at the mark, fires nothing;
// one created after the old owner's end is an add.
func TestMovedInFieldRemovalReplaysByMark(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	ri := dyn(t).Resource(cmGVR).Namespace(ns)
	cm := create(t, cmGVR, ns, map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "moved", "namespace": ns, "labels": map[string]any{"tier": "gold"}},
		"data":     map[string]any{"a": "1", "b": "2"}})
	marks := map[string]string{"/configmaps/" + ns: cm.GetResourceVersion()} // its old owner recorded it as created
	raw, err := json.Marshal(cm.Object)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	end := time.Now() // the old owner stops
	if got := movedInFiresWith(t, ns, raw, end, marks); got != "" {
		t.Errorf("a moved-in object at its old owner's mark fires %q, want nothing", got)
	}
	time.Sleep(1100 * time.Millisecond)
	patch := []byte(`[{"op":"remove","path":"/metadata/labels/tier"},{"op":"remove","path":"/data/b"}]`)
	if _, err := ri.Patch(t.Context(), "moved", types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	u, err := ri.Get(t.Context(), "moved", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if raw, err = json.Marshal(u.Object); err != nil {
		t.Fatal(err)
	}
	t.Logf("created %s, old owner's end %s, managedFields %s", u.GetCreationTimestamp().UTC(), end.UTC(), mfTimes(u.GetManagedFields()))
	if got := movedInFiresWith(t, ns, raw, end, marks); got != "update" {
		t.Errorf("a moved-in object changed above its old owner's mark (label and key removed) fires %q, want a replayed update", got)
	}
	late := create(t, cmGVR, ns, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "late", "namespace": ns}})
	if raw, err = json.Marshal(late.Object); err != nil {
		t.Fatal(err)
	}
	if got := movedInFiresWith(t, ns, raw, end, marks); got != "add" {
		t.Errorf("a moved-in object created after its old owner's end fires %q, want a replayed add", got)
	}
	// A mark of another scope says nothing of this one: times decide (and
	// miss the removal: the gap left where no mark is published).
	if got := movedInFiresWith(t, ns, raw, end, map[string]string{"/configmaps/elsewhere": "1"}); got != "add" {
		t.Errorf("without its scope's mark, a moved-in object created after the end fires %q, want add", got)
	}
}
