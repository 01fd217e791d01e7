// Package dyninformer runs one shared informer per watched resource and
// namespace scope, started and stopped while the program runs, and turns what
// they see into events whose objects are JSON bytes.
//
// Its informers never decode objects into maps: list pages and watch frames are
// split into each object's JSON bytes (managedFields cut out), and the cache
// keeps those bytes and the few metadata fields it needs (Object). Events carry
// the cached bytes as they are; nothing is marshalled per event.
//
// It knows nothing of rules or actions: it imports no dynwatch package but
// event.
package dyninformer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/dynwatch/dynwatch/event"
)

// Key is one watch: a resource and a namespace ("" = all namespaces, and always
// "" for cluster-scoped resources).
type Key struct {
	GVR       schema.GroupVersionResource
	Namespace string
}

// String spells the key as kubectl spells resources: resource.version.group,
// and the namespace when it is not all of them.
func (k Key) String() string {
	s := k.GVR.Resource + "." + k.GVR.Version
	if k.GVR.Group != "" {
		s += "." + k.GVR.Group
	}
	if k.Namespace != "" {
		s += " in namespace " + k.Namespace
	}
	return s
}

// Watch asks for one informer.
type Watch struct {
	Resource  event.Resource
	Namespace string
}

// Key returns the watch's key.
func (w Watch) Key() Key {
	return Key{GVR: schema.GroupVersionResource{Group: w.Resource.Group, Version: w.Resource.Version, Resource: w.Resource.Resource}, Namespace: w.Namespace}
}

// Handler receives every event with the watch it came from. It is called from
// the informer's own goroutine, so it must hand work on and return quickly.
// Calls for one watch are serial (Replay's included), and none comes after
// the Set that stopped the watch has returned; so a handler must not call Set
// or Replay, which wait for its calls.
type Handler func(Key, *event.Event)

// Manager owns the set of running informers.
type Manager struct {
	client  *Client
	resync  time.Duration
	handler Handler
	log     *slog.Logger
	now     func() time.Time
	resyncs atomic.Uint64 // resyncs handed over by informers and dropped

	mu      sync.Mutex
	ctx     context.Context // set while Run runs
	entries map[Key]*entry
	started int    // informers started, ever
	sets    uint64 // Set calls so far: the next one's epoch
	wg      sync.WaitGroup
}

type entry struct {
	watch    Watch
	informer cache.SharedIndexInformer
	handled  cache.ResourceEventHandlerRegistration
	cancel   context.CancelFunc
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
	calls handlerCalls

	mu       sync.Mutex
	lastErr  string
	watchErr error
	// seen is when the watch last delivered an event or a bookmark (Unix ns).
	seen atomic.Int64
}

// Options configure a Manager.
type Options struct {
	// Resync is the informers' resync period; 0 turns resyncs off.
	Resync time.Duration
	// Logger receives the manager's own logs. Default: slog.Default().
	Logger *slog.Logger
}

// NewManager returns a manager that sends every event to handler.
func NewManager(client *Client, handler Handler, opts Options) *Manager {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Manager{
		client:  client,
		resync:  opts.Resync,
		handler: handler,
		log:     opts.Logger,
		now:     time.Now,
		entries: map[Key]*entry{},
	}
}

// Started is a watch that Set started.
type Started struct {
	Watch
	// Moved: it replaces a watch on another version of the same resource.
	Moved bool
}

// Lists says what the objects in the initial lists of new informers are to the
// caller.
type Lists uint8

const (
	// ListsKnown: the objects existed before (a start or a reload): their adds
	// have origin InitialList, and onStart decides whether they fire.
	ListsKnown Lists = iota
	// ListsNew: the resource just appeared, so every object is new: its adds
	// are Live.
	ListsNew
)

// Set makes the running informers equal to watches and returns those it added: informers not asked for any
// more stop, new ones start, and those still asked for keep running untouched
// (no second initial list). Before Run, it only records what Run will start.
// It returns once the handler calls of the informers it stopped have ended:
// no event of theirs (say, of a version a watch moved from) comes after it,
// and the informers it adds start only then, so none of theirs comes before.
//
// lists says what the objects new informers list are to the caller. Before
// Run, and for a watch that replaces one on another version of the same
// resource, they are always known.
func (m *Manager) Set(watches []Watch, lists Lists) (started []Started, epoch uint64) {
	c := m.SetThen(watches, lists, nil)
	return c.Started, c.Epoch
}

// Change is what one Set call changes: the epoch it gives the informers it
// starts (the events of their initial lists carry it, see Replay) and those
// informers.
type Change struct {
	Epoch   uint64
	Started []Started
}

// SetThen is Set, and returns the change it made. before, when not nil, is
// called with that change once the handler calls of the informers it stops
// have ended and before any informer it adds starts: what the caller puts in
// place there (the rules that apply from the change's epoch on, what it notes
// of the new lists) is in place when their first event comes, and no event
// of a stopped informer sees it. One call, so that the epoch the caller keys
// its rules by is the one the new informers get.
func (m *Manager) SetThen(watches []Watch, lists Lists, before func(Change)) Change {
	m.mu.Lock()
	started, epoch, stopped, added := m.setLocked(watches, lists)
	m.mu.Unlock()
	// Without m.mu: a handler call in flight may read the manager.
	for _, e := range stopped {
		e.calls.stop()
	}
	c := Change{Epoch: epoch, Started: started}
	if before != nil {
		before(c)
	}
	// Only now do the new informers start: no event of a watch that replaces
	// one (another version of the resource) comes before the last of the old.
	m.mu.Lock()
	for _, e := range added {
		if m.entries[e.watch.Key()] == e && e.cancel == nil && m.ctx != nil {
			m.start(e)
		}
	}
	m.mu.Unlock()
	return c
}

// setLocked is Set but for the wait and the start of the informers; m.mu is
// held. It returns the entries it stopped and those it added.
func (m *Manager) setLocked(watches []Watch, lists Lists) (started []Started, epoch uint64, stopped, added []*entry) {
	want := make(map[Key]Watch, len(watches))
	for _, w := range watches {
		if !w.Resource.Namespaced {
			w.Namespace = ""
		}
		want[w.Key()] = w
	}
	type groupResourceNS struct{ group, resource, ns string }
	moved := map[groupResourceNS]bool{}
	epoch = m.sets
	m.sets++
	for k, e := range m.entries {
		if _, ok := want[k]; !ok {
			if e.cancel != nil {
				e.cancel()
			}
			delete(m.entries, k)
			stopped = append(stopped, e)
			moved[groupResourceNS{k.GVR.Group, k.GVR.Resource, k.Namespace}] = true
			m.log.Info("stopped watching", "resource", k.String())
		}
	}
	for k, w := range want {
		if _, ok := m.entries[k]; ok {
			continue
		}
		e := m.newEntry(w)
		e.moved = moved[groupResourceNS{k.GVR.Group, k.GVR.Resource, k.Namespace}]
		e.known = lists == ListsKnown || m.ctx == nil || e.moved
		e.epoch = epoch
		m.entries[k] = e
		started = append(started, Started{Watch: w, Moved: e.moved})
		added = append(added, e)
	}
	return started, epoch, stopped, added
}

// Replay hands every object in the cache of k's informer to the handler as an
// InitialList add of the given epoch: what a rule added to an informer that keeps
// running sees of the objects that exist. It returns false when k is not
// watched or has not listed yet.
func (m *Manager) Replay(k Key, epoch uint64) bool {
	m.mu.Lock()
	e, ok := m.entries[k]
	m.mu.Unlock()
	if !ok || !e.handled.HasSynced() {
		return false
	}
	// One call for the whole cache: the informer's own calls wait for it.
	return e.calls.serial(func() {
		for _, obj := range e.informer.GetStore().List() {
			if ev := m.event(e, event.Add, obj, nil); ev != nil {
				ev.Origin, ev.Epoch = event.InitialList, epoch
				m.handler(k, ev)
			}
		}
	})
}

// Objects returns what the informer of k holds now, for library users who read
// the cache; nil when k is not watched. The objects are shared and read-only:
// Object.Unstructured decodes one into a copy.
func (m *Manager) Objects(k Key) []*Object {
	m.mu.Lock()
	e, ok := m.entries[k]
	m.mu.Unlock()
	if !ok {
		return nil
	}
	items := e.informer.GetStore().List()
	out := make([]*Object, 0, len(items))
	for _, it := range items {
		if o, ok := it.(*Object); ok {
			out = append(out, o)
		}
	}
	return out
}

// Watches returns the keys of the informers that are running or will run.
func (m *Manager) Watches() []Key {
	m.mu.Lock()
	defer m.mu.Unlock()
	keys := make([]Key, 0, len(m.entries))
	for k := range m.entries {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b Key) int {
		if c := strings.Compare(a.GVR.String(), b.GVR.String()); c != 0 {
			return c
		}
		return strings.Compare(a.Namespace, b.Namespace)
	})
	return keys
}

// Started returns how many informers have been started since the manager was
// made; a resync of the watched set that keeps an informer does not count it again.
func (m *Manager) Started() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.started
}

// Run starts the informers and blocks until ctx is done; it returns only after
// every informer goroutine has exited.
func (m *Manager) Run(ctx context.Context) error {
	m.mu.Lock()
	if m.ctx != nil {
		m.mu.Unlock()
		return errors.New("dyninformer: Run called twice")
	}
	m.ctx = ctx
	for _, e := range m.entries {
		m.start(e)
	}
	m.mu.Unlock()

	<-ctx.Done()
	m.mu.Lock()
	for _, e := range m.entries {
		if e.cancel != nil { // nil: a Set has yet to start it (and will not)
			e.cancel()
		}
	}
	m.mu.Unlock()
	m.wg.Wait()
	return nil
}

// HasSynced reports whether every informer has finished its initial list and
// handed every object of it to the handler.
func (m *Manager) HasSynced() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.entries {
		if !e.handled.HasSynced() {
			return false
		}
	}
	return true
}

// KeySynced reports whether the informer of k has handed its whole initial list
// to the handler; ok is false when k is not watched.
func (m *Manager) KeySynced(k Key) (synced, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[k]
	if !ok {
		return false, false
	}
	return e.handled.HasSynced(), true
}

// WaitForSync blocks until every informer has synced or ctx is done.
func (m *Manager) WaitForSync(ctx context.Context) bool {
	return wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
		return m.HasSynced(), nil
	}) == nil
}

// Unsynced returns the watches that have not finished their initial list, with
// the last error each one saw (nil if none yet).
func (m *Manager) Unsynced() map[Key]error {
	out := map[Key]error{}
	for _, st := range m.Statuses() {
		if !st.Synced {
			out[st.Key] = st.Err
		}
	}
	return out
}

func (m *Manager) newEntry(w Watch) *entry {
	k := w.Key()
	e := &entry{watch: w}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return m.client.List(ctx, k.GVR, w.Namespace, paged(opts))
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.AllowWatchBookmarks = true
			wi, err := m.client.Watch(ctx, k.GVR, w.Namespace, opts)
			if err != nil {
				return nil, err
			}
			m.watchRecovered(e)
			// Every event and bookmark tells that the watch is alive (/readyz).
			return newTouchWatch(wi, func() { e.seen.Store(m.now().UnixNano()) }), nil
		},
	}
	// The client streams the initial list as watch events when client-go's
	// WatchListClient feature is on (KUBE_FEATURE_WatchListClient), and lists
	// in pages when it is off; its decoder serves both.
	e.informer = cache.NewSharedIndexInformerWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, m.client), &Object{},
		cache.SharedIndexInformerOptions{ResyncPeriod: m.resync, ObjectDescription: k.GVR.String()})
	_ = e.informer.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		m.watchError(e, err)
	})
	e.handled, _ = e.informer.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
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
	})
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

// start runs e's informer; m.mu is held.
func (m *Manager) start(e *entry) {
	ctx, cancel := context.WithCancel(m.ctx)
	e.cancel = cancel
	if ctx.Err() != nil {
		return // Run has ended; nothing may start after it
	}
	m.started++
	m.wg.Add(1)
	m.log.Info("watching", "resource", e.watch.Key().String())
	go func() {
		defer m.wg.Done()
		e.informer.RunWithContext(ctx)
	}()
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
	if t == event.Update {
		old, ok := oldObj.(*Object)
		if !ok {
			return nil
		}
		if old.resourceVersion == o.resourceVersion {
			m.resyncs.Add(1)
			return nil // a resync: nothing changed, nothing fires
		}
		oldJSON = old.raw
	}
	return event.New(t, e.watch.Resource, o.raw, oldJSON, m.now())
}

// Resyncs returns how many resyncs (an object handed over again unchanged)
// the informers made; they fire nothing.
func (m *Manager) Resyncs() uint64 { return m.resyncs.Load() }

// Status is one watch's health, for /readyz and metrics.
type Status struct {
	Key Key
	// Synced: the initial list has been handed over.
	Synced bool
	// Err is the last error of a watch that has not synced (forbidden, not
	// served), nil if none.
	Err error
	// LastEvent is when the watch last delivered an event or a bookmark; zero
	// before the first.
	LastEvent time.Time
}

// Statuses returns the health of every watch, sorted by key.
func (m *Manager) Statuses() []Status {
	m.mu.Lock()
	out := make([]Status, 0, len(m.entries))
	for k, e := range m.entries {
		st := Status{Key: k, Synced: e.handled != nil && e.handled.HasSynced()}
		if ns := e.seen.Load(); ns > 0 {
			st.LastEvent = time.Unix(0, ns)
		}
		if !st.Synced {
			e.mu.Lock()
			st.Err = e.watchErr
			e.mu.Unlock()
		}
		out = append(out, st)
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b Status) int { return strings.Compare(a.Key.String(), b.Key.String()) })
	return out
}

// touchWatch passes a watch's events on and calls touch on each (bookmarks
// included). Unlike watch.Filter, its goroutine ends when Stop is called even
// if nobody reads any more, so that stopped informers leave nothing behind.
type touchWatch struct {
	in    watch.Interface
	out   chan watch.Event
	done  chan struct{}
	once  sync.Once
	touch func()
}

func newTouchWatch(in watch.Interface, touch func()) *touchWatch {
	t := &touchWatch{in: in, out: make(chan watch.Event), done: make(chan struct{}), touch: touch}
	go t.loop()
	return t
}

func (t *touchWatch) ResultChan() <-chan watch.Event { return t.out }

func (t *touchWatch) Stop() {
	t.once.Do(func() {
		close(t.done)
		t.in.Stop()
	})
}

func (t *touchWatch) loop() {
	defer close(t.out)
	for {
		select {
		case <-t.done:
			return
		case ev, ok := <-t.in.ResultChan():
			if !ok {
				return
			}
			t.touch()
			select {
			case t.out <- ev:
			case <-t.done:
				return
			}
		}
	}
}
