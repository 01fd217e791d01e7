package dyninformer

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dynwatch/dynwatch/event"
)

// Handler receives every event with the watch it came from. It is called from
// the goroutine that pops the informer's FIFO, so it must hand work on and
// return quickly: while it runs, what the watch brings waits in the FIFO
// (past 2000 queued, in the watch itself). It may ask HasSynced, KeySynced and
// Statuses, which never wait for a handler call.
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
		if m.entries[e.watch.Key()] != e {
			continue // a later Set stopped it
		}
		e.pending = false
		if e.cancel == nil && m.ctx != nil {
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
		e.pending = true
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
	if !ok || !hasSynced(e.ctrl) {
		return false
	}
	// One call for the whole cache: the informer's own calls wait for it.
	return e.calls.serial(func() {
		for _, obj := range e.store.List() {
			if ev := m.event(e, event.Add, obj, nil); ev != nil {
				ev.Origin, ev.Epoch = event.InitialList, epoch
				m.handler(k, ev)
			}
		}
	})
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
// It is how a caller (the watcher's tests among them) sees that a reload kept
// an informer running rather than starting it again.
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
		if !e.pending { // a SetThen between its phases starts its own after its hook
			m.start(e)
		}
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
		e.ctrl.RunWithContext(ctx)
	}()
}
