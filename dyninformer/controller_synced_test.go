package dyninformer

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/tools/cache"
)

// Review of ca9bc5d (the informer as client-go's controller, the handler
// called from the FIFO's pop).
//
// The tests that flip client-go's feature gates are not parallel: the gates
// are global, and Go runs the sequential tests of a package before resuming
// its parallel ones, so no other test builds a controller meanwhile.

// deepQueue is a start with one object, then more watch events than the
// RealFIFO lets queue up while it processes unlocked (2 batches of 1000: with
// more queued, it holds its lock while Process, and so the handler, runs).
func deepQueue(t testing.TB, n int) []stage {
	evs := make([]watch.Event, 0, n)
	for i := range n {
		evs = append(evs, watch.Event{Type: watch.Modified, Object: testObject(t, "ns/b", "ub", fmt.Sprint(100+i))})
	}
	return []stage{{rv: "10", items: []*Object{testObject(t, "ns/a", "ua", "1"), testObject(t, "ns/b", "ub", "2")}, events: evs}}
}

// askingHandler counts its calls; each asks synced() what it reports (what a
// handler does that calls Manager.KeySynced, HasSynced or Statuses, which
// the Handler doc does not forbid: only Set and Replay wait for its calls).
// The first call waits for slow, so that the watch's events queue up behind
// it.
type askingHandler struct {
	n      atomic.Int64
	synced atomic.Pointer[func() bool]
	slow   time.Duration
}

func (h *askingHandler) call() {
	if h.n.Add(1) == 1 {
		time.Sleep(h.slow)
	}
	if f := h.synced.Load(); f != nil {
		(*f)()
	}
}

func (h *askingHandler) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(any, bool) { h.call() },
		UpdateFunc: func(any, any) { h.call() },
		DeleteFunc: func(any) { h.call() },
	}
}

// waitCalls waits for want calls of h; false if they did not all come.
func waitCalls(h *askingHandler, want int64, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for h.n.Load() < want {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// handlerAsksSynced runs the stages through newController and through a
// shared informer (what dyninformer was before ca9bc5d), with a handler that
// asks whether its informer has synced on every call, and fails if either
// stops delivering.
func handlerAsksSynced(t *testing.T, stages func() []stage, want int64, slow time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var theirs askingHandler
	theirs.slow = slow
	shared := cache.NewSharedIndexInformerWithOptions((&scriptedSource{stages: stages()}).listWatch(), &Object{}, cache.SharedIndexInformerOptions{ObjectDescription: "test"})
	reg, err := shared.AddEventHandler(theirs.handler())
	if err != nil {
		t.Fatal(err)
	}
	regSynced := reg.HasSynced
	theirs.synced.Store(&regSynced)
	go shared.RunWithContext(ctx)

	var ours askingHandler
	ours.slow = slow
	_, ctrl := newController((&scriptedSource{stages: stages()}).listWatch(), 0, "test", nil, ours.handler(), nil)
	ctrlSynced := func() bool { return hasSynced(ctrl) }
	ours.synced.Store(&ctrlSynced)
	go ctrl.RunWithContext(ctx)

	if !waitCalls(&theirs, want, 20*time.Second) {
		t.Fatalf("the shared informer's handler got %d calls of %d (the test is wrong)", theirs.n.Load(), want)
	}
	if !waitCalls(&ours, want, 20*time.Second) {
		// The controller's goroutine is stuck for good: Pop holds the FIFO's
		// lock while Process calls the handler, and HasSynced takes it.
		t.Fatalf("deadlock: the handler got %d calls of %d; the one asking HasSynced from inside the handler never returned", ours.n.Load(), want)
	}
}

// TestHandlerMayAskHasSyncedWithoutAtomicFIFO: without AtomicFIFO
// (KUBE_FEATURE_AtomicFIFO=false, which newController supports) the RealFIFO
// never unlocks while processing, so a handler that asks HasSynced (the
// manager's KeySynced, HasSynced, Statuses all do) deadlocks on its first
// call. The shared informer's registration never took that lock.
func TestHandlerMayAskHasSyncedWithoutAtomicFIFO(t *testing.T) {
	clientfeaturestesting.SetFeatureDuringTest(t, features.AtomicFIFO, false)
	handlerAsksSynced(t, func() []stage { return script(t) }, 14, 0)
}

// TestHandlerMayAskHasSyncedWithADeepQueue: with the default gates,
// once 2000 deltas are queued behind a slow handler call the RealFIFO
// processes with its lock held, and the same handler deadlocks.
func TestHandlerMayAskHasSyncedWithADeepQueue(t *testing.T) {
	if !features.FeatureGates().Enabled(features.AtomicFIFO) || !features.FeatureGates().Enabled(features.UnlockWhileProcessingFIFO) {
		t.Skip("for the default gates")
	}
	const n = 2100
	handlerAsksSynced(t, func() []stage { return deepQueue(t, n) }, 2+n, 1500*time.Millisecond)
}

// TestSyncedAnswersWhileAHandlerCallRuns: /readyz (Statuses), the
// durable listings (KeySynced) and WaitForSync (HasSynced) ask whether an
// informer has synced from their own goroutines. Before ca9bc5d the answer
// never waited for the handler; now, whenever the FIFO processes locked
// (AtomicFIFO off, or 2000 deltas queued), it waits for the handler call in
// flight, and Statuses and HasSynced wait holding the manager's mu, so Set,
// Replay and Watches wait too.
func TestSyncedAnswersWhileAHandlerCallRuns(t *testing.T) {
	clientfeaturestesting.SetFeatureDuringTest(t, features.AtomicFIFO, false)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	entered, release := make(chan struct{}), make(chan struct{})
	var once atomic.Bool
	block := func() {
		if once.CompareAndSwap(false, true) {
			close(entered)
			<-release // a handler handing on to a full sink
		}
	}
	h := cache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(any, bool) {},
		UpdateFunc: func(any, any) { block() },
		DeleteFunc: func(any) {},
	}
	_, ctrl := newController((&scriptedSource{stages: script(t)}).listWatch(), 0, "test", nil, h, nil)
	go ctrl.RunWithContext(ctx)
	defer close(release)
	select {
	case <-entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the handler was never called with the update")
	}
	answered := make(chan bool, 1)
	go func() { answered <- hasSynced(ctrl) }()
	select {
	case synced := <-answered:
		if !synced {
			t.Fatal("not synced after the initial list was handed over")
		}
	case <-time.After(2 * time.Second):
		t.Fatal("HasSynced waits for the handler call in flight (the FIFO's lock is held while Process runs)")
	}
}

// TestNotSyncedWhileTheInitialListIsHandedOver: HasSynced is false while
// the handler is being handed the initial list, and true once it has been
// handed all of it (a regression test: it holds).
func TestNotSyncedWhileTheInitialListIsHandedOver(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	entered, release := make(chan struct{}), make(chan struct{})
	var adds atomic.Int64
	h := cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(_ any, initial bool) {
			if initial && adds.Add(1) == 4 { // the initial list's last
				close(entered)
				<-release
			}
		},
		UpdateFunc: func(any, any) {},
		DeleteFunc: func(any) {},
	}
	_, ctrl := newController((&scriptedSource{stages: script(t)}).listWatch(), 0, "test", nil, h, nil)
	go ctrl.RunWithContext(ctx)
	select {
	case <-entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the initial list never reached the handler")
	}
	time.Sleep(100 * time.Millisecond)
	if hasSynced(ctrl) {
		t.Fatal("synced while the handler is still being handed the initial list")
	}
	close(release)
	deadline := time.Now().Add(10 * time.Second)
	for !hasSynced(ctrl) {
		if time.Now().After(deadline) {
			t.Fatal("not synced once the initial list was handed over")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestScriptWithoutAtomicFIFO: the script of
// TestControllerTellsWhatTheSharedInformerTold, through a FIFO without
// AtomicFIFO (Replaced deltas and DeletedFinalStateUnknown from the FIFO's own
// reconcile, KnownObjects the store): the same calls as the shared informer's
// (a regression test: it holds).
func TestScriptWithoutAtomicFIFO(t *testing.T) {
	clientfeaturestesting.SetFeatureDuringTest(t, features.AtomicFIFO, false)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ours, theirs calls
	_, ctrl := newController((&scriptedSource{stages: script(t)}).listWatch(), 0, "test", nil, ours.handler(), nil)
	shared := cache.NewSharedIndexInformerWithOptions((&scriptedSource{stages: script(t)}).listWatch(), &Object{}, cache.SharedIndexInformerOptions{ObjectDescription: "test"})
	if _, err := shared.AddEventHandler(theirs.handler()); err != nil {
		t.Fatal(err)
	}
	go ctrl.RunWithContext(ctx)
	go shared.RunWithContext(ctx)
	const want = 14
	deadline := time.Now().Add(20 * time.Second)
	for len(ours.got()) < want || len(theirs.got()) < want {
		if time.Now().After(deadline) {
			t.Fatalf("not every call came:\nours:   %q\ntheirs: %q", ours.got(), theirs.got())
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	if got, exp := ours.got(), theirs.got(); !slices.Equal(got, exp) {
		t.Fatalf("calls:\n ours   %q\n theirs %q", got, exp)
	}
}
