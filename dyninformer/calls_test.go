package dyninformer

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/internal/testenv"
)

// startBlocked runs a manager over the config maps of a new namespace that
// holds a, and returns once the handler is blocked in the live add of block.
func startBlocked(t *testing.T, h *blockingHandler) (*Manager, Key) {
	t.Helper()
	d := dynamic.NewForConfigOrDie(cluster(t))
	ns := testenv.Namespace(t, d)
	if _, err := d.Resource(cmGVR).Namespace(ns).Create(t.Context(), labelledConfigMap(ns, "a", "1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	client, err := NewClient(restConfig)
	if err != nil {
		t.Fatal(err)
	}
	m := NewManager(client, h.handle, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	w := Watch{Resource: event.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}, Namespace: ns}
	m.Set([]Watch{w}, ListsKnown)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		select {
		case <-h.release:
		default:
			close(h.release) // a failed test leaves the handler blocked
		}
		cancel()
		<-done
	})
	if !m.WaitForSync(t.Context()) {
		t.Fatal("no sync")
	}
	if _, err := d.Resource(cmGVR).Namespace(ns).Create(t.Context(), labelledConfigMap(ns, "block", "1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the add of block never reached the handler")
	}
	return m, w.Key()
}

// TestSetWaitsForTheStoppedWatchsHandlerCall: Set, stopping a watch whose
// handler call is in flight, returns only after that call has returned, so no
// event of the old watch is handed over after Set.
func TestSetWaitsForTheStoppedWatchsHandlerCall(t *testing.T) {
	t.Parallel()
	h := newBlockingHandler()
	m, _ := startBlocked(t, h)
	setDone := make(chan struct{})
	go func() {
		m.Set(nil, ListsKnown)
		close(setDone)
	}()
	if !waitBlockedOrDone(t, setDone, "dyninformer.(*Manager).Set", "dyninformer.(*handlerCalls).stop") {
		t.Fatal("Set returned while the stopped watch's handler call was in flight")
	}
	close(h.release)
	<-setDone
	// Whatever was handed over was handed over before Set returned.
	evs := h.events()
	if !slices.ContainsFunc(evs, func(ev *event.Event) bool { return ev.Name == "block" }) {
		t.Errorf("Set returned before the call in flight had ended; events %v", names(evs))
	}
	if h.inFlight.Load() != 0 {
		t.Error("a handler call is running after Set returned")
	}
}

// TestReplayAndTheInformerCallTheHandlerInTurn: Replay waits for the
// informer's handler call in flight; the two never run at once, and the
// replayed adds come after it.
func TestReplayAndTheInformerCallTheHandlerInTurn(t *testing.T) {
	t.Parallel()
	h := newBlockingHandler()
	m, k := startBlocked(t, h)
	replayDone := make(chan struct{})
	go func() {
		m.Replay(k, 7)
		close(replayDone)
	}()
	blocked := waitBlockedOrDone(t, replayDone, "dyninformer.(*Manager).Replay", "dyninformer.(*handlerCalls).serial")
	if h.overlapped.Load() {
		t.Fatal("Replay called the handler while the informer's call was in flight")
	}
	if !blocked {
		t.Fatal("Replay returned while the informer's call was in flight")
	}
	close(h.release)
	<-replayDone
	testenv.WaitFor(t, "the replayed adds", 20*time.Second, func() bool { return len(h.events()) >= 4 })
	got := names(h.events())
	if !slices.Equal(got[:2], []string{"a", "block"}) || !slices.Contains(got[2:], "a") || !slices.Contains(got[2:], "block") {
		t.Errorf("events %v, want a's and block's adds, then the replay of both", got)
	}
	if h.overlapped.Load() {
		t.Error("two handler calls ran at once")
	}
}
