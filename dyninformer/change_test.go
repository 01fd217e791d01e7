package dyninformer

import (
	"context"
	"io"
	"log/slog"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/internal/testenv"
)

// SetThen is one call: its hook gets the epoch the new informers' events
// carry and the watches it starts, before any of their events comes; the
// change it returns is the same.
func TestSetThenHandsItsChangeBeforeTheInformersStart(t *testing.T) {
	d := dynamic.NewForConfigOrDie(cluster(t))
	first, second := testenv.Namespace(t, d), testenv.Namespace(t, d)
	if _, err := d.Resource(cmGVR).Namespace(second).Create(t.Context(), labelledConfigMap(second, "a", "1"), metav1.CreateOptions{FieldManager: "test"}); err != nil {
		t.Fatal(err)
	}
	client, err := NewClient(cluster(t))
	if err != nil {
		t.Fatal(err)
	}
	col := &collector{}
	m := NewManager(client, col.handle, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	res := event.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}
	m.Set([]Watch{{Resource: res, Namespace: first}}, ListsKnown) // epoch 0
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	defer func() { cancel(); <-done }()
	if !m.WaitForSync(t.Context()) {
		t.Fatal("no sync")
	}

	var hooked Change
	eventsInHook := -1
	got := m.SetThen([]Watch{{Resource: res, Namespace: first}, {Resource: res, Namespace: second}}, ListsKnown, func(c Change) {
		hooked, eventsInHook = c, len(col.events())
	})
	if got.Epoch != 1 || hooked.Epoch != got.Epoch {
		t.Errorf("SetThen's epoch %d, its hook's %d; want 1 for both (the second set)", got.Epoch, hooked.Epoch)
	}
	if len(got.Started) != 1 || got.Started[0].Namespace != second || len(hooked.Started) != 1 || hooked.Started[0].Namespace != second {
		t.Errorf("started %+v, hook's %+v; want only the watch of %s", got.Started, hooked.Started, second)
	}
	if eventsInHook != 0 {
		t.Errorf("%d events before the hook returned; want none (the new informer starts after it)", eventsInHook)
	}
	for _, ev := range col.waitFor(t, 1) {
		if ev.Namespace != second || ev.Epoch != got.Epoch || ev.Origin != event.InitialList {
			t.Errorf("event %s/%s epoch %d origin %v; want %s/a of epoch %d, an initial list", ev.Namespace, ev.Name, ev.Epoch, ev.Origin, second, got.Epoch)
		}
	}
}
