package dyninformer

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/internal/testenv"
)

var deployGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

// Against the API server, each update's actor is the field manager of the
// write, with its operation and subresource: an update (kubectl's
// client-side apply), a merge patch (kubectl patch), a server-side apply,
// a write of the status subresource; two managers writing within one second
// tie, and the second write's actor is its own manager, whichever of the two
// the server lists last; a delete's is the last writer.
func TestActorAgainstTheAPIServer(t *testing.T) {
	d := dynamic.NewForConfigOrDie(cluster(t))
	ns := testenv.Namespace(t, d)
	client, err := NewClient(cluster(t))
	if err != nil {
		t.Fatal(err)
	}
	col := &collector{}
	m := NewManager(client, col.handle, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	defer func() { cancel(); <-done }()
	go func() { done <- m.Run(ctx) }()
	m.Set([]Watch{
		{Resource: event.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}, Namespace: ns},
		{Resource: event.Resource{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment", Namespaced: true}, Namespace: ns},
	}, ListsKnown)
	testenv.WaitFor(t, "the informers to list", 20*time.Second, m.HasSynced)
	cms := d.Resource(cmGVR).Namespace(ns)
	// actorOf waits for the event of the write that returned obj.
	actorOf := func(obj *unstructured.Unstructured, typ event.Type) *event.Actor {
		t.Helper()
		var found *event.Event
		testenv.WaitFor(t, fmt.Sprintf("the %s of %s at %s", typ, obj.GetName(), obj.GetResourceVersion()), 20*time.Second, func() bool {
			for _, ev := range col.events() {
				if ev.Type == typ && ev.Name == obj.GetName() && (typ == event.Delete || ev.ResourceVersion == obj.GetResourceVersion()) {
					found = ev
					return true
				}
			}
			return false
		})
		if found.Actor == nil {
			t.Fatalf("the %s of %s at %s has no actor", typ, obj.GetName(), obj.GetResourceVersion())
		}
		return found.Actor
	}
	check := func(what string, got *event.Actor, manager, operation, subresource string) {
		t.Helper()
		if got.Manager != manager || got.Operation != operation || got.Subresource != subresource {
			t.Errorf("%s: actor %+v, want %s %s %q", what, *got, manager, operation, subresource)
		}
		if _, err := time.Parse(time.RFC3339, got.Time); err != nil {
			t.Errorf("%s: time %q: %v", what, got.Time, err)
		}
	}

	cm, err := cms.Create(t.Context(), labelledConfigMap(ns, "c", "0"), metav1.CreateOptions{FieldManager: "creator"})
	if err != nil {
		t.Fatal(err)
	}
	cm.Object["data"] = map[string]any{"v": "1"}
	if cm, err = cms.Update(t.Context(), cm, metav1.UpdateOptions{FieldManager: "kubectl-client-side-apply"}); err != nil {
		t.Fatal(err)
	}
	check("update", actorOf(cm, event.Update), "kubectl-client-side-apply", "Update", "")
	if cm, err = cms.Patch(t.Context(), "c", types.MergePatchType, []byte(`{"data":{"p":"1"}}`), metav1.PatchOptions{FieldManager: "kubectl-patch"}); err != nil {
		t.Fatal(err)
	}
	check("patch", actorOf(cm, event.Update), "kubectl-patch", "Update", "")
	apply := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"s":"1"}}`)
	force := true
	if cm, err = cms.Patch(t.Context(), "c", types.ApplyPatchType, apply, metav1.PatchOptions{FieldManager: "dynwatch-test-apply", Force: &force}); err != nil {
		t.Fatal(err)
	}
	check("server-side apply", actorOf(cm, event.Update), "dynwatch-test-apply", "Apply", "")

	// Two managers within one second: zz-writer then aa-writer, which the
	// server lists first (it sorts a second's entries by manager).
	for attempt := 0; ; attempt++ {
		if cm, err = cms.Patch(t.Context(), "c", types.MergePatchType, fmt.Appendf(nil, `{"data":{"zz":"%d"}}`, attempt), metav1.PatchOptions{FieldManager: "zz-writer"}); err != nil {
			t.Fatal(err)
		}
		check("the first write of the second", actorOf(cm, event.Update), "zz-writer", "Update", "")
		if cm, err = cms.Patch(t.Context(), "c", types.MergePatchType, fmt.Appendf(nil, `{"data":{"aa":"%d"}}`, attempt), metav1.PatchOptions{FieldManager: "aa-writer"}); err != nil {
			t.Fatal(err)
		}
		times := map[string]string{}
		for _, e := range cm.GetManagedFields() {
			times[e.Manager] = e.Time.UTC().Format(time.RFC3339)
		}
		if times["aa-writer"] != times["zz-writer"] {
			if attempt == 10 {
				t.Fatalf("no two writes within one second in %d attempts", attempt+1)
			}
			continue // a second passed between them: no tie, try again
		}
		check("the second write of the second", actorOf(cm, event.Update), "aa-writer", "Update", "")
		break
	}

	if err := cms.Delete(t.Context(), "c", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	check("delete", actorOf(cm, event.Delete), "aa-writer", "Update", "")

	deps := d.Resource(deployGVR).Namespace(ns)
	dep, err := deps.Create(t.Context(), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web"},
		"spec": map[string]any{
			"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "web", "image": "registry.example.com/web:1"}}}},
		},
	}}, metav1.CreateOptions{FieldManager: "creator"})
	if err != nil {
		t.Fatal(err)
	}
	dep.Object["status"] = map[string]any{"observedGeneration": int64(1)}
	if dep, err = deps.UpdateStatus(t.Context(), dep, metav1.UpdateOptions{FieldManager: "status-writer"}); err != nil {
		t.Fatal(err)
	}
	check("status", actorOf(dep, event.Update), "status-writer", "Update", "status")
}
