package watcher

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dynwatch/dynwatch/action"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/state"
)

// pager keeps each action's in-memory queue to a window of its outbox, its
// durable queue (the action's queueSize, at most maxWindow): what is accepted beyond it stays on disk only, and
// is read back, in order, as the window empties. A receiver down for an hour
// grows the file, not the process; a restart reads a backlog a window at a time.
type pager struct {
	store *state.Store
	log   *slog.Logger
	pipe  *atomic.Pointer[pipeline]
	kick  chan struct{}

	mu      sync.Mutex
	actions map[string]*paged
}

// paged is one action's place in its durable queue.
type paged struct {
	// spilled: deliveries after last are on disk and not in memory; new ones
	// stay on disk too, so that order holds, until the pager catches up.
	spilled bool
	last    uint64 // the highest sequence number handed to memory
	// held: not read yet (restart), new deliveries wait on disk.
	held bool
}

func newPager(store *state.Store, log *slog.Logger, pipe *atomic.Pointer[pipeline]) *pager {
	return &pager{store: store, log: log, pipe: pipe, kick: make(chan struct{}, 1), actions: map[string]*paged{}}
}

func (pg *pager) action(name string) *paged {
	a := pg.actions[name]
	if a == nil {
		a = &paged{}
		pg.actions[name] = a
	}
	return a
}

// maxWindow caps the window: enough to keep every worker of an action busy,
// small enough that a backlog of large objects stays out of memory.
const maxWindow = 1000

// window is how many of an action's deliveries memory holds at most: its
// queueSize, up to maxWindow. Events waiting in a grouped action's open
// groups do not count: see maxGrouped.
func window(p *pipeline, action string) int {
	if spec := p.file.Action(action); spec != nil && spec.QueueSize > 0 {
		return min(spec.QueueSize, maxWindow)
	}
	return maxWindow
}

// maxGrouped caps, apart from the window, the events memory holds in a
// grouped action's open groups. Counted against the window, a group could
// hold no more than the window: the rest of a burst, read back from disk,
// would join a group just delivered and wait its whole interval. A burst up
// to maxGrouped events is delivered at the wait, as without state; beyond
// it the rest waits on disk and joins the groups formed after.
const maxGrouped = 10 * maxWindow

// room is how many more deliveries of action memory may take: the window
// less what is queued outside open groups, and no more than maxGrouped less
// what waits in them.
func room(p *pipeline, name string, q *action.Queue) int {
	total, grouped := q.Held()
	r := window(p, name) - (total - grouped)
	if q.Grouped() {
		r = min(r, maxGrouped-grouped)
	}
	return r
}

// offer hands committed deliveries to their queues, or leaves them on disk
// when the action's window is full or older ones wait on disk.
func (pg *pager) offer(rs []routed) {
	p := pg.pipe.Load()
	pg.mu.Lock()
	defer pg.mu.Unlock()
	for _, r := range rs {
		q := p.queues[r.action]
		if q == nil {
			continue
		}
		a := pg.action(r.action)
		switch {
		case r.d.Seq <= a.last:
			continue // already paged in from disk
		case a.spilled:
			continue
		case room(p, r.action, q) <= 0:
			a.spilled = true
			pg.signal()
			continue
		}
		q.Enqueue(r.d)
		a.last = r.d.Seq
	}
}

// spillAll marks every action with deliveries on disk at start as spilled:
// they are paged in before anything new. The backlog of an action the config
// no longer has is dropped, with one warning giving its size: an action's
// backlog belongs to its name, and a name gone at a start is gone for good.
func (pg *pager) spillAll() error {
	counts, err := pg.store.PendingActions()
	if err != nil {
		return err
	}
	p := pg.pipe.Load()
	pg.mu.Lock()
	defer pg.mu.Unlock()
	for action, n := range counts {
		if p.queues[action] == nil {
			dropped, err := pg.store.DropQueue(action)
			if err != nil {
				// Housekeeping only: tried again at the next start.
				pg.log.Error("state: cannot drop the undelivered events of an action the config no longer has", "action", action, "events", n, "err", err)
				continue
			}
			pg.log.Warn("state held undelivered events of an action the config no longer has; they are dropped", "action", action, "events", dropped)
			continue
		}
		pg.action(action).spilled = true
		pg.log.Info("delivering events left from the last run first", "action", action, "events", n)
	}
	pg.signal()
	return nil
}

// restart makes the pager read action's durable queue again from its start,
// before anything new goes to memory: for an action a reload (re-)adds, whose
// earlier queue may have held deliveries that were neither delivered nor
// left for the pager to read. With ready set, new deliveries stay on disk but
// nothing is read until ready is closed: what an earlier queue still
// delivers is then marked done, and not read again.
func (pg *pager) restart(action string, ready <-chan struct{}) {
	pg.mu.Lock()
	a := &paged{spilled: true, held: ready != nil}
	pg.actions[action] = a
	pg.mu.Unlock()
	if ready == nil {
		pg.signal()
		return
	}
	go func() {
		<-ready
		pg.mu.Lock()
		a.held = false
		pg.mu.Unlock()
		pg.signal()
	}()
}

func (pg *pager) signal() {
	select {
	case pg.kick <- struct{}{}:
	default:
	}
}

// run pages deliveries in until ctx ends.
func (pg *pager) run(ctx context.Context) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-pg.kick:
		case <-t.C:
		}
		pg.pageIn()
	}
}

// pageIn refills, from disk, every spilled action whose queue is below half
// its window; an action whose disk holds nothing newer is no longer spilled.
func (pg *pager) pageIn() {
	p := pg.pipe.Load()
	pg.mu.Lock()
	defer pg.mu.Unlock()
	for name, a := range pg.actions {
		q := p.queues[name]
		if !a.spilled || a.held || q == nil {
			continue
		}
		w := window(p, name)
		n := room(p, name, q)
		if n < w/2 {
			continue
		}
		list, err := pg.store.PendingAfter(name, a.last, n)
		if err != nil {
			pg.log.Error("state: cannot read undelivered events; retrying", "action", name, "err", err)
			continue
		}
		for _, pd := range list {
			a.last = pd.Seq
			var pl event.Payload
			if err := json.Unmarshal(pd.JSON, &pl); err != nil {
				pg.log.Error("state: unreadable pending delivery dropped", "action", name, "seq", pd.Seq, "err", err)
				_ = pg.store.Done(name, pd.Seq)
				continue
			}
			q.Enqueue(&event.Delivery{Payload: &pl, JSON: pd.JSON, Key: storedKey(pd.Key), Seq: pd.Seq})
		}
		if len(list) < n {
			a.spilled = false // caught up: new deliveries go to memory again
		}
	}
}
