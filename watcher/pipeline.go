package watcher

import (
	"context"
	"log/slog"
	"maps"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/dynwatch/dynwatch/action"
	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/metrics"
	"github.com/dynwatch/dynwatch/payload"
	"github.com/dynwatch/dynwatch/plan"
	"github.com/dynwatch/dynwatch/rules"
)

// pipeline is one consistent view of the config: the rules by resource and the
// queues of their actions. Events read it without locks; changes swap it whole.
type pipeline struct {
	file    *plan.File
	log     *slog.Logger
	metrics *metrics.Metrics
	queues  map[string]*action.Queue
	// clusters holds each cluster's rules by resource, by the cluster's
	// name ("" is the one cluster without clusters).
	clusters map[string]*clusterIndex
}

// clusterIndex is what the pipeline knows of one cluster's resources.
type clusterIndex struct {
	index map[schema.GroupVersionResource][]*rules.Rule
	// paths are, per resource, what restart state records of each object:
	// every path its rules read, worked out once per config, not per event.
	paths map[schema.GroupVersionResource][]string
	// added maps the epoch of each reload to the rules it added: the objects
	// that exist then are new only to those rules. Epochs are the cluster's
	// informer manager's.
	added rules.Added
}

// rulesOf returns the rules of the watch k's resource in its cluster.
func (p *pipeline) rulesOf(k dyninformer.Key) []*rules.Rule {
	if ci := p.clusters[k.Cluster]; ci != nil {
		return ci.index[k.GVR]
	}
	return nil
}

// pathsOf returns what restart state records of the objects of the watch k.
func (p *pipeline) pathsOf(k dyninformer.Key) ([]string, bool) {
	if ci := p.clusters[k.Cluster]; ci != nil {
		paths, ok := ci.paths[k.GVR]
		return paths, ok
	}
	return nil, false
}

// nextPipeline is the pipeline of file with the cluster's rules resolved as
// p: the rules of p's index, with state the paths they read, the current
// queues, the other clusters as they are, and the rules the reloads before
// added.
func (w *Watcher) nextPipeline(cluster string, file *plan.File, p *plan.Plan) *pipeline {
	cur := w.pipe.Load()
	next := &pipeline{file: file, log: w.log, metrics: w.metrics, queues: queueMap(w.acts.queues), clusters: maps.Clone(cur.clusters)}
	if next.clusters == nil {
		next.clusters = map[string]*clusterIndex{}
	}
	ci := &clusterIndex{index: p.Index}
	if old := cur.clusters[cluster]; old != nil {
		ci.added = old.added
	}
	if w.durable != nil {
		ci.paths = make(map[schema.GroupVersionResource][]string, len(p.Index))
		for gvr, rs := range p.Index {
			ci.paths[gvr] = recordPaths(rs)
		}
	}
	next.clusters[cluster] = ci
	return next
}

// withAdded returns p with the rules a reload added (by name): the objects
// that the informers of the cluster's epoch list are new only to them.
func (p *pipeline) withAdded(cluster string, epoch uint64, added map[string]bool) *pipeline {
	next := *p
	next.clusters = maps.Clone(p.clusters)
	ci := *next.clusters[cluster]
	ci.added = maps.Clone(ci.added)
	if ci.added == nil {
		ci.added = rules.Added{}
	}
	ci.added[epoch] = added
	next.clusters[cluster] = &ci
	return &next
}

// withoutCluster returns p without the named cluster's rules.
func (p *pipeline) withoutCluster(cluster string) *pipeline {
	next := *p
	next.clusters = maps.Clone(p.clusters)
	delete(next.clusters, cluster)
	return &next
}

// handle evaluates one event with the rules of its resource and enqueues a
// delivery per matching rule and action. It never blocks on an action.
func (w *Watcher) handle(k dyninformer.Key, ev *event.Event) {
	ev.Cluster = k.Cluster
	p := w.pipe.Load()
	if ev.Timed == nil { // a timer's evaluation is no event seen
		p.metrics.EventIn(k.Cluster, ev.Resource.Name(), string(ev.Type))
	}
	if w.durable != nil {
		w.durable.handle(p, k, ev)
		return
	}
	out := p.route(k, ev, memWaits{w.waits})
	enqueue(w.pipe.Load(), out) // the queues current now, should a reload have swapped them
}

// routed is a delivery on its way to one action.
type routed struct {
	action string
	d      *event.Delivery
}

// route evaluates the rules of the event's resource and returns a delivery per
// rule that fires and action. The payload is built and encoded once per rule.
// waits keeps the timed rules' states (in the event's commit with state.path).
func (p *pipeline) route(k dyninformer.Key, ev *event.Event, waits rules.Waits) []routed {
	ci := p.clusters[k.Cluster]
	if ci == nil {
		return nil // a cluster the config no longer has
	}
	eval := rules.Evaluator{Redactor: p.file.Redactor, Added: ci.added, Waits: waits, Deriver: p.file.Health}
	if p.metrics != nil {
		eval.Observer = p.metrics // timed and counted only when there are metrics
	}
	var out []routed
	for _, m := range eval.Evaluate(ci.index[k.GVR], ev) {
		r := m.Rule
		d, err := payload.Delivery(m.Payload, ev.ObjectKey())
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

// enqueue hands the deliveries to the in-memory queues; it never blocks.
func enqueue(p *pipeline, rs []routed) {
	for _, r := range rs {
		if q := p.queues[r.action]; q != nil {
			q.Enqueue(r.d)
		}
	}
}
