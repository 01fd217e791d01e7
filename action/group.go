package action

import (
	"container/heap"
	"strings"
	"time"

	"github.com/dynwatch/dynwatch/event"
)

// GroupOptions make a queue batch its deliveries into grouped deliveries, as
// Alertmanager groups alerts: the events with the same values of By form a
// group; a new group is delivered Wait after its first event, and after a
// delivery a group's next events wait Interval; one delivery holds at most
// Max events, a larger group is split in order.
type GroupOptions struct {
	// By are the labels that name a group: rule, namespace, name, kind,
	// resource, cluster, type, transition. None: one group for the action.
	By       []string
	Wait     time.Duration
	Interval time.Duration
	Max      int
}

// The grouping stage sits between Enqueue and the queue's pending keys. An
// event of a grouped action joins the open group of its labels (it counts in
// the queue's depth from then on, and with state it is on disk already); the
// queue's one timer forms a group's deliveries when it is due (a heap of due
// times, not a timer per group). A formed delivery is a unit of the pending
// lists with the order it has to keep: it starts only once every earlier
// unit holding an event of one of its objects is finished, so that an
// object's events keep their order across groups, and it finishes every
// member (Outbox.Done, Finisher) only once it was delivered or given up.

// grouper is a queue's grouping stage and the order it keeps across keys.
type grouper struct {
	// opts is nil in a queue that groups nothing but took grouped deliveries
	// over from its predecessor (a reload removed group): it keeps their order
	// for the objects it delivers.
	opts    *GroupOptions
	groups  map[string]*group   // open groups by their labels' key
	due     groupHeap           // groups with members, or delivered and remembered for Interval
	objs    map[string]*objLine // by delivery key: each object's events not finished yet
	waiting int                 // events in open groups
	seen    time.Time           // the latest time the stage read: a later one before it is the clock going back
}

// group is one label set's open group.
type group struct {
	key     string
	labels  map[string]string
	members []*member
	due     time.Time
	// span is how long due was set ahead (Wait or Interval): a due time
	// further ahead than that means the clock went back.
	span time.Duration
	sent time.Time // when its last delivery was formed; zero: none yet
	// held: it was due, but some members wait for an earlier event of their
	// object in another group.
	held bool
	// resume is the due time a late member put off (zero: none): the group
	// is due now for its late members only, and due at resume again after.
	resume time.Time
	last   *item // its latest delivery not finished, which the next follows
	index  int   // in the heap; -1 when not in it
}

// member is one event waiting in an open group.
type member struct {
	d    *event.Delivery
	g    *group
	late bool // accepted before the group's last delivery was formed
}

// objLine is what one object (a delivery key) has in the queue: its events
// still in open groups, in order, and the latest unit with one of its events.
type objLine struct {
	untaken []*member
	last    *item
}

func newGrouper(opts *GroupOptions) *grouper {
	return &grouper{opts: opts, groups: map[string]*group{}, objs: map[string]*objLine{}}
}

// groupKey names d's group: its label values, in by's order.
func (g *grouper) groupKey(d *event.Delivery) string {
	switch len(g.opts.By) {
	case 0:
		return ""
	case 1:
		return event.GroupLabel(g.opts.By[0], d.Payload)
	}
	var b strings.Builder
	for i, l := range g.opts.By {
		if i > 0 {
			b.WriteByte(0)
		}
		b.WriteString(event.GroupLabel(l, d.Payload))
	}
	return b.String()
}

// acceptTime is when d was first accepted: when dynwatch saw its event (the
// payload's time, kept on disk with it), so that after a restart a group's
// wait counts from its first event; never later than now. The result carries
// now's monotonic reading, so that a later step of the wall clock does not
// move it.
func acceptTime(d *event.Delivery, now time.Time) time.Time {
	seen, err := time.Parse(event.TimeFormat, d.Payload.Time)
	if err != nil {
		return now
	}
	if ago := now.Sub(seen); ago > 0 {
		return now.Add(-ago)
	}
	return now
}

// late reports whether d, joining gr after gr's last delivery was formed,
// was accepted before it: an event of the same burst read back from disk
// (a restart, or a backlog beyond the window) after the group went. It goes
// now, with the group's next delivery, not an Interval later: the Interval
// holds back events that came after a delivery, not those it missed.
func late(gr *group, d *event.Delivery, now time.Time) bool {
	due := gr.due // when the Interval after the last delivery ends
	if !gr.resume.IsZero() {
		due = gr.resume // an earlier late member made the group due now
	}
	return !gr.held && !gr.sent.IsZero() && due.After(now) && acceptTime(d, now).Before(gr.sent)
}

// line returns key's objLine, made if needed.
func (g *grouper) line(key string) *objLine {
	l := g.objs[key]
	if l == nil {
		l = &objLine{}
		g.objs[key] = l
	}
	return l
}

// observe notes the time now: when the clock went back, every due time
// moves back as much, so that a wait stays as long as it was. (A real
// clock's readings are monotonic: only a clock set by hand goes back.)
// q.mu is held.
func (g *grouper) observe(now time.Time) {
	if back := g.seen.Sub(now); back > 0 {
		for _, gr := range g.due {
			gr.due = gr.due.Add(-back)
			if !gr.resume.IsZero() {
				gr.resume = gr.resume.Add(-back)
			}
		}
	}
	g.seen = now
}

// join adds d to its open group and reports whether the group's due time is
// now the earliest (the timer must be rearmed). q.mu is held.
func (g *grouper) join(d *event.Delivery, now time.Time) (earliest bool) {
	g.observe(now)
	key := g.groupKey(d)
	gr := g.groups[key]
	if gr == nil {
		gr = &group{key: key, labels: event.GroupLabels(g.opts.By, d.Payload), index: -1}
		g.groups[key] = gr
	}
	m := &member{d: d, g: gr}
	gr.members = append(gr.members, m)
	l := g.line(d.Key)
	l.untaken = append(l.untaken, m)
	g.waiting++
	if gr.index < 0 {
		// A new group (one delivered and remembered is in the heap already,
		// due Interval after its delivery).
		gr.due, gr.span = acceptTime(d, now).Add(g.opts.Wait), g.opts.Wait
		heap.Push(&g.due, gr)
	} else if late(gr, d, now) {
		// Only the late members go now: the others still wait the
		// Interval after the group's last delivery.
		m.late = true
		if gr.resume.IsZero() {
			gr.resume = gr.due
		}
		gr.due = now
		heap.Fix(&g.due, gr.index)
	}
	return gr.index == 0
}

// groupHeap orders groups by due time.
type groupHeap []*group

func (h groupHeap) Len() int           { return len(h) }
func (h groupHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h groupHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

func (h *groupHeap) Push(x any) {
	gr := x.(*group)
	gr.index = len(*h)
	*h = append(*h, gr)
}

func (h *groupHeap) Pop() any {
	old := *h
	gr := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	gr.index = -1
	return gr
}
