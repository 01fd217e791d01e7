package watcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	k8sdiscovery "k8s.io/client-go/discovery"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/discovery"
	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/metrics"
	"github.com/dynwatch/dynwatch/plan"
	"github.com/dynwatch/dynwatch/state"
)

// Watcher runs one config against its clusters: each cluster is a source
// (source.go; sources.go runs them), events go through the pipeline
// (pipeline.go) to the action set (actionset.go); health.go reports,
// reload.go follows the config.
type Watcher struct {
	log     *slog.Logger
	metrics *metrics.Metrics
	opts    Options
	// The command line's cluster: the one cluster without clusters.
	client *dyninformer.Client
	disc   k8sdiscovery.DiscoveryInterface

	srcMu sync.RWMutex
	srcs  []*source // the clusters, in config order; srcMu and mu guard it
	// run is the context sources run in once Run has started them (nil
	// before); srcWG waits for them; srcErr takes the first error of one.
	run    context.Context
	srcWG  sync.WaitGroup
	srcErr chan error

	pipe atomic.Pointer[pipeline] // what events are evaluated and delivered with

	mu      sync.Mutex // serializes changes of config and catalog
	acts    *actionSet // the action queues; mu guards what it says
	health  health
	durable *durable // nil without state.path
	// waits are the timed rules' due times (and their states without
	// state.path); started is when this watcher began, before which a due
	// time fell while dynwatch was down (a late firing).
	waits   *waitBook
	started time.Time

	// removing, when set (by tests), runs after a reload took removed
	// clusters out of the pipeline and before their sources stop: the
	// window in which such a cluster's events still come.
	removing func()
}

// Options configure a Watcher.
type Options struct {
	// Logger receives dynwatch's own logs. Default: slog.Default().
	Logger *slog.Logger
	// Stdout is where `log: {}` actions write. Default: os.Stdout.
	Stdout io.Writer
	// Source is the CloudEvents source of the actions: the API server's URL.
	Source string
	// DiscoveryRefresh is how often discovery is read again, for aggregated
	// APIs; CRDs are followed as they change. Default: 30s.
	DiscoveryRefresh time.Duration
	// Store is the open state file of state.path; nil runs without state.
	Store *state.Store
	// Metrics counts events, rule evaluations and reloads; nil counts nothing.
	Metrics *metrics.Metrics
	// MaxPendingBytes bounds what waits in memory while the state file
	// refuses commits; reached, the run stops (see state.OverflowError).
	// Default: state.DefaultMaxPendingBytes.
	MaxPendingBytes int64
	// Connect builds the clients of a named cluster (the config's
	// clusters); needed with clusters, at start and when a reload adds one.
	Connect func(config.ClusterSpec) (*dyninformer.Client, k8sdiscovery.DiscoveryInterface, error)
	// Fingerprint hashes what Connect builds a named cluster's clients
	// from (see FileFingerprint); a change, seen at a reload or a
	// discovery refresh, builds them again. Default: the contents of the
	// spec's kubeconfig file.
	Fingerprint func(config.ClusterSpec) string
	// Synced, when set, is called once every informer has listed (when
	// "all informers synced" is logged).
	Synced func()
}

// New builds the actions of file and a watcher for it.
func New(file *plan.File, client *dyninformer.Client, disc k8sdiscovery.DiscoveryInterface, opts Options) (*Watcher, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Stdout == nil {
		opts.Stdout = os.Stdout
	}
	if opts.DiscoveryRefresh <= 0 {
		opts.DiscoveryRefresh = 30 * time.Second
	}
	w := &Watcher{log: opts.Logger, metrics: opts.Metrics, opts: opts, client: client, disc: disc, srcErr: make(chan error, 1),
		waits: newWaitBook(opts.Store == nil), started: time.Now()}
	if opts.Store != nil {
		if err := keepClusters(opts.Store, file, opts.Logger); err != nil {
			return nil, err
		}
		w.durable = newDurable(opts.Store, opts.Logger, &w.pipe, opts.Metrics, opts.MaxPendingBytes)
		w.durable.book = w.waits
	}
	w.acts = &actionSet{stdout: opts.Stdout, source: opts.Source, log: opts.Logger, durable: w.durable, mu: &w.mu,
		queues: map[string]*queueRun{}, removed: map[string]*queueRun{}}
	queues, err := w.acts.buildQueues(file)
	if err != nil {
		return nil, err
	}
	w.acts.queues = queues
	w.pipe.Store(&pipeline{file: file, log: w.log, metrics: w.metrics, queues: queueMap(queues)})
	if err := w.configureTimers(file, true); err != nil {
		return nil, fmt.Errorf("state: timed rules' waits: %w", err)
	}
	for _, spec := range clustersOf(file) {
		w.srcs = append(w.srcs, w.newSource(file, spec))
	}
	w.health = health{log: opts.Logger, sources: w.sources, durable: w.durable, warned: map[string]bool{}, synced: opts.Synced}
	return w, nil
}

// File returns the config the watcher currently runs.
func (w *Watcher) File() *plan.File { return w.pipe.Load().file }

// Run resolves the rules, watches, and delivers until ctx is done; then it stops
// the informers, drains the queues for the shutdown grace period, and returns
// after every goroutine it started has exited.
func (w *Watcher) Run(ctx context.Context) error {
	file := w.File()
	if w.durable == nil {
		w.log.Info("no state.path: objects that exist at start fire nothing unless a rule sets onStart: all")
	} else {
		var stop context.CancelFunc
		ctx, stop = w.durable.runContext(ctx) // a committer past its bound stops the run
		defer stop()
	}
	queueCtx, stopQueues := context.WithCancel(context.WithoutCancel(ctx))
	defer stopQueues()
	w.mu.Lock()
	w.acts.startAll(queueCtx, file)
	if w.durable != nil {
		if err := w.durable.pager.spillAll(); err != nil {
			w.mu.Unlock()
			stopQueues()
			w.acts.queueWG.Wait()
			return fmt.Errorf("state: %w", err)
		}
	}
	w.mu.Unlock()

	var wg sync.WaitGroup
	committed, marked := make(chan struct{}), make(chan struct{})
	if w.durable != nil {
		wg.Go(func() { w.durable.followListings(ctx, w.keySynced) })
		wg.Go(func() { w.durable.pager.run(ctx) })
		go func() { w.durable.commits.Run(); close(committed) }()
		go func() { w.durable.marks.Run(); close(marked) }()
	} else {
		close(committed)
		close(marked)
	}
	wg.Go(func() { w.runTimers(ctx) })
	wg.Go(func() { w.health.reportSynced(ctx, time.Now()) })
	wg.Go(func() { w.health.reportNoWatch(ctx, 5*time.Second) })
	err := w.runSources(ctx) // returns once every informer goroutine is gone
	wg.Wait()
	if w.durable != nil {
		w.durable.commits.Close() // informers are gone: apply what they submitted
	}
	<-committed
	stopQueues() // no more events can arrive: drain what is queued
	w.acts.queueWG.Wait()
	if w.durable != nil {
		w.durable.marks.Close() // the queues are gone: write their last marks
	}
	<-marked
	if err == nil && w.durable != nil {
		err = w.durable.stopErr(ctx)
	}
	if n := w.acts.lost.Load(); err == nil && n > 0 {
		err = fmt.Errorf("%w: %d", ErrUndelivered, n)
	}
	return err
}

// ErrUndelivered is what Run returns when it stopped with events that were
// neither delivered nor kept on disk: without state.path, the shutdown grace
// ran out; with it, the file refused commits when dynwatch stopped, or for so
// long that the bound on what waits in memory was reached (the next start's
// comparison then replays what changed).
var ErrUndelivered = errors.New("stopped with events neither delivered nor kept on disk")

// refresh reads the discovery of s and makes its watched set match it. A
// resource that appeared is watched from now on, and all of its objects fire
// add; one that went away stops being watched. With state, one that comes
// back within vanishGrace of going is compared with its records instead, as
// at a restart. A named cluster whose kubeconfig changed is built again
// instead (rebuildRotated).
func (w *Watcher) refresh(s *source) {
	if w.rotated(s) {
		go w.rebuildRotated()
		return
	}
	up, _ := s.reach.get()
	cat, err := s.load()
	if err != nil {
		s.log.Warn("discovery failed; keeping the watched set", "err", err)
		return
	}
	if !up && s.name != "" {
		s.log.Info("cluster reached again")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.hasSourceLocked(s) {
		return // a reload removed its cluster
	}
	w.health.reportFailed(s, cat, s.cat.Load())
	w.applyLocked(s, change{file: w.File(), cat: cat, lists: dyninformer.ListsNew})
}

// change is one change of the watched set: the config and catalog to match,
// what new informers' lists are (dyninformer.Lists), and, on a reload, the
// rules it added (the only ones the new informers' initial lists fire).
type change struct {
	file  *plan.File
	cat   *discovery.Catalog
	lists dyninformer.Lists
	added map[string]bool
}

// applyLocked makes the rule index and the watched set match c, and returns
// the change of the watched set; w.mu is held. The pipeline is published
// once the informers that stop have ended their handler calls and before any
// new one starts: it knows the epoch they start with, which the rules c adds
// are keyed by.
func (w *Watcher) applyLocked(s *source, c change) dyninformer.Change {
	mine := c.file.ForCluster(s.name)
	p := plan.Resolve(mine, c.cat)
	w.health.reportSelectsNothing(s, mine.Rules, p.Rules, c.cat)
	s.cat.Store(c.cat)
	for i := range p.Watches {
		p.Watches[i].Cluster = s.name
	}
	next := w.nextPipeline(s.name, c.file, p)
	published := false
	publish := func(ch dyninformer.Change) {
		if published { // with state, a set can take two steps (see setWatchesLocked)
			return
		}
		published = true
		if c.added != nil {
			next = next.withAdded(s.name, ch.Epoch, c.added)
		}
		w.pipe.Store(next)
	}
	ch := w.setWatchesLocked(s, p.Watches, c.lists, publish)
	if w.durable != nil {
		w.durable.prune(len(c.file.Config.Clusters) > 0, s.name, append(s.mgr.Watches(), s.vanishedKeys()...))
	}
	return ch
}
