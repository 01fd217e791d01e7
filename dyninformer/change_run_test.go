package dyninformer

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/internal/testenv"
)

// SetThen's hook runs before any informer the call adds starts, even when Run
// begins while the hook runs (a reload or refresh that lands as the watcher
// starts its manager): the watcher publishes the pipeline there, and an event
// that came first would be routed by the previous one.
func TestSetThenHookPrecedesInformersWhenRunStartsMeanwhile(t *testing.T) {
	d := dynamic.NewForConfigOrDie(cluster(t))
	ns := testenv.Namespace(t, d)
	if _, err := d.Resource(cmGVR).Namespace(ns).Create(t.Context(), labelledConfigMap(ns, "a", "1"), metav1.CreateOptions{FieldManager: "test"}); err != nil {
		t.Fatal(err)
	}
	client, err := NewClient(cluster(t))
	if err != nil {
		t.Fatal(err)
	}
	col := &collector{}
	m := NewManager(client, col.handle, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	res := event.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	defer func() { cancel(); <-done }()
	eventsInHook := 0
	m.SetThen([]Watch{{Resource: res, Namespace: ns}}, ListsKnown, func(Change) {
		go func() { done <- m.Run(ctx) }()
		deadline := time.Now().Add(5 * time.Second)
		for len(col.events()) == 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		eventsInHook = len(col.events())
	})
	if eventsInHook != 0 {
		t.Errorf("%d events of the added informer before SetThen's hook returned; want none (it starts after the hook)", eventsInHook)
	}
}
