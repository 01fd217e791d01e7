package watcher

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	k8sdiscovery "k8s.io/client-go/discovery"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/discovery"
	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/event"
)

// crdResource is the resource dynwatch watches to learn about new and deleted
// CRDs without waiting for the periodic discovery refresh.
var crdResource = event.Resource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions", Kind: "CustomResourceDefinition"}

// source is one cluster as the watcher sees it: its discovery, the informers
// of the watched set, the CRD watch that says when to read discovery again,
// the refresh loop, and the first catalog. The watcher decides what to watch
// (rules against the source's catalog); the source runs it. A second cluster
// is a second source: its own discovery, informers and refresh loop, feeding
// the same pipeline.
type source struct {
	// name is the cluster's name with several clusters; "" is the one
	// cluster. Its watches' keys carry it.
	name    string
	spec    config.ClusterSpec // what the config says of it
	disc    k8sdiscovery.DiscoveryInterface
	log     *slog.Logger
	refresh time.Duration
	mgr     *dyninformer.Manager // the watched set
	crds    *dyninformer.Manager // the CRD watch
	kicks   chan struct{}        // asks for a discovery refresh

	// crdDeleted notes the CRDs the CRD watch saw deleted: their resources
	// are not kept for vanishGrace.
	crdDeleted deletedCRDs
	// cat is the catalog the watched set was last matched to: set under
	// the watcher's mu, read without it by the CRD watch's handler
	// (crdServed).
	cat atomic.Pointer[discovery.Catalog]
	// The watcher's mu guards the rest. vanished holds, with state, the
	// watches whose resource discovery stopped serving, for vanishGrace
	// (tests shorten it): see vanish.go.
	vanished    map[scopeKey]vanishedWatch
	vanishGrace time.Duration

	reach reachability // whether discovery answered last time
	// handler and resync build the informer managers (attach); connect,
	// for a pending source, builds its clients (Options.Connect), and
	// connected is set once it has them.
	handler   dyninformer.Handler
	resync    time.Duration
	connect   func() (*dyninformer.Client, k8sdiscovery.DiscoveryInterface, error)
	connected atomic.Bool
	// fingerprint is the hash of its kubeconfig when it was built.
	fingerprint string
	// applied is set once the watched set was first matched to a catalog.
	applied atomic.Bool
	// stop ends the source's run, when a reload removed its cluster; done
	// is closed once it has ended.
	stop context.CancelFunc
	done chan struct{}
}

// sourceOptions configure a source.
type sourceOptions struct {
	name    string        // the cluster's name; "" is the one cluster
	resync  time.Duration // the informers' resync period
	refresh time.Duration // how often discovery is read again
	log     *slog.Logger
}

// newSource returns the source of the cluster that client and disc reach,
// whose informers hand every event to handler. It watches CRDs from the
// start; the watched set is empty until the watcher sets it. With a nil
// client the source is pending: its clients could not be built yet (see
// attach), and it has no informers until then.
func newSource(client *dyninformer.Client, disc k8sdiscovery.DiscoveryInterface, handler dyninformer.Handler, opts sourceOptions) *source {
	log := opts.log
	if opts.name != "" {
		log = log.With("cluster", opts.name)
	}
	s := &source{name: opts.name, log: log, refresh: opts.refresh, kicks: make(chan struct{}, 1),
		vanished: map[scopeKey]vanishedWatch{}, vanishGrace: vanishGrace, done: make(chan struct{}),
		handler: handler, resync: opts.resync}
	if client != nil {
		s.attach(client, disc)
	}
	return s
}

// attach gives the source its clients: its informer managers are built on
// them. Once only, before anything reads mgr, crds or disc (connected says
// when it has happened).
func (s *source) attach(client *dyninformer.Client, disc k8sdiscovery.DiscoveryInterface) {
	s.disc = disc
	s.mgr = dyninformer.NewManager(client, s.handler, dyninformer.Options{Resync: s.resync, Logger: s.log})
	s.crds = dyninformer.NewManager(client.Unsharded(), func(_ dyninformer.Key, ev *event.Event) { s.crdEvent(ev) }, dyninformer.Options{Logger: s.log})
	_, _ = s.crds.Set([]dyninformer.Watch{{Resource: crdResource, Cluster: s.name}}, dyninformer.ListsKnown)
	s.connected.Store(true)
}

// crdEvent is the CRD watch's handler: a CRD's change asks for a discovery
// refresh, but for one of the watch's initial list that the catalog read
// just before serves as it says (crdServed).
func (s *source) crdEvent(ev *event.Event) {
	if ev.Type == event.Delete {
		s.crdDeleted.note(ev.Name, time.Now())
	}
	if ev.Origin == event.InitialList && crdServed(s.cat.Load(), ev.Object) {
		return
	}
	s.kick()
}

// run runs the informers, the CRD watch and the refresh loop, which calls
// refresh, until ctx is done; it returns once every goroutine of theirs has
// exited, with what the informers' Run returned.
func (s *source) run(ctx context.Context, refresh func()) error {
	var wg sync.WaitGroup
	wg.Go(func() { _ = s.crds.Run(ctx) })
	wg.Go(func() { s.refreshLoop(ctx, refresh) })
	err := s.mgr.Run(ctx) // returns once every informer goroutine is gone
	wg.Wait()
	return err
}

// synced reports whether every informer, the CRD one included, has listed
// once (a pending source has not).
func (s *source) synced() bool {
	return s.connected.Load() && s.mgr.HasSynced() && s.crds.HasSynced()
}

// statuses returns every watch's health, the CRD watch included; none while
// the source is pending.
func (s *source) statuses() []dyninformer.Status {
	if !s.connected.Load() {
		return nil
	}
	return append(s.mgr.Statuses(), s.crds.Statuses()...)
}

// load reads discovery once, noting whether the cluster answered.
func (s *source) load() (*discovery.Catalog, error) {
	cat, err := discovery.Load(s.disc)
	s.reach.set(err)
	return cat, err
}

// firstCatalog reads discovery until it succeeds or ctx ends (then nil): an API
// server that cannot be reached is logged at WARN at once, then again at most
// every minute with how long it has been, and retried with backoff.
func (s *source) firstCatalog(ctx context.Context) *discovery.Catalog {
	start, warned := time.Now(), time.Time{}
	delay := 500 * time.Millisecond
	for {
		cat, err := s.load()
		if err == nil {
			if !warned.IsZero() {
				s.log.Info("API server reached", "after", time.Since(start).Round(time.Second).String())
			}
			return cat
		}
		if time.Since(warned) >= time.Minute {
			warned = time.Now()
			s.log.Warn(s.unreachable()+"; retrying", "for", time.Since(start).Round(time.Second).String(), "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(delay):
		}
		delay = min(2*delay, 15*time.Second)
	}
}

// kick asks for a discovery refresh soon; it never blocks.
func (s *source) kick() {
	select {
	case s.kicks <- struct{}{}:
	default:
	}
}

// refreshLoop calls refresh, which reads discovery again, when a CRD changes
// (after a short pause that gathers a burst of changes, and once more a
// little later, as a new CRD's API can be served a moment after the CRD says
// Established) and periodically, for aggregated APIs.
func (s *source) refreshLoop(ctx context.Context, refresh func()) {
	tick := time.NewTicker(s.refresh)
	defer tick.Stop()
	var again <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.kicks:
			select {
			case <-ctx.Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
			again = time.After(2 * time.Second)
		case <-again:
			again = nil
		case <-tick.C:
		}
		refresh()
	}
}

// unreachable says that the source's cluster cannot be reached.
func (s *source) unreachable() string {
	if s.name == "" {
		return "cannot reach the API server"
	}
	return "cannot reach the cluster " + s.name
}

// reachability is whether a cluster answered its last discovery read.
type reachability struct {
	mu   sync.Mutex
	read bool  // discovery was read once, well or not
	err  error // why the last read failed; nil: it answered
}

func (r *reachability) set(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.read, r.err = true, err
}

// get returns whether the cluster is up (read once and answered last time)
// and, when it is not, why.
func (r *reachability) get() (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.read {
		return false, errors.New("not reached yet")
	}
	return r.err == nil, r.err
}
