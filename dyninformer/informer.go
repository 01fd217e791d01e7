package dyninformer

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/dynwatch/dynwatch/event"
)

type entry struct {
	watch Watch
	// store is the informer's cache; ctrl runs it (controller.go).
	store  cache.Store
	ctrl   cache.Controller
	cancel context.CancelFunc
	// known marks informers whose initial list holds objects that are not new
	// to dynwatch: those that start with it or with a reload, or that replace a
	// watch on another version of the same resource. The adds of their initial
	// list have origin InitialList, and onStart decides whether they fire.
	known bool
	// moved marks informers that replace a watch on another version of the same
	// resource: their initial list holds nothing new (origin Relist).
	moved bool
	// epoch is the Set call that started the informer.
	epoch uint64
	// pending marks an entry a SetThen added and has yet to start, once its
	// hook has run; Run leaves it to that SetThen (m.mu guards it).
	pending bool
	calls   handlerCalls

	mu       sync.Mutex
	lastErr  string
	watchErr error
	// seen is when the watch last delivered an event or a bookmark (Unix ns).
	seen atomic.Int64
	// listed is the resourceVersion of the informer's first complete list
	// (paged, or a watch-list's snapshot), as the reflector hands it to the
	// FIFO (listedFIFO).
	listed atomic.Pointer[string]
}

// noteListed notes rv as the informer's first list's, once.
func (e *entry) noteListed(rv string) {
	if rv != "" {
		e.listed.CompareAndSwap(nil, &rv)
	}
}

func (m *Manager) newEntry(w Watch) *entry {
	k := w.Key()
	e := &entry{watch: w}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			l, err := m.client.List(ctx, k.GVR, w.Namespace, paged(opts))
			if err != nil {
				return nil, err // not a nil *List in the interface
			}
			return l, nil
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.AllowWatchBookmarks = true
			// Every event and bookmark it delivers, not an ERROR event, tells
			// that the watch is alive (/readyz): see touchbody.go.
			wi, err := m.client.Watch(withTouch(ctx, func() { e.seen.Store(m.now().UnixNano()) }), k.GVR, w.Namespace, opts)
			if err != nil {
				return nil, err
			}
			m.watchRecovered(e)
			return wi, nil
		},
	}
	// The client streams the initial list as watch events when client-go's
	// WatchListClient feature is on (KUBE_FEATURE_WatchListClient), and lists
	// in pages when it is off; its decoder serves both.
	onErr := func(_ context.Context, _ *cache.Reflector, err error) { m.watchError(e, err) }
	e.store, e.ctrl = newController(cache.ToListWatcherWithWatchListSemantics(lw, m.client), m.resync, k.GVR.String(), onErr,
		cache.ResourceEventHandlerDetailedFuncs{
			AddFunc: func(obj any, initial bool) {
				ev := m.event(e, event.Add, obj, nil)
				if ev != nil {
					ev.Origin, ev.Epoch = e.origin(initial), e.epoch
					m.hand(e, ev)
				}
			},
			UpdateFunc: func(oldObj, newObj any) {
				if replaced(oldObj, newObj) {
					// A relist after a watch gap (410 Gone) found another object
					// under the name: the old one was deleted and a new one made.
					m.hand(e, m.event(e, event.Delete, oldObj, nil), m.event(e, event.Add, newObj, nil))
					return
				}
				m.hand(e, m.event(e, event.Update, newObj, oldObj))
			},
			DeleteFunc: func(obj any) {
				if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = t.Obj
				}
				m.hand(e, m.event(e, event.Delete, obj, nil))
			},
		},
		// A complete list, its resourceVersion: a paged list's is its first
		// page's (client-go's pager keeps it), a watch-list's its
		// initial-events-end bookmark's. A list given up, or one whose last
		// page came but that the reflector could not hold, is never noted.
		e.noteListed)
	return e
}

// paged turns the reflector's first list (resourceVersion "0": any version
// the API server has cached) into a consistent list (""), which the API server
// serves in pages of the reflector's limit. Its watch cache ignores the limit
// of a list at "0" and sends every object in one response, which would be held
// whole while it is split: for 10 000 Deployments, 200 MB of peak memory
// instead of 85. (With client-go's streaming watch-list, the default, the
// initial list is a stream and no list is made.)
func paged(opts metav1.ListOptions) metav1.ListOptions {
	if opts.ResourceVersion == "0" && opts.Continue == "" && opts.ResourceVersionMatch == "" {
		opts.ResourceVersion = ""
	}
	return opts
}

// replaced reports whether an update is between two objects of one name but
// different uids.
func replaced(oldObj, newObj any) bool {
	o, ok1 := oldObj.(*Object)
	n, ok2 := newObj.(*Object)
	return ok1 && ok2 && o.uid != n.uid
}

// origin is where an add from e's informer comes from.
func (e *entry) origin(initial bool) event.Origin {
	switch {
	case !initial:
		return event.Live
	case e.moved:
		return event.Relist
	case e.known:
		return event.InitialList
	}
	return event.Live // a resource that appeared: everything in it is new
}

// event turns what an informer handed over into an Event, sharing the cached
// bytes; nil when there is nothing to hand on (a resync).
func (m *Manager) event(e *entry, t event.Type, obj, oldObj any) *event.Event {
	o, ok := obj.(*Object)
	if !ok {
		m.log.Error("unexpected object type from informer", "resource", e.watch.Key().String(), "type", fmt.Sprintf("%T", obj))
		return nil
	}
	var oldJSON []byte
	var actor *event.Actor
	switch t {
	case event.Update:
		old, ok := oldObj.(*Object)
		if !ok {
			return nil
		}
		if old.resourceVersion == o.resourceVersion {
			m.resyncs.Add(1)
			return nil // a resync: nothing changed, nothing fires
		}
		oldJSON = old.raw
		actor = o.changeActor(old)
	case event.Delete:
		// A delete writes no managedFields entry: its actor is the last
		// state's, the last writer's.
		actor = o.changeActor(nil)
	}
	// What event.New makes, with the metadata the Object read when it was
	// decoded instead of reading it from the bytes again.
	return &event.Event{Type: t, Resource: e.watch.Resource, Object: o.raw, OldObject: oldJSON,
		Namespace: o.namespace, Name: o.name, UID: o.uid, ResourceVersion: o.resourceVersion, Time: m.now(), Modified: o.modifiedAt(),
		Actor: actor}
}

// Resyncs returns how many resyncs (an object handed over again unchanged)
// the informers made; they fire nothing. It is how a caller (the watcher's
// tests among them) sees that resyncs happen and are dropped.
func (m *Manager) Resyncs() uint64 { return m.resyncs.Load() }
