package dyninformer

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/internal/testenv"
)

// blockingHandler records events like a collector, but the call for the live
// add of the config map named block waits until release is closed.
type blockingHandler struct {
	collector
	entered, release chan struct{}
	once             sync.Once
	inFlight         atomic.Int32
	overlapped       atomic.Bool // two calls ran at once
}

func newBlockingHandler() *blockingHandler {
	return &blockingHandler{entered: make(chan struct{}), release: make(chan struct{})}
}

func (h *blockingHandler) handle(k Key, ev *event.Event) {
	if h.inFlight.Add(1) > 1 {
		h.overlapped.Store(true)
	}
	defer h.inFlight.Add(-1)
	if ev.Name == "block" && ev.Origin == event.Live {
		h.once.Do(func() { close(h.entered) })
		<-h.release
	}
	h.collector.handle(k, ev)
}

// startBlocked runs a manager over the config maps of a new namespace that
// holds a, and returns once the handler is blocked in the live add of block.
func startBlocked(t *testing.T, h *blockingHandler) (*Manager, Key) {
	t.Helper()
	d := dynamic.NewForConfigOrDie(cluster(t))
	ns := namespace(t, d)
	if _, err := d.Resource(cmGVR).Namespace(ns).Create(t.Context(), configMap("a", "1"), metav1.CreateOptions{}); err != nil {
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
	if _, err := d.Resource(cmGVR).Namespace(ns).Create(t.Context(), configMap("block", "1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the add of block never reached the handler")
	}
	return m, w.Key()
}

// blockedIn reports whether a goroutine waits for a mutex inside fn, called
// from caller.
func blockedIn(caller, fn string) bool {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range strings.Split(string(buf), "\n\n") {
		header, _, _ := strings.Cut(g, "\n")
		if strings.Contains(header, "sync.Mutex.Lock") && strings.Contains(g, fn) && strings.Contains(g, caller) {
			return true
		}
	}
	return false
}

// waitBlockedOrDone waits until done is closed (false) or a goroutine waits
// for a mutex inside fn, called from caller (true).
func waitBlockedOrDone(t *testing.T, done <-chan struct{}, caller, fn string) bool {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return false
		default:
		}
		if blockedIn(caller, fn) {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("neither done nor waiting in %s", fn)
	return false
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

func names(evs []*event.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Name
	}
	return out
}
