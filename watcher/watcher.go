// Package watcher is the daemon's pipeline: it resolves the rules' selectors
// through discovery, keeps one informer per watched resource and namespace scope,
// evaluates each event with the rules of its resource only, and hands matches to
// the action queues.
package watcher

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	k8sdiscovery "k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"github.com/dynwatch/dynwatch/action"
	"github.com/dynwatch/dynwatch/discovery"
	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/rules"
)

// Watcher runs one config against one cluster.
type Watcher struct {
	file   *rules.File
	disc   k8sdiscovery.DiscoveryInterface
	log    *slog.Logger
	queues map[string]*action.Queue
	closer []io.Closer
	mgr    *dyninformer.Manager

	mu    sync.RWMutex
	index map[schema.GroupVersionResource][]*rules.Rule
}

// Options configure a Watcher.
type Options struct {
	// Logger receives dynwatch's own logs. Default: slog.Default().
	Logger *slog.Logger
	// Stdout is where `log: {}` actions write. Default: os.Stdout.
	Stdout io.Writer
}

// New builds the actions of file and a watcher for it.
func New(file *rules.File, dyn dynamic.Interface, disc k8sdiscovery.DiscoveryInterface, opts Options) (*Watcher, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Stdout == nil {
		opts.Stdout = os.Stdout
	}
	w := &Watcher{file: file, disc: disc, log: opts.Logger, queues: map[string]*action.Queue{}}
	for _, spec := range file.Config.Actions {
		sender, closer, err := action.Build(spec, opts.Stdout)
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("action %s: %w", spec.Name, err)
		}
		if closer != nil {
			w.closer = append(w.closer, closer)
		}
		w.queues[spec.Name] = action.NewQueue(spec.Name, sender, action.QueueOptions{
			Size:        spec.QueueSize,
			Concurrency: spec.Concurrency,
			Retry:       action.RetryOf(spec),
			Logger:      opts.Logger,
		})
	}
	w.mgr = dyninformer.NewManager(dyn, w.handle, dyninformer.Options{
		Resync: file.Config.Defaults.Resync.Std(),
		Logger: opts.Logger,
	})
	return w, nil
}

// Close releases what the actions opened (log files).
func (w *Watcher) Close() {
	for _, c := range w.closer {
		_ = c.Close()
	}
}

// Manager returns the informer manager, for status and tests.
func (w *Watcher) Manager() *dyninformer.Manager { return w.mgr }

// Queue returns the named action's queue.
func (w *Watcher) Queue(name string) *action.Queue { return w.queues[name] }

// Run resolves the rules, watches, and delivers until ctx is done; then it stops
// the informers, drains the queues for the shutdown grace period, and returns
// after every goroutine it started has exited.
func (w *Watcher) Run(ctx context.Context) error {
	if !w.file.StateEnabled() {
		w.log.Info("no state.path: objects that exist at start fire nothing unless a rule sets onStart: all")
	}
	cat, err := discovery.Load(w.disc)
	if err != nil {
		return err
	}
	for gv, gerr := range cat.Failed {
		w.log.Warn("discovery failed for a group version; its resources are not watched", "groupVersion", gv.String(), "err", gerr)
	}
	w.apply(cat)

	queueCtx, stopQueues := context.WithCancel(context.WithoutCancel(ctx))
	defer stopQueues()
	var wg sync.WaitGroup
	grace := w.file.Config.ShutdownGrace.Std()
	for _, q := range w.queues {
		wg.Go(func() { _ = q.Run(queueCtx, grace) })
	}
	err = w.mgr.Run(ctx) // returns once every informer goroutine is gone
	stopQueues()         // no more events can arrive: drain what is queued
	wg.Wait()
	w.Close()
	return err
}

// Plan is what a config resolves to against one catalog.
type Plan struct {
	// Rules maps each rule to the resources it selects.
	Rules map[string][]discovery.Resource
	// Watches are the informers needed: one per resource and namespace scope.
	Watches []dyninformer.Watch
	// Index maps each watched resource to the rules that select it.
	Index map[schema.GroupVersionResource][]*rules.Rule
}

// Resolve computes the plan of file against cat. A resource selected by several
// rules or selectors is watched once; when any rule wants all namespaces of a
// resource, one all-namespaces informer serves every rule on it.
func Resolve(file *rules.File, cat *discovery.Catalog) *Plan {
	p := &Plan{Rules: map[string][]discovery.Resource{}, Index: map[schema.GroupVersionResource][]*rules.Rule{}}
	type scope struct {
		res discovery.Resource
		all bool
		nss map[string]bool
	}
	scopes := map[schema.GroupVersionResource]*scope{}
	var order []schema.GroupVersionResource
	for _, r := range file.Rules {
		resolved := cat.Resolve(r.Selectors...)
		p.Rules[r.Name] = resolved
		for _, res := range resolved {
			gvr := res.GVR()
			s, ok := scopes[gvr]
			if !ok {
				s = &scope{res: res, nss: map[string]bool{}}
				scopes[gvr] = s
				order = append(order, gvr)
			}
			p.Index[gvr] = append(p.Index[gvr], r)
			if r.Namespaces == nil || !res.Namespaced {
				s.all = true
			}
			for _, ns := range r.Namespaces {
				s.nss[ns] = true
			}
		}
	}
	for _, gvr := range order {
		s := scopes[gvr]
		if s.all {
			p.Watches = append(p.Watches, dyninformer.Watch{Resource: s.res.Ref()})
			continue
		}
		for _, ns := range slices.Sorted(maps.Keys(s.nss)) {
			p.Watches = append(p.Watches, dyninformer.Watch{Resource: s.res.Ref(), Namespace: ns})
		}
	}
	return p
}

// apply makes the watched set and the rule index match cat.
func (w *Watcher) apply(cat *discovery.Catalog) {
	p := Resolve(w.file, cat)
	for _, r := range w.file.Rules {
		if len(p.Rules[r.Name]) == 0 {
			w.log.Warn("rule selects no served resource yet; it fires once one appears", "rule", r.Name)
		}
	}
	w.mu.Lock()
	w.index = p.Index
	w.mu.Unlock()
	w.mgr.Set(p.Watches)
}

// handle evaluates one event with the rules of its resource and enqueues a
// delivery per matching rule and action. It never blocks on an action.
func (w *Watcher) handle(ev *event.Event) {
	gvr := schema.GroupVersionResource{Group: ev.Resource.Group, Version: ev.Resource.Version, Resource: ev.Resource.Resource}
	w.mu.RLock()
	rs := w.index[gvr]
	w.mu.RUnlock()
	var prepared *rules.Prepared
	for _, r := range rs {
		if !r.Match(ev) {
			continue
		}
		if prepared == nil {
			prepared = w.file.Prepare(ev)
		}
		d, err := rules.Delivery(r.Payload(prepared), ev.ObjectKey())
		if err != nil {
			w.log.Error("encode payload", "id", ev.ID(), "rule", r.Name, "err", err)
			continue
		}
		for _, name := range r.Actions {
			w.queues[name].Enqueue(d)
		}
	}
}
