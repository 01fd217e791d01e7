package dyninformer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// testObject is an Object of the given namespace/name, uid and resourceVersion.
func testObject(t testing.TB, key, uid, rv string) *Object {
	t.Helper()
	ns, name, _ := strings.Cut(key, "/")
	o, err := parseObject(fmt.Appendf(nil, `{"metadata":{"namespace":%q,"name":%q,"uid":%q,"resourceVersion":%q}}`, ns, name, uid, rv), "", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// calls records what a handler is told, one line per call.
type calls struct {
	mu    sync.Mutex
	lines []string
}

func describe(obj any) string {
	switch o := obj.(type) {
	case *Object:
		return o.namespace + "/" + o.name + "@" + o.resourceVersion + "#" + o.uid
	case cache.DeletedFinalStateUnknown:
		return "tombstone " + o.Key + " last " + describe(o.Obj)
	case nil:
		return "nil"
	}
	return fmt.Sprintf("%T", obj)
}

func (c *calls) add(line string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines = append(c.lines, line)
}

func (c *calls) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(obj any, initial bool) { c.add(fmt.Sprintf("add %s initial=%v", describe(obj), initial)) },
		UpdateFunc: func(oldObj, newObj any) { c.add("update " + describe(oldObj) + " -> " + describe(newObj)) },
		DeleteFunc: func(obj any) { c.add("delete " + describe(obj)) },
	}
}

// got returns the lines so far, each run of tombstones sorted (a relist finds
// them in the order of a map).
func (c *calls) got() []string {
	c.mu.Lock()
	out := slices.Clone(c.lines)
	c.mu.Unlock()
	for i := 0; i < len(out); {
		j := i
		for j < len(out) && strings.HasPrefix(out[j], "delete tombstone") {
			j++
		}
		slices.Sort(out[i:j])
		i = max(j, i+1)
	}
	return out
}

// stage is one list and the watch events that follow it.
type stage struct {
	rv     string
	items  []*Object
	events []watch.Event
}

// scriptedSource serves the stages in turn: each list is the next stage's,
// and the watch after it sends that stage's events, then stays open.
type scriptedSource struct {
	mu     sync.Mutex
	stages []stage
	lists  int
}

func (s *scriptedSource) IsWatchListSemanticsUnSupported() bool { return true }

func (s *scriptedSource) listWatch() cache.ListerWatcher {
	return cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			st := s.stages[min(s.lists, len(s.stages)-1)]
			s.lists++
			l := &List{ListMeta: metav1.ListMeta{ResourceVersion: st.rv}}
			for _, o := range st.items {
				l.Items = append(l.Items, o)
			}
			return l, nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			s.mu.Lock()
			st := s.stages[min(s.lists, len(s.stages))-1]
			s.mu.Unlock()
			w := watch.NewFakeWithChanSize(len(st.events)+1, false)
			for _, ev := range st.events {
				w.Action(ev.Type, ev.Object)
			}
			return w, nil
		},
	}, s)
}

func gone() watch.Event {
	return watch.Event{Type: watch.Error, Object: &metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old resource version"}}
}

// script is a start, changes, a watch that ends in 410 Gone and a relist that
// finds what the watch missed: a delete, a change, an unchanged object, an
// object deleted and made again under its name, and a new one.
func script(t testing.TB) []stage {
	o := func(key, uid, rv string) *Object { return testObject(t, key, uid, rv) }
	return []stage{
		{rv: "10", items: []*Object{o("ns/a", "ua", "1"), o("ns/b", "ub", "2"), o("ns/c", "uc", "3"), o("ns/r", "ur", "4")},
			events: []watch.Event{
				{Type: watch.Modified, Object: o("ns/b", "ub", "11")},
				{Type: watch.Added, Object: o("ns/d", "ud", "12")},
				{Type: watch.Deleted, Object: o("ns/c", "uc", "13")},
				{Type: watch.Bookmark, Object: o("", "", "14")},
				gone(),
			}},
		{rv: "20", items: []*Object{o("ns/a", "ua", "1"), o("ns/b", "ub", "15"), o("ns/r", "ur2", "16"), o("ns/e", "ue", "17")},
			events: []watch.Event{
				{Type: watch.Modified, Object: o("ns/e", "ue", "21")},
				{Type: watch.Deleted, Object: o("ns/a", "ua", "22")},
			}},
	}
}

// TestControllerTellsWhatTheSharedInformerTold runs the same script through
// newController and through client-go's shared informer with one handler (what
// the informers were before): the handler is told the same, in the same order,
// and the stores end the same.
func TestControllerTellsWhatTheSharedInformerTold(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var ours, theirs calls
	var errs []error
	var errMu sync.Mutex
	onErr := func(_ context.Context, _ *cache.Reflector, err error) {
		errMu.Lock()
		errs = append(errs, err)
		errMu.Unlock()
	}
	store, ctrl := newController((&scriptedSource{stages: script(t)}).listWatch(), 0, "test", onErr, ours.handler(), nil)

	shared := cache.NewSharedIndexInformerWithOptions((&scriptedSource{stages: script(t)}).listWatch(), &Object{}, cache.SharedIndexInformerOptions{ObjectDescription: "test"})
	reg, err := shared.AddEventHandler(theirs.handler())
	if err != nil {
		t.Fatal(err)
	}
	go ctrl.RunWithContext(ctx)
	go shared.RunWithContext(ctx)

	want := []string{
		"add ns/a@1#ua initial=true", "add ns/b@2#ub initial=true", "add ns/c@3#uc initial=true", "add ns/r@4#ur initial=true",
		"update ns/b@2#ub -> ns/b@11#ub",
		"add ns/d@12#ud initial=false",
		"delete ns/c@13#uc",
		"delete tombstone ns/d last ns/d@12#ud",
		"update ns/a@1#ua -> ns/a@1#ua",
		"update ns/b@11#ub -> ns/b@15#ub",
		"update ns/r@4#ur -> ns/r@16#ur2",
		"add ns/e@17#ue initial=false",
		"update ns/e@17#ue -> ns/e@21#ue",
		"delete ns/a@22#ua",
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(ours.got()) < len(want) || len(theirs.got()) < len(want) {
		if time.Now().After(deadline) {
			t.Fatalf("not every call came:\nours:   %q\ntheirs: %q", ours.got(), theirs.got())
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // nothing more comes
	if !hasSynced(ctrl) || !reg.HasSynced() {
		t.Fatalf("synced: ours %v, theirs %v", hasSynced(ctrl), reg.HasSynced())
	}
	if got := theirs.got(); !slices.Equal(got, want) {
		t.Fatalf("the shared informer's calls are not the script's (the test is wrong):\n got %q\nwant %q", got, want)
	}
	if got := ours.got(); !slices.Equal(got, want) {
		t.Fatalf("calls:\n got %q\nwant %q", got, want)
	}
	keys, theirKeys := store.ListKeys(), shared.GetStore().ListKeys()
	slices.Sort(keys)
	slices.Sort(theirKeys)
	if !slices.Equal(keys, theirKeys) || !slices.Equal(keys, []string{"ns/b", "ns/e", "ns/r"}) {
		t.Fatalf("stores: ours %q, theirs %q", keys, theirKeys)
	}
	errMu.Lock()
	defer errMu.Unlock()
	if len(errs) != 0 {
		t.Fatalf("watch errors reported for a 410 Gone the reflector handles: %v", errs)
	}
}

// TestApplierResyncAndBookmark gives the applier what a resync and a bookmark
// pop, with AtomicFIFO (SyncAll) and without it (a Sync per object): each
// cached object is handed over unchanged, and a bookmark moves the store's
// resourceVersion and tells the handler nothing.
func TestApplierResyncAndBookmark(t *testing.T) {
	t.Parallel()
	var got calls
	store := cache.NewStore(cache.DeletionHandlingMetaNamespaceKeyFunc)
	p := &applier{store: store, h: got.handler()}
	a, b := testObject(t, "ns/a", "ua", "1"), testObject(t, "ns/b", "ub", "2")
	steps := []cache.Deltas{
		{{Type: cache.ReplacedAll, Object: cache.ReplacedAllInfo{ResourceVersion: "5", Objects: []any{a, b}}}},
		{{Type: cache.SyncAll, Object: cache.SyncAllInfo{}}},
		{{Type: cache.Sync, Object: a}},
		{{Type: cache.Bookmark, Object: cache.BookmarkInfo{ResourceVersion: "9"}}},
	}
	for _, d := range steps {
		if err := p.apply(d, false); err != nil {
			t.Fatal(err)
		}
	}
	lines := got.got()
	slices.Sort(lines[2:4]) // a resync goes through the store in a map's order
	want := []string{
		"add ns/a@1#ua initial=false", "add ns/b@2#ub initial=false",
		"update ns/a@1#ua -> ns/a@1#ua", "update ns/b@2#ub -> ns/b@2#ub",
		"update ns/a@1#ua -> ns/a@1#ua",
	}
	if !slices.Equal(lines, want) {
		t.Fatalf("calls:\n got %q\nwant %q", lines, want)
	}
	if rv := store.LastStoreSyncResourceVersion(); rv != "9" {
		t.Fatalf("store's resourceVersion after the bookmark: %q, want 9", rv)
	}
	if err := p.apply(cache.Deltas{{Type: cache.ReplacedAll, Object: "not info"}}, false); err == nil {
		t.Fatal("a ReplacedAll without its info was applied")
	}
	if err := p.apply("not deltas", false); err == nil {
		t.Fatal("a pop that is not deltas was applied")
	}
}

// TestControllerReportsListErrors: what the reflector cannot list reaches the
// watch error handler (the manager's outage reports and /readyz), and the
// handler is told nothing.
func TestControllerReportsListErrors(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	forbidden := errors.New(`configmaps is forbidden: User "dynwatch" cannot list resource "configmaps"`)
	lw := cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) { return nil, forbidden },
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return nil, errors.New("no watch before a list")
		},
	}, &scriptedSource{})
	reported := make(chan error, 10)
	var got calls
	_, ctrl := newController(lw, 0, "test", func(_ context.Context, _ *cache.Reflector, err error) {
		select {
		case reported <- err:
		default:
		}
	}, got.handler(), nil)
	go ctrl.RunWithContext(ctx)
	select {
	case err := <-reported:
		if !errors.Is(err, forbidden) && !strings.Contains(err.Error(), forbidden.Error()) {
			t.Fatalf("reported %v, want the list's error", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the list's error was not reported")
	}
	if hasSynced(ctrl) || len(got.got()) != 0 {
		t.Fatalf("synced %v, calls %q", hasSynced(ctrl), got.got())
	}
}

// TestControllerFloodTellsWhatTheSharedInformerTold: 3000 watch events on 16
// objects (changes, deletes, the same names made again) that queue up at once,
// so that the FIFO pops them in batches and holds its lock past 2000 queued:
// the handler is told each of them, in the order the watch brought them, as
// the shared informer's handler is.
func TestControllerFloodTellsWhatTheSharedInformerTold(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var events []watch.Event
	uids := map[string]string{}
	for i := range 3000 {
		key := fmt.Sprintf("ns/o%d", (i*7)%16)
		rv := fmt.Sprint(100 + i)
		switch uid, ok := uids[key]; {
		case !ok:
			uids[key] = fmt.Sprintf("u%d", i)
			events = append(events, watch.Event{Type: watch.Added, Object: testObject(t, key, uids[key], rv)})
		case i%5 == 0:
			delete(uids, key)
			events = append(events, watch.Event{Type: watch.Deleted, Object: testObject(t, key, uid, rv)})
		default:
			events = append(events, watch.Event{Type: watch.Modified, Object: testObject(t, key, uid, rv)})
		}
	}
	flood := func() []stage { return []stage{{rv: "10", events: events}} }
	var ours, theirs calls
	_, ctrl := newController((&scriptedSource{stages: flood()}).listWatch(), 0, "test", nil, ours.handler(), nil)
	shared := cache.NewSharedIndexInformerWithOptions((&scriptedSource{stages: flood()}).listWatch(), &Object{}, cache.SharedIndexInformerOptions{ObjectDescription: "test"})
	if _, err := shared.AddEventHandler(theirs.handler()); err != nil {
		t.Fatal(err)
	}
	go ctrl.RunWithContext(ctx)
	go shared.RunWithContext(ctx)
	deadline := time.Now().Add(30 * time.Second)
	for len(ours.got()) < len(events) || len(theirs.got()) < len(events) {
		if time.Now().After(deadline) {
			t.Fatalf("calls: ours %d, theirs %d, of %d", len(ours.got()), len(theirs.got()), len(events))
		}
		time.Sleep(10 * time.Millisecond)
	}
	got, want := ours.got(), theirs.got()
	if !slices.Equal(got, want) {
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Fatalf("call %d: ours %q, theirs %q", i, got[i], want[i])
			}
		}
		t.Fatalf("ours %d calls, theirs %d", len(got), len(want))
	}
}
