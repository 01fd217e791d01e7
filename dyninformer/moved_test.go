package dyninformer

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/internal/testenv"
)

// hpa is a HorizontalPodAutoscaler, served as autoscaling/v1 and v2.
func hpa(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"scaleTargetRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
			"minReplicas":    int64(1), "maxReplicas": int64(2),
		}}}
}

// TestAMovedWatchStartsAfterTheOldVersionsLastCall: when a watch moves
// versions (HorizontalPodAutoscalers, autoscaling/v1 to autoscaling/v2) while
// the old version's handler call is in flight, the new version's informer
// starts only once that call has ended, so no event of the old version comes
// after one of the new (the two share each object's order).
func TestAMovedWatchStartsAfterTheOldVersionsLastCall(t *testing.T) {
	t.Parallel()
	d := dynamic.NewForConfigOrDie(cluster(t))
	ns := testenv.Namespace(t, d)
	hpas := schema.GroupVersionResource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"}
	if _, err := d.Resource(hpas).Namespace(ns).Create(t.Context(), hpa("a"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	client, err := NewClient(restConfig)
	if err != nil {
		t.Fatal(err)
	}
	h := newBlockingHandler()
	m := NewManager(client, h.handle, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	res := func(v string) Watch {
		return Watch{Resource: event.Resource{Group: "autoscaling", Version: v, Resource: "horizontalpodautoscalers", Kind: "HorizontalPodAutoscaler", Namespaced: true}, Namespace: ns}
	}
	m.Set([]Watch{res("v1")}, ListsKnown)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	released := false
	t.Cleanup(func() {
		if !released {
			close(h.release)
		}
		cancel()
		<-done
	})
	if !m.WaitForSync(t.Context()) {
		t.Fatal("no sync")
	}
	if _, err := d.Resource(hpas).Namespace(ns).Create(t.Context(), hpa("block"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the add of block never reached the handler")
	}
	setDone := make(chan struct{})
	go func() {
		m.Set([]Watch{res("v2")}, ListsKnown)
		close(setDone)
	}()
	if !waitBlockedOrDone(t, setDone, "dyninformer.(*Manager).Set", "dyninformer.(*handlerCalls).stop") {
		t.Fatal("Set returned while the stopped watch's handler call was in flight")
	}
	if n := m.Started(); n != 1 {
		// Show what it leads to: the new version's initial list is handed
		// over while the old version's live add is still to come.
		testenv.WaitFor(t, "an event of v2", 20*time.Second, func() bool {
			for _, ev := range h.events() {
				if ev.Resource.Version == "v2" {
					return true
				}
			}
			return false
		})
		t.Errorf("the v2 informer started (%d informers) while v1's call was in flight; handed before v1's add of block: %v", n, names(h.events()))
	}
	close(h.release)
	released = true
	<-setDone
	testenv.WaitFor(t, "v2's initial list", 20*time.Second, func() bool { return len(h.events()) >= 4 })
	var order []string
	for _, ev := range h.events() {
		order = append(order, ev.Resource.Version+":"+ev.Name)
	}
	if order[1] != "v1:block" {
		t.Errorf("events %v: v1's add of block is not the second", order)
	}
}
