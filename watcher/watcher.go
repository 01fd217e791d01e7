// Package watcher is the daemon's pipeline: it resolves the rules' selectors
// through discovery, keeps one informer per watched resource and namespace scope,
// evaluates each event with the rules of its resource only, and hands matches to
// the action queues. The watched set follows the cluster (CRDs that appear or go)
// and the config (reloads) without a restart.
//
// It is the daemon's engine: only daemon (and tests) import it.
package watcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	k8sdiscovery "k8s.io/client-go/discovery"

	"github.com/dynwatch/dynwatch/action"
	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/discovery"
	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/metrics"
	"github.com/dynwatch/dynwatch/payload"
	"github.com/dynwatch/dynwatch/plan"
	"github.com/dynwatch/dynwatch/rules"
	"github.com/dynwatch/dynwatch/state"
)

// CRDResource is the resource dynwatch watches to learn about new and deleted
// CRDs without waiting for the periodic discovery refresh.
var CRDResource = event.Resource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions", Kind: "CustomResourceDefinition"}

// Watcher runs one config against one cluster.
type Watcher struct {
	disc    k8sdiscovery.DiscoveryInterface
	log     *slog.Logger
	stdout  io.Writer
	source  string // the actions' CloudEvents source
	refresh time.Duration
	mgr     *dyninformer.Manager
	crds    *dyninformer.Manager

	pipe  atomic.Pointer[pipeline] // what events are evaluated and delivered with
	kicks chan struct{}            // asks for a discovery refresh

	mu       sync.Mutex // serializes changes of config and catalog
	cat      *discovery.Catalog
	queues   map[string]*queueRun
	queueCtx context.Context
	queueWG  sync.WaitGroup
	set      actionSet       // every queue started, for halting and counts
	warned   map[string]bool // rules already warned about selecting nothing
	durable  *durable        // nil without state.path
	lost     atomic.Uint64   // events abandoned at shutdown without state
	metrics  *metrics.Metrics

	// removed holds, with state, the queues of actions a reload removed, by
	// name: a reload that adds the name again takes over what they hold.
	removed map[string]*queueRun
	// vanished holds, with state, the watches whose resource discovery
	// stopped serving, for vanishGrace (tests shorten it): see vanish.go.
	vanished    map[scopeKey]vanishedWatch
	vanishGrace time.Duration
	// crdDeleted notes the CRDs the CRD watch saw deleted: their resources
	// are not kept for vanishGrace.
	crdDeleted deletedCRDs
}

// pipeline is one consistent view of the config: the rules by resource and the
// queues of their actions. Events read it without locks; changes swap it whole.
type pipeline struct {
	file    *plan.File
	log     *slog.Logger
	metrics *metrics.Metrics
	index   map[schema.GroupVersionResource][]*rules.Rule
	queues  map[string]*action.Queue
	// paths are, per resource, what restart state records of each object:
	// every path its rules read, worked out once per config, not per event.
	paths map[schema.GroupVersionResource][]string
	// added maps the epoch of each reload to the rules it added: the objects
	// that exist then are new only to those rules.
	added rules.Added
}

// queueRun is an action's queue and what stops it.
type queueRun struct {
	spec   config.ActionSpec
	q      *action.Queue
	closer io.Closer
	cancel context.CancelFunc
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
	w := &Watcher{
		disc:    disc,
		log:     opts.Logger,
		stdout:  opts.Stdout,
		source:  opts.Source,
		refresh: opts.DiscoveryRefresh,
		kicks:   make(chan struct{}, 1),
		queues:  map[string]*queueRun{},
		removed: map[string]*queueRun{},
		warned:  map[string]bool{},
		metrics: opts.Metrics,
	}
	w.vanished, w.vanishGrace = map[scopeKey]vanishedWatch{}, vanishGrace
	if opts.Store != nil {
		w.durable = newDurable(opts.Store, opts.Logger, &w.pipe, opts.Metrics, opts.MaxPendingBytes)
	}
	queues, err := w.buildQueues(file)
	if err != nil {
		return nil, err
	}
	w.queues = queues
	w.pipe.Store(&pipeline{file: file, log: w.log, metrics: w.metrics, queues: queueMap(queues)})
	w.mgr = dyninformer.NewManager(client, w.handle, dyninformer.Options{
		Resync: file.Config.Defaults.Resync.Std(),
		Logger: opts.Logger,
	})
	w.crds = dyninformer.NewManager(client, func(_ dyninformer.Key, ev *event.Event) {
		if ev.Type == event.Delete {
			w.crdDeleted.note(ev.Name, time.Now())
		}
		w.kick()
	}, dyninformer.Options{Logger: opts.Logger})
	_, _ = w.crds.Set([]dyninformer.Watch{{Resource: CRDResource}}, dyninformer.ListsKnown)
	return w, nil
}

// buildQueues makes a queue for every action of file whose spec differs from
// the running one's, and reuses the running queue where it is the same.
func (w *Watcher) buildQueues(file *plan.File) (map[string]*queueRun, error) {
	out := map[string]*queueRun{}
	for _, a := range file.Actions {
		if old, ok := w.queues[a.Spec.Name]; ok && reflect.DeepEqual(old.spec, a.Spec) {
			out[a.Spec.Name] = old
			continue
		}
		qr, err := w.newQueue(a)
		if err != nil {
			for _, qr := range out {
				if w.queues[qr.spec.Name] != qr && qr.closer != nil {
					_ = qr.closer.Close()
				}
			}
			return nil, fmt.Errorf("action %s: %w", a.Spec.Name, err)
		}
		out[a.Spec.Name] = qr
	}
	return out, nil
}

// newQueue builds an action's sender and queue; with state, a delivery is
// removed from disk once it is finished with.
func (w *Watcher) newQueue(a *action.Action) (*queueRun, error) {
	sender, closer, err := a.Build(action.Env{Stdout: w.stdout, Source: w.source})
	if err != nil {
		return nil, err
	}
	opts := action.QueueOptions{
		Size:        a.Spec.QueueSize,
		Concurrency: a.Spec.Concurrency,
		Retry:       a.Retry,
		Logger:      w.log,
	}
	if w.durable != nil {
		// Accepted events are on disk: the memory queue refuses none, and what
		// is left at shutdown is delivered after the next start.
		name, marks := a.Spec.Name, w.durable.marks
		opts.Outbox = action.OutboxFunc(func(d *event.Delivery) {
			if d.Seq == 0 {
				return
			}
			// Through a committer of their own, not behind the events' group
			// commits: the window in which a crash makes a delivery happen
			// again stays one fsync long, and marks that come together share it.
			seq, id := d.Seq, d.Payload.ID
			marks.Submit(0, func(tx *state.Tx) error { return tx.Done(name, seq) }, func(err error) {
				if err != nil && !errors.Is(err, state.ErrGivenUp) { // given up: logged once, with the count
					w.log.Error("state: cannot mark a delivery done; it may be delivered again after a restart", "id", id, "err", err)
				}
			})
		})
	}
	return &queueRun{spec: a.Spec, closer: closer, q: action.NewQueue(a.Spec.Name, sender, opts)}, nil
}

func queueMap(qs map[string]*queueRun) map[string]*action.Queue {
	m := make(map[string]*action.Queue, len(qs))
	for name, qr := range qs {
		m[name] = qr.q
	}
	return m
}

// Synced reports whether every informer, the CRD one included, has listed once.
func (w *Watcher) Synced() bool { return w.mgr.HasSynced() && w.crds.HasSynced() }

// Manager returns the informer manager, for status and tests.
func (w *Watcher) Manager() *dyninformer.Manager { return w.mgr }

// Queue returns the named action's current queue.
func (w *Watcher) Queue(name string) *action.Queue { return w.pipe.Load().queues[name] }

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
	cat := w.firstCatalog(ctx)
	if cat == nil {
		return nil // stopped before the API server could be reached
	}
	w.reportFailed(cat, nil)

	queueCtx, stopQueues := context.WithCancel(context.WithoutCancel(ctx))
	defer stopQueues()
	w.mu.Lock()
	w.queueCtx = queueCtx
	for _, qr := range w.queues {
		w.startQueue(qr, file)
	}
	if w.durable != nil {
		if err := w.durable.pager.spillAll(); err != nil {
			w.mu.Unlock()
			stopQueues()
			w.queueWG.Wait()
			return fmt.Errorf("state: %w", err)
		}
	}
	w.applyLocked(change{file: file, cat: cat, lists: dyninformer.ListsKnown})
	w.mu.Unlock()

	var wg sync.WaitGroup
	committed, marked := make(chan struct{}), make(chan struct{})
	if w.durable != nil {
		wg.Go(func() { w.durable.followListings(ctx, w.mgr.KeySynced) })
		wg.Go(func() { w.durable.pager.run(ctx) })
		go func() { w.durable.commits.Run(); close(committed) }()
		go func() { w.durable.marks.Run(); close(marked) }()
	} else {
		close(committed)
		close(marked)
	}
	wg.Go(func() { w.reportSynced(ctx, time.Now()) })
	wg.Go(func() { w.reportNoWatch(ctx, 5*time.Second) })
	wg.Go(func() { _ = w.crds.Run(ctx) })
	wg.Go(func() { w.refreshLoop(ctx) })
	err := w.mgr.Run(ctx) // returns once every informer goroutine is gone
	wg.Wait()
	if w.durable != nil {
		w.durable.commits.Close() // informers are gone: apply what they submitted
	}
	<-committed
	stopQueues() // no more events can arrive: drain what is queued
	w.queueWG.Wait()
	if w.durable != nil {
		w.durable.marks.Close() // the queues are gone: write their last marks
	}
	<-marked
	if err == nil && w.durable != nil {
		err = w.durable.stopErr(ctx)
	}
	if n := w.lost.Load(); err == nil && n > 0 {
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

// firstCatalog reads discovery until it succeeds or ctx ends (then nil): an API
// server that cannot be reached is logged at WARN at once, then again at most
// every minute with how long it has been, and retried with backoff.
func (w *Watcher) firstCatalog(ctx context.Context) *discovery.Catalog {
	start, warned := time.Now(), time.Time{}
	delay := 500 * time.Millisecond
	for {
		cat, err := discovery.Load(w.disc)
		if err == nil {
			if !warned.IsZero() {
				w.log.Info("API server reached", "after", time.Since(start).Round(time.Second).String())
			}
			return cat
		}
		if time.Since(warned) >= time.Minute {
			warned = time.Now()
			w.log.Warn("cannot reach the API server; retrying", "for", time.Since(start).Round(time.Second).String(), "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(delay):
		}
		delay = min(2*delay, 15*time.Second)
	}
}

// reportSynced logs once when every informer has listed (and, with state, every
// list has been compared with the records), with how long it took.
func (w *Watcher) reportSynced(ctx context.Context, start time.Time) {
	err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, false, func(context.Context) (bool, error) {
		return w.mgr.HasSynced() && (w.durable == nil || len(w.durable.listingKeys()) == 0), nil
	})
	if err == nil {
		w.log.Info("all informers synced", "after", time.Since(start).Round(time.Millisecond).String(), "watches", len(w.mgr.Watches()))
	}
}

// reportNoWatch says at WARN, checking every period, when no watch works at
// all (none is asked for, or every one fails: a user without permissions), so
// that a daemon that delivers nothing does not look healthy; and at INFO when
// one works again.
func (w *Watcher) reportNoWatch(ctx context.Context, period time.Duration) {
	warned := false
	wait.UntilWithContext(ctx, func(context.Context) {
		statuses := w.mgr.Statuses()
		failing := map[string]string{}
		for _, st := range statuses {
			if !st.Synced && st.Err != nil {
				failing[st.Key.String()] = st.Err.Error()
			}
		}
		none := len(statuses) == 0 || len(failing) == len(statuses)
		switch {
		case none && !warned:
			warned = true
			if len(statuses) == 0 {
				w.log.Warn("no working watch: no rule selects a served resource, so nothing can fire")
			} else {
				w.log.Warn("no working watch: every watch fails, so nothing can fire (dynwatch check --cluster shows what is denied)", "failing", failing)
			}
		case !none && warned:
			warned = false
			w.log.Info("a watch works again", "watches", len(statuses), "failing", len(failing))
		}
	}, period)
}

// startQueue runs qr until it is replaced or the watcher stops; w.mu is held.
func (w *Watcher) startQueue(qr *queueRun, file *plan.File) {
	ctx, cancel := context.WithCancel(w.queueCtx)
	qr.cancel = cancel
	grace := file.Config.ShutdownGrace.Std()
	w.set.start(qr.q)
	w.queueWG.Go(func() {
		_ = qr.q.Run(ctx, grace)
		// Whether qr is still current is read under w.mu: a queue a reload
		// replaced can stop before that reload has published the new pipeline.
		w.mu.Lock()
		current := w.queues[qr.spec.Name] == qr
		w.mu.Unlock()
		w.set.stopped(qr.q, current)
		if w.durable == nil {
			w.lost.Add(qr.q.Stats().Abandoned)
		}
		if qr.closer != nil {
			_ = qr.closer.Close() // a log file stays open until its queue has drained
		}
	})
}

// kick asks for a discovery refresh soon; it never blocks.
func (w *Watcher) kick() {
	select {
	case w.kicks <- struct{}{}:
	default:
	}
}

// refreshLoop reads discovery again when a CRD changes (after a short pause
// that gathers a burst of changes, and once more a little later, as a new
// CRD's API can be served a moment after the CRD says Established) and
// periodically, for aggregated APIs.
func (w *Watcher) refreshLoop(ctx context.Context) {
	tick := time.NewTicker(w.refresh)
	defer tick.Stop()
	var again <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.kicks:
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
		w.Refresh()
	}
}

// Refresh reads discovery and makes the watched set match it. A resource that
// appeared is watched from now on, and all of its objects fire add; one that went
// away stops being watched. With state, one that comes back within vanishGrace
// of going is compared with its records instead, as at a restart.
func (w *Watcher) Refresh() {
	cat, err := discovery.Load(w.disc)
	if err != nil {
		w.log.Warn("discovery failed; keeping the watched set", "err", err)
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.reportFailed(cat, w.cat)
	w.applyLocked(change{file: w.File(), cat: cat, lists: dyninformer.ListsNew})
}

// reportFailed logs the group versions whose discovery failed, once each.
func (w *Watcher) reportFailed(cat, prev *discovery.Catalog) {
	for gv, gerr := range cat.Failed {
		if prev != nil {
			if _, seen := prev.Failed[gv]; seen {
				continue
			}
		}
		w.log.Warn("discovery failed for a group version; its resources are not watched until it recovers", "groupVersion", gv.String(), "err", gerr)
	}
}

// Reload runs file from now on. Only the difference is applied: informers for
// resources no longer selected stop, new ones start, and those still needed keep
// running without listing again; actions whose spec is unchanged keep their
// queues. The caller has validated file.
func (w *Watcher) Reload(file *plan.File) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	queues, err := w.buildQueues(file)
	if err != nil {
		return err
	}
	running := w.queueCtx != nil
	diff := diffFiles(w.File(), file, func(name string) bool { return w.queues[name] == queues[name] })
	for name, qr := range queues {
		if w.queues[name] == qr || !running {
			continue
		}
		if old, ok := w.queues[name]; ok {
			old.q.HandOff(qr.q) // the backlog moves to the new settings, in order
		} else {
			w.takeBacklogLocked(name, qr) // an action's backlog belongs to its name
		}
		w.startQueue(qr, file)
	}
	retired := w.queues
	w.queues = queues
	if !reflect.DeepEqual(file.Config.State, w.File().Config.State) {
		w.log.Warn("state changed in the config: it applies after a restart")
	}
	if file.Config.Defaults.Resync != w.File().Config.Defaults.Resync {
		w.log.Warn("defaults.resync changed: it applies to informers started from now on")
	}
	if w.cat == nil {
		w.pipe.Store(&pipeline{file: file, log: w.log, metrics: w.metrics, queues: queueMap(queues)})
	} else {
		w.applyReloadLocked(file, diff)
	}
	// Only now that events go to the new queues are removed actions retired.
	for name, qr := range retired {
		if _, kept := queues[name]; !kept && running {
			qr.cancel() // drains for its grace period, then stops
			w.removedLocked(name, qr)
		}
	}
	return nil
}

// applyReloadLocked applies a reloaded file's rules to the running watches;
// w.mu is held.
func (w *Watcher) applyReloadLocked(file *plan.File, diff reloadDiff) {
	added := map[string]bool{}
	for _, r := range file.Rules {
		if w.File().Rule(r.Name) == nil {
			added[r.Name] = true
		}
	}
	diff.watchesBefore = w.mgr.Watches()
	started, epoch := w.applyLocked(change{file: file, cat: w.cat, lists: dyninformer.ListsKnown, added: added})
	w.log.Info("config reloaded", append([]any{"config", file.Path, "rules", len(file.Rules), "actions", len(file.Config.Actions)},
		diff.attrs(w.mgr.Watches())...)...)
	// Informers that keep running do not list again: an added rule with
	// onStart: all sees their objects from the cache instead.
	fresh := map[dyninformer.Key]bool{}
	for _, s := range started {
		fresh[s.Key()] = true
	}
	p := w.pipe.Load()
	for _, k := range w.mgr.Watches() {
		if !fresh[k] && wantsReplay(p.index[k.GVR], added, k) {
			// Synchronous: the handler only enqueues (or submits to the commit
			// loop), neither of which needs w.mu.
			w.mgr.Replay(k, epoch)
		}
	}
}

// wantsReplay reports whether a rule a reload added, with onStart: all, covers
// the running watch k: it then sees the objects k's cache holds.
func wantsReplay(rs []*rules.Rule, added map[string]bool, k dyninformer.Key) bool {
	for _, r := range rs {
		if added[r.Name] && r.OnStart == config.OnStartAll && (k.Namespace == "" || r.InNamespace(k.Namespace)) {
			return true
		}
	}
	return false
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

// applyLocked makes the rule index and the watched set match c; w.mu is held.
func (w *Watcher) applyLocked(c change) ([]dyninformer.Started, uint64) {
	p := plan.Resolve(c.file, c.cat)
	for _, r := range c.file.Rules {
		empty := len(p.Rules[r.Name]) == 0
		if empty && !w.warned[r.Name] {
			w.warnSelectsNothing(r, c.cat)
		}
		w.warned[r.Name] = empty
	}
	w.cat = c.cat
	prev := w.pipe.Load()
	next := &pipeline{file: c.file, log: w.log, metrics: w.metrics, index: p.Index, queues: queueMap(w.queues), added: prev.added}
	if w.durable != nil {
		next.paths = make(map[schema.GroupVersionResource][]string, len(p.Index))
		for gvr, rs := range p.Index {
			next.paths[gvr] = recordPaths(rs)
		}
	}
	if c.added != nil {
		// The epoch Set is about to use; only Reload calls Set with added rules.
		next.added = maps.Clone(prev.added)
		if next.added == nil {
			next.added = rules.Added{}
		}
		next.added[w.mgr.NextEpoch()] = c.added
	}
	w.pipe.Store(next)
	started, epoch := w.setWatchesLocked(p.Watches, c.lists)
	if w.durable != nil {
		w.durable.prune(append(w.mgr.Watches(), w.vanishedKeysLocked()...))
	}
	return started, epoch
}

// warnSelectsNothing says that a rule selects no served resource, and why
// when it can tell: resources that cannot be watched, or names close to served
// ones; else that it fires once one appears (a CRD installed later).
func (w *Watcher) warnSelectsNothing(r *rules.Rule, cat *discovery.Catalog) {
	var why []string
	for _, sel := range r.Selectors {
		if s := cat.WhyNothing(sel); s != "" {
			why = append(why, sel.String()+": "+s)
		}
	}
	if len(why) == 0 {
		w.log.Warn("rule selects no served resource yet; it fires once one appears", "rule", r.Name)
		return
	}
	w.log.Warn("rule selects no resource it can watch", "rule", r.Name, "why", strings.Join(why, "; "))
}

// handle evaluates one event with the rules of its resource and enqueues a
// delivery per matching rule and action. It never blocks on an action.
func (w *Watcher) handle(k dyninformer.Key, ev *event.Event) {
	p := w.pipe.Load()
	p.metrics.Event(ev.Resource.Name(), string(ev.Type))
	if w.durable != nil {
		w.durable.handle(p, k, ev)
		return
	}
	out := p.route(k.GVR, ev)
	enqueue(w.pipe.Load(), out) // the queues current now, should a reload have swapped them
}

// routed is a delivery on its way to one action.
type routed struct {
	action string
	d      *event.Delivery
}

// route evaluates the rules of the event's resource and returns a delivery per
// rule that fires and action. The payload is built and encoded once per rule.
func (p *pipeline) route(gvr schema.GroupVersionResource, ev *event.Event) []routed {
	var out []routed
	var prepared *payload.Prepared
	for _, r := range p.index[gvr] {
		fires, transition := p.decide(r, ev)
		if !fires {
			continue
		}
		if prepared == nil {
			prepared = p.file.Prepare(ev)
		}
		d, err := payload.Delivery(r.Payload(prepared, transition), ev.ObjectKey())
		if err != nil {
			p.log.Error("encode payload", "id", ev.ID(), "rule", r.Name, "err", err)
			continue
		}
		if p.log.Enabled(context.Background(), slog.LevelDebug) {
			p.log.Debug("rule matched", "id", d.Payload.ID, "rule", r.Name, "resource", ev.Resource.String(), "namespace", ev.Namespace, "name", ev.Name)
		}
		for i, a := range r.Actions {
			if i > 0 {
				c := *d // each action has its own place in its own queue
				d = &c
			}
			out = append(out, routed{action: a, d: d})
		}
	}
	return out
}

// decide is Rule.Decide, timed and counted when there are metrics.
func (p *pipeline) decide(r *rules.Rule, ev *event.Event) (bool, string) {
	if p.metrics == nil {
		return r.Decide(ev, p.added)
	}
	start := time.Now()
	fired, transition := r.Decide(ev, p.added)
	p.metrics.Evaluated(r.Name, time.Since(start), fired)
	return fired, transition
}

// StateErr returns why commits to the state file fail while they do (events
// then wait in memory and are retried), else nil; for /readyz.
func (w *Watcher) StateErr() error {
	if w.durable == nil {
		return nil
	}
	if err := w.durable.commits.Err(); err != nil {
		return err
	}
	return w.durable.marks.Err()
}

// Statuses returns every watch's health (the CRD watch included), for
// /readyz and metrics.
func (w *Watcher) Statuses() []dyninformer.Status {
	return append(w.mgr.Statuses(), w.crds.Statuses()...)
}

// enqueue hands the deliveries to the in-memory queues; it never blocks.
func enqueue(p *pipeline, rs []routed) {
	for _, r := range rs {
		if q := p.queues[r.action]; q != nil {
			q.Enqueue(r.d)
		}
	}
}
