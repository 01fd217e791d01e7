package action

import (
	"container/heap"
	"time"

	"github.com/dynwatch/dynwatch/event"
)

// unit is what an item in a queue with a grouper carries: the order it keeps
// with the queue's other items, and for a grouped delivery its members.
type unit struct {
	key     string            // the item's key in pending
	members []*event.Delivery // a grouped delivery's members, in order; nil for a plain delivery
	group   *group            // the group it was formed from; nil for a plain delivery
	labels  map[string]string
	// deps counts the unfinished items it waits for; dependents are the
	// items that wait for it.
	deps       int
	dependents []*item
	done       bool
}

// count is how many events it is.
func (it *item) count() int {
	if it.u != nil && it.u.members != nil {
		return len(it.u.members)
	}
	return 1
}

// deliveries are the events it is: a grouped delivery's members, or itself.
func (it *item) deliveries() []*event.Delivery {
	if it.u != nil && it.u.members != nil {
		return it.u.members
	}
	return []*event.Delivery{it.d}
}

// ids are the ids of its events, for logs.
func (it *item) ids() []string {
	ds := it.deliveries()
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Payload.ID
	}
	return out
}

// nextDue returns when the earliest group is due (it may be due already).
// q.mu is held.
func (g *grouper) nextDue(time.Time) (time.Time, bool) {
	if g == nil || len(g.due) == 0 {
		return time.Time{}, false
	}
	return g.due[0].due, true
}

// fireDue forms the deliveries of every group due at now, the earliest
// first, and forgets delivered groups whose Interval is over. q.mu is held.
func (q *Queue) fireDue(now time.Time) {
	g := q.grp
	if g == nil {
		return
	}
	g.observe(now)
	// A due time further ahead than it was set means the clock went back
	// (while nothing read it): it counts from now instead.
	for len(g.due) > 0 && g.due[0].due.Sub(now) > g.due[0].span {
		g.due[0].due = now.Add(g.due[0].span)
		heap.Fix(&g.due, 0)
	}
	for len(g.due) > 0 && !g.due[0].due.After(now) {
		gr := g.due[0]
		if len(gr.members) == 0 {
			heap.Pop(&g.due)
			delete(g.groups, gr.key)
			continue
		}
		if !gr.resume.IsZero() {
			q.formLate(gr, now)
			continue
		}
		q.form(gr, now)
	}
}

// flushGroups forms the deliveries of every open group now, due or not: for
// a drain, or a reload that changes how the action groups. q.mu is held.
func (q *Queue) flushGroups(now time.Time) {
	g := q.grp
	if g == nil {
		return
	}
	// Each pass takes at least the earliest event still waiting, which no
	// earlier event of its object holds back.
	for g.waiting > 0 {
		before := g.waiting
		for _, gr := range g.groups {
			if len(gr.members) > 0 {
				q.form(gr, now)
			}
		}
		if g.waiting == before {
			return // cannot happen: the earliest waiting event is always free to go
		}
	}
}

// form takes from gr, in order, every member whose object has no earlier
// event waiting in another group, and makes them deliveries of at most Max
// events each. The members it leaves wait for those earlier events (gr is
// due again once they are taken). gr is due next when its Interval after
// this delivery ends. q.mu is held.
func (q *Queue) form(gr *group, now time.Time) {
	gr.resume = time.Time{}
	taken, rest := q.take(gr, now, false)
	gr.members = rest
	for len(taken) > 0 {
		n := min(len(taken), max(q.grp.opts.Max, 1))
		q.addBatch(gr, taken[:n:n])
		taken = taken[n:]
		gr.sent = now
	}
	gr.held = len(rest) > 0
	if gr.held {
		gr.due = now.Add(q.grp.opts.Interval)
	} else {
		gr.due = gr.sent.Add(q.grp.opts.Interval)
	}
	gr.span = q.grp.opts.Interval
	heap.Fix(&q.grp.due, gr.index)
}

// formLate delivers gr's late members (those its last delivery missed) now,
// the ones no earlier event of their object holds back, without moving the
// Interval that holds the others: gr is due again when it was before a late
// member joined. A late member held back goes with the next delivery.
// q.mu is held.
func (q *Queue) formLate(gr *group, now time.Time) {
	taken, rest := q.take(gr, now, true)
	gr.members = rest
	for len(taken) > 0 {
		n := min(len(taken), max(q.grp.opts.Max, 1))
		q.addBatch(gr, taken[:n:n])
		taken = taken[n:]
	}
	gr.due, gr.resume = gr.resume, time.Time{}
	heap.Fix(&q.grp.due, gr.index)
}

// take removes from gr, in order, every member (only the late ones, if
// lateOnly) whose object has no earlier event waiting, and returns them and
// the members left. q.mu is held.
func (q *Queue) take(gr *group, now time.Time, lateOnly bool) (taken []*event.Delivery, rest []*member) {
	g := q.grp
	for _, m := range gr.members {
		l := g.objs[m.d.Key]
		if (lateOnly && !m.late) || l.untaken[0] != m {
			rest = append(rest, m)
			continue
		}
		l.untaken[0] = nil
		l.untaken = l.untaken[1:]
		if len(l.untaken) == 0 {
			l.untaken = nil
		} else if next := l.untaken[0].g; next != gr && next.held {
			next.held = false // what held it back is taken: due now
			next.due = now
			heap.Fix(&g.due, next.index)
		}
		taken = append(taken, m.d)
	}
	g.waiting -= len(taken)
	return taken, rest
}

// addBatch makes members one grouped delivery of gr and puts it in pending,
// after every unfinished item with an earlier event of one of its objects,
// and after gr's previous delivery. q.mu is held.
func (q *Queue) addBatch(gr *group, members []*event.Delivery) {
	it := &item{u: &unit{key: "\x00group\x00" + gr.key, members: members, group: gr, labels: gr.labels}}
	if gr.last != nil {
		dependOn(it, gr.last)
	}
	gr.last = it
	for _, d := range members {
		q.grp.follow(it, d.Key)
	}
	q.place(it)
}

// follow makes it wait for the latest unfinished item with an event of
// object key, and become that item. q.mu is held.
func (g *grouper) follow(it *item, key string) {
	l := g.line(key)
	if l.last != nil && l.last != it {
		dependOn(it, l.last)
	}
	l.last = it
}

// dependOn makes it wait until on is finished.
func dependOn(it, on *item) {
	if on.u.done {
		return
	}
	if n := len(on.u.dependents); n > 0 && on.u.dependents[n-1] == it {
		return
	}
	on.u.dependents = append(on.u.dependents, it)
	it.u.deps++
}

// place appends it to its key's pending list; the key is ready if it is
// the list's head and waits for nothing. q.mu is held.
func (q *Queue) place(it *item) {
	key := it.u.key
	list, busy := q.pending[key]
	q.pending[key] = append(list, it)
	if !busy && it.u.deps == 0 && !q.stop {
		q.ready = append(q.ready, key)
	}
}

// finishUnit notes that it is finished: the items waiting for it may go, and
// its objects no longer wait for it. q.mu is held.
func (q *Queue) finishUnit(it *item) {
	u := it.u
	u.done = true
	for _, w := range u.dependents {
		w.u.deps--
		if w.u.deps == 0 && !q.stop {
			if list := q.pending[w.u.key]; len(list) > 0 && list[0] == w {
				q.ready = append(q.ready, w.u.key)
			}
		}
	}
	u.dependents = nil
	for _, d := range it.deliveries() {
		if l := q.grp.objs[d.Key]; l != nil && l.last == it {
			l.last = nil
			if len(l.untaken) == 0 {
				delete(q.grp.objs, d.Key)
			}
		}
	}
	if u.group != nil && u.group.last == it {
		u.group.last = nil
	}
}

// waits reports whether the head of key's list waits for another item.
// q.mu is held.
func (q *Queue) waits(key string) bool {
	if q.grp == nil {
		return false // no item waits for another
	}
	list := q.pending[key]
	return len(list) > 0 && list[0].u != nil && list[0].u.deps > 0
}

// blockedKeys counts the pending keys whose head waits for another item.
// q.mu is held.
func (q *Queue) blockedKeys() int {
	if q.grp == nil {
		return 0
	}
	n := 0
	for key := range q.pending {
		if q.waits(key) {
			n++
		}
	}
	return n
}
