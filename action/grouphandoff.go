package action

import (
	"container/heap"
	"reflect"
	"time"
)

// A reload that changes a grouped action (or makes one grouped, or one
// ungrouped) hands the old queue's backlog over as for any action, with the
// order it keeps across keys: the old queue's deliveries go first, each new
// delivery of one of their objects waits for them. Open groups move as they
// are when the new queue groups the same way; when it groups otherwise (or
// not at all), they are delivered under the old settings first: formed now,
// and handed over as deliveries.

// takeGroups makes q's open groups ready to move: formed now unless next
// groups the same way. q.mu is held.
func (q *Queue) takeGroups(next *Queue) (keep bool) {
	if q.grp == nil || q.grp.opts == nil {
		return false
	}
	if next.grp != nil && next.grp.opts != nil && reflect.DeepEqual(*q.grp.opts, *next.grp.opts) {
		return true
	}
	q.flushGroups(q.clock.Now())
	return false
}

// adopt takes pending, the lists of the predecessor (whose grouper, if it
// had one, is from), ahead of everything next holds; keepGroups tells
// whether the predecessor's open groups join next's. next does not run yet:
// nothing of it is in flight or backing off. next.mu is held.
func (next *Queue) adopt(pending map[string][]*item, from *grouper, keepGroups bool) (moved int) {
	ng := next.grp
	if ng == nil {
		// An action that no longer groups: it keeps the order of what it
		// takes over. What it holds is plain deliveries by object.
		ng = newGrouper(nil)
		next.grp = ng
		for key, list := range next.pending {
			giveUnits(key, list)
			ng.line(key).last = list[len(list)-1]
		}
	}
	if from != nil {
		moved += next.takeOrder(from, keepGroups)
	}
	for key, list := range pending {
		if from == nil {
			giveUnits(key, list) // plain deliveries by object, to a queue that groups
			ng.line(key).last = list[len(list)-1]
		}
		next.pending[key] = append(list, next.pending[key]...)
		for _, it := range list {
			moved += it.count()
		}
	}
	next.total += moved
	next.ready = next.ready[:0]
	for key, list := range next.pending {
		if list[0].u.deps == 0 {
			next.ready = append(next.ready, key)
		}
	}
	return moved
}

// giveUnits gives the plain deliveries of key's list what a queue with a
// grouper tracks of each item.
func giveUnits(key string, list []*item) {
	for _, it := range list {
		if it.u == nil {
			it.u = &unit{key: key}
		}
	}
}

// takeOrder makes next's deliveries of each object wait for from's latest
// one, and, with keepGroups, moves from's open groups ahead of next's. It
// runs before from's lists join next's. next.mu is held.
func (next *Queue) takeOrder(from *grouper, keepGroups bool) (moved int) {
	ng := next.grp
	for key, l := range from.objs {
		nl := ng.line(key)
		if l.last != nil && !l.last.u.done {
			if mine := next.pending[key]; len(mine) > 0 {
				dependOn(mine[0], l.last)
			}
			if nl.last == nil {
				nl.last = l.last
			}
		}
		if keepGroups && len(l.untaken) > 0 {
			nl.untaken = append(l.untaken, nl.untaken...)
		}
	}
	if !keepGroups {
		return 0
	}
	for key, gr := range from.groups {
		moved += len(gr.members)
		ngr := ng.groups[key]
		if ngr == nil {
			ngr = &group{key: key, labels: gr.labels, index: -1}
			ng.groups[key] = ngr
		}
		for _, m := range gr.members {
			m.g = ngr
		}
		ngr.members = append(gr.members, ngr.members...)
		ngr.sent, ngr.held = later(ngr.sent, gr.sent), ngr.held || gr.held
		if ngr.last == nil {
			ngr.last = gr.last
		}
		if ngr.index < 0 {
			ngr.due, ngr.span, ngr.resume = gr.due, gr.span, gr.resume
			heap.Push(&ng.due, ngr)
		} else {
			mergeDue(ngr, gr)
			heap.Fix(&ng.due, ngr.index)
		}
	}
	ng.waiting += moved
	return moved
}

// mergeDue makes ngr due when the earlier of the two groups is, and, when a
// late member made either due now, due again (resume) when the earlier of
// their Intervals ends: a hand-off keeps what holds the non-late members.
func mergeDue(ngr, gr *group) {
	normal := func(g *group) time.Time { // when its non-late members are due
		if !g.resume.IsZero() {
			return g.resume
		}
		return g.due
	}
	resume := normal(ngr)
	if r := normal(gr); r.Before(resume) {
		resume = r
	}
	if gr.due.Before(ngr.due) {
		ngr.due, ngr.span = gr.due, gr.span
	}
	ngr.resume = time.Time{}
	if ngr.due.Before(resume) {
		ngr.resume = resume
	}
}
