package watcher

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/restart"
	"github.com/dynwatch/dynwatch/state"
)

// movedInFires is what the listed object raw, without a record, fires after
// a reshard whose old owner ended at end.
func movedInFires(t *testing.T, ns string, raw []byte, end time.Time) string {
	t.Helper()
	return movedInFiresWith(t, ns, raw, end, nil)
}

// movedInFiresWith is movedInFires where the old owner also published
// marks (nil: none).
func movedInFiresWith(t *testing.T, ns string, raw []byte, end time.Time, marks map[string]string) string {
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
	if marks != nil {
		prev.SetMarks(0, marks)
	}
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
