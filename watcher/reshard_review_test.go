package watcher

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/restart"
	"github.com/dynwatch/dynwatch/state"
)

// An object that moved in after a reshard, whose one change while the set
// was stopped removed a field (a label, a data key), changed after its old
// owner's end: its update must replay. The API server does not move any
// managedFields time for an update that only removes fields (the field
// manager records no set for the operation), so the latest managedFields
// time is no proof that nothing changed.
func TestMovedInFieldRemovalReplays(t *testing.T) {
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

// movedInFires is what the listed object raw, without a record, fires after
// a reshard whose old owner ended at end.
func movedInFires(t *testing.T, ns string, raw []byte, end time.Time) string {
	t.Helper()
	cms := event.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}
	ev := event.New(event.Add, cms, raw, nil, time.Now())

	s, err := state.Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res := state.Resource{Resource: "configmaps"}
	_ = s.Update(func(tx *state.Tx) error { return tx.SetBaseline(res.In(ns)) })
	if _, err := s.Reshard("0/1 by uid", func(string, string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	prev := state.MovedFrom{Count: 1}
	prev.SetEnd(0, end)
	if err := s.SetMovedFrom(prev, false); err != nil {
		t.Fatal(err)
	}
	l := &listing{res: cms, resharded: true, diff: true, baseline: true}
	got := ""
	_ = s.View(func(tx *state.Tx) error {
		k, baseline, err := l.reshardKnown(tx, res, ev)
		if err != nil {
			t.Fatal(err)
		}
		if !baseline {
			for _, r := range restart.Listed(cms, ev, k, event.Replay, s.DigestKey(), time.Now()) {
				got += string(r.Type)
			}
		}
		return nil
	})
	return got
}

// An object that moved in and was marked for deletion while the set was
// stopped (its deletionTimestamp set; a finalizer keeps it) changed after
// its old owner's end: the API server's graceful deletion writes no
// managedFields time, and its update must still replay.
func TestMovedInMarkedForDeletionReplays(t *testing.T) {
	ns := namespace(t)
	ri := dyn(t).Resource(cmGVR).Namespace(ns)
	create(t, cmGVR, ns, map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "held", "namespace": ns, "finalizers": []any{"dynwatch.io/test"}}})
	t.Cleanup(func() {
		_, _ = ri.Patch(context.Background(), "held", types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/finalizers"}]`), metav1.PatchOptions{})
	})
	time.Sleep(1100 * time.Millisecond)
	end := time.Now()
	time.Sleep(1100 * time.Millisecond)
	if err := ri.Delete(t.Context(), "held", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	u, err := ri.Get(t.Context(), "held", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u.GetDeletionTimestamp() == nil {
		t.Fatal("not marked for deletion")
	}
	raw, err := json.Marshal(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("deletionTimestamp %s, old owner's end %s, managedFields %s", u.GetDeletionTimestamp().UTC(), end.UTC(), mfTimes(u.GetManagedFields()))
	if got := movedInFires(t, ns, raw, end); got != "update" {
		t.Errorf("a moved-in object marked for deletion after its old owner's end fires %q, want a replayed update", got)
	}
}

func mfTimes(mf []metav1.ManagedFieldsEntry) []string {
	var out []string
	for _, e := range mf {
		out = append(out, e.Manager+"@"+e.Time.UTC().Format(time.RFC3339))
	}
	return out
}

// A shard new to the set at a reshard, with two clusters: the objects of
// its share are compared with their old shard's end in every cluster, not
// only in the one whose watches start first (each cluster's source starts
// its own). Created after that end, each fires a replayed add.
func TestNewShardWithClustersAdoptsEveryCluster(t *testing.T) {
	we := west(t)
	ns := namespace(t)
	wd := namespaceIn(t, we, ns)
	dbPath := filepath.Join(t.TempDir(), "state.db")
	s, err := state.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	prev := state.MovedFrom{Count: 1}
	prev.SetEnd(0, time.Now().Add(-time.Hour))                         // the old set stopped an hour ago
	if err := s.SetMovedFrom(prev, true, "east", "west"); err != nil { // as the daemon of a shard new to the set keeps it
		t.Fatal(err)
	}
	s.Close()
	createIn(t, wd, ns, "gap", "1") // created while the set was stopped
	create(t, cmGVR, ns, configMap(ns, "gap", map[string]any{"v": "1"}))
	cr := runClusters(t, clustersConfig(ns, dbPath, bothClusters), dbPath, we)
	cr.synced(t, "east")
	cr.synced(t, "west")
	time.Sleep(time.Second)
	want := []string{"east everywhere add gap", "west everywhere add gap", "west west-only add gap"}
	if got := seen(cr.out.snapshot()); !slices.Equal(got, want) {
		t.Errorf("a new shard with two clusters fires:\n%s\nwant (the adds of objects created while the set was stopped):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
