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
	index   map[schema.GroupVersionResource][]*rules.Rule
	queues  map[string]*action.Queue
	// paths are, per resource, what restart state records of each object:
	// every path its rules read, worked out once per config, not per event.
	paths map[schema.GroupVersionResource][]string
	// added maps the epoch of each reload to the rules it added: the objects
	// that exist then are new only to those rules.
	added rules.Added
}

// nextPipeline is the pipeline of file resolved as p: the rules of p's index,
// with state the paths they read, the current queues, and the rules the
// reloads before added.
func (w *Watcher) nextPipeline(file *plan.File, p *plan.Plan) *pipeline {
	next := &pipeline{file: file, log: w.log, metrics: w.metrics, index: p.Index, queues: queueMap(w.acts.queues), added: w.pipe.Load().added}
	if w.durable != nil {
		next.paths = make(map[schema.GroupVersionResource][]string, len(p.Index))
		for gvr, rs := range p.Index {
			next.paths[gvr] = recordPaths(rs)
		}
	}
	return next
}

// withAdded returns p with the rules a reload added (by name): the objects
// that the informers of epoch list are new only to them.
func (p *pipeline) withAdded(epoch uint64, added map[string]bool) *pipeline {
	next := *p
	next.added = maps.Clone(p.added)
	if next.added == nil {
		next.added = rules.Added{}
	}
	next.added[epoch] = added
	return &next
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
	eval := rules.Evaluator{Redactor: p.file.Redactor, Added: p.added}
	if p.metrics != nil {
		eval.Observer = p.metrics // timed and counted only when there are metrics
	}
	var out []routed
	for _, m := range eval.Evaluate(p.index[gvr], ev) {
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
