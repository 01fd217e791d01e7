package watcher

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/rules"
	"github.com/dynwatch/dynwatch/state"
)

// durable keeps restart state: a record per object of every watched resource,
// and action queues on disk. An object's record advances in the same
// transaction as the deliveries its event produced, so a crash at any point
// either keeps both or neither (and then the next start's diff finds the change).
type durable struct {
	store *state.Store
	// commits are applied by one goroutine, in order, several to a transaction
	// (group commit): the handler never waits for the disk, and one event's
	// record and deliveries still land together or not at all.
	commits chan *commit
	// closeMu guards closed: once the commit loop is told to finish, a late
	// submission (a reload racing the shutdown) is refused, not a panic.
	closeMu sync.RWMutex
	closed  bool

	mu sync.Mutex
	// listing holds the watches whose initial list is being compared with the
	// records: the uids seen so far, and whether the scope had a baseline.
	listing map[dyninformer.Key]*listing
}

type listing struct {
	res      event.Resource
	seen     map[string]bool
	baseline bool
	diff     bool // the list is of objects known before (start, reload): compare
	// finishing is set once the list is complete and its comparison submitted.
	finishing bool
}

// metaPaths are recorded for every object, so that a replayed delete can say
// which object went.
var metaPaths = []string{"metadata.name", "metadata.namespace", "metadata.uid", "metadata.labels"}

// scopeOf names a watch's records: group, resource and namespace scope, not the
// version, so that a move to another version keeps them.
func scopeOf(r event.Resource, ns string) string {
	return r.Group + "/" + r.Resource + "/" + ns
}

// recordPaths are the paths recorded for objects of a resource: every path its
// rules read, and the metadata.
func recordPaths(rs []*rules.Rule) []string {
	paths := slices.Clone(metaPaths)
	for _, r := range rs {
		paths = append(paths, r.Paths()...)
	}
	slices.Sort(paths)
	return slices.Compact(paths)
}

// startListing notes new watches, whose initial lists are compared with the
// records (known) or recorded as new (not known).
func (d *durable) startListing(watches []dyninformer.Watch, known bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, w := range watches {
		scope := scopeOf(w.Resource, w.Namespace)
		var has bool
		_ = d.store.View(func(tx *state.Tx) error { has = tx.HasBaseline(scope); return nil })
		d.listing[w.Key()] = &listing{res: w.Resource, seen: map[string]bool{}, diff: known, baseline: has}
	}
}

// listingKeys returns the watches whose initial list is not finished yet.
func (d *durable) listingKeys() []dyninformer.Key {
	d.mu.Lock()
	defer d.mu.Unlock()
	keys := make([]dyninformer.Key, 0, len(d.listing))
	for k := range d.listing {
		keys = append(keys, k)
	}
	return keys
}

// handle is Watcher.handle with state: it decides what the event fires (a live
// event, or during an initial list what changed while dynwatch was down),
// records the object and persists the deliveries in one transaction, and only
// then enqueues them.
func (w *Watcher) handleDurable(p *pipeline, watch dyninformer.Key, ev *event.Event) {
	d := w.durable
	rs := p.index[watch.GVR]
	scope := scopeOf(ev.Resource, watch.Namespace)
	paths, ok := p.paths[watch.GVR]
	if !ok {
		paths = metaPaths // a resource no rule selects any more: keep who it was
	}

	var evs []*event.Event
	var rec *state.Record
	var out []routed
	d.mu.Lock()
	l := d.listing[watch]
	if l != nil && ev.Type == event.Add {
		l.seen[ev.UID] = true
	}
	d.mu.Unlock()

	d.submit(&commit{fn: func(tx *state.Tx) error {
		var err error
		if rec, err = tx.Get(scope, ev.UID); err != nil {
			return err
		}
		evs = []*event.Event{ev}
		if ev.Initial && l != nil && l.diff && l.baseline {
			if replay := w.replayOf(ev, rec, paths); replay != nil {
				evs = append(evs, replay)
			}
		}
		out = nil
		for _, e := range evs {
			out = append(out, w.route(p, rs, e)...)
		}
		if err := persist(tx, out); err != nil {
			return err
		}
		if ev.Type == event.Delete {
			return tx.Delete(scope, ev.UID)
		}
		return tx.Put(scope, ev.UID, recordOf(ev, paths))
	}, after: func(err error) {
		if err != nil {
			w.log.Error("state: event not recorded; it fires after the next start", "id", ev.ID(), "err", err)
			return
		}
		enqueue(p, out)
	}})
}

// replayOf returns the event an object of the initial list fires under onStart
// diff: add when it is new, update when it changed while dynwatch was down.
func (w *Watcher) replayOf(ev *event.Event, rec *state.Record, paths []string) *event.Event {
	r := *ev
	r.Initial, r.Replay = false, true
	switch {
	case rec == nil:
		return &r
	case rec.ResourceVersion == ev.ResourceVersion:
		return nil
	}
	if h, err := state.Hash(ev.Object); err == nil && h == rec.Hash {
		return nil // a new version of the same content
	}
	r.Type = event.Update
	r.OldObject = state.Doc(rec.Values)
	r.OldPaths = paths
	return &r
}

func recordOf(ev *event.Event, paths []string) *state.Record {
	h, _ := state.Hash(ev.Object)
	return &state.Record{
		Namespace:       ev.Namespace,
		Name:            ev.Name,
		ResourceVersion: ev.ResourceVersion,
		Hash:            h,
		Values:          state.Values(ev.Object, paths),
	}
}

// finishListing compares the records of a watch whose initial list is complete
// with what the list held: the objects that went while dynwatch was down fire a
// replayed delete. Then the scope has a baseline.
func (w *Watcher) finishListing(k dyninformer.Key) {
	d := w.durable
	d.mu.Lock()
	l := d.listing[k]
	if l == nil || l.finishing {
		d.mu.Unlock()
		return
	}
	l.finishing = true
	seen := maps.Clone(l.seen) // handlers may still be adding to l.seen
	d.mu.Unlock()
	p := w.pipe.Load()
	rs := p.index[k.GVR]
	res := l.res
	scope := scopeOf(res, k.Namespace)
	var out []routed
	d.submit(&commit{fn: func(tx *state.Tx) error {
		out = nil
		var gone []string
		var recs []*state.Record
		err := tx.ForEach(scope, func(uid string, r *state.Record) error {
			if !seen[uid] {
				gone = append(gone, uid)
				recs = append(recs, r)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for i, uid := range gone {
			if l.diff && l.baseline {
				obj := state.Doc(recs[i].Values)
				ev := &event.Event{
					Type: event.Delete, Resource: res, Object: obj, Replay: true,
					Namespace: recs[i].Namespace, Name: recs[i].Name, UID: uid, ResourceVersion: recs[i].ResourceVersion,
					Time: time.Now(),
				}
				out = append(out, w.route(p, rs, ev)...)
			}
			if err := tx.Delete(scope, uid); err != nil {
				return err
			}
		}
		if err := persist(tx, out); err != nil {
			return err
		}
		return tx.SetBaseline(scope)
	}, after: func(err error) {
		d.mu.Lock()
		delete(d.listing, k) // only now is the watch synced, records included
		d.mu.Unlock()
		if err != nil {
			w.log.Error("state: cannot compare the records with the listed objects", "resource", k.String(), "err", err)
			return
		}
		switch {
		case !l.diff:
			w.log.Info("state: new resource recorded", "resource", k.String(), "objects", len(seen))
		case !l.baseline:
			w.log.Info("state: baseline recorded; changes fire from now on", "resource", k.String(), "objects", len(seen))
		default:
			w.log.Info("state: compared with the records", "resource", k.String(), "objects", len(seen), "replayed", len(out))
		}
		enqueue(p, out)
	}})
}

// commit is one change to the state and what follows once it is on disk.
type commit struct {
	// fn makes the change; it may run twice (alone, after its batch failed),
	// so it resets whatever it captures.
	fn func(*state.Tx) error
	// after runs once fn's transaction committed (err nil) or failed.
	after func(err error)
}

// maxBatch bounds how many commits share one transaction.
const maxBatch = 256

func (d *durable) submit(c *commit) {
	d.closeMu.RLock()
	defer d.closeMu.RUnlock()
	if d.closed {
		c.after(errStopped)
		return
	}
	d.commits <- c
}

// errStopped is what a change submitted during shutdown gets.
var errStopped = errors.New("dynwatch is stopping")

// close lets the commit loop apply what was submitted and finish.
func (d *durable) close() {
	d.closeMu.Lock()
	defer d.closeMu.Unlock()
	d.closed = true
	close(d.commits)
}

// commitLoop applies commits until the channel is closed, as many as are
// waiting in one transaction. If a batch fails, its commits are retried one by
// one, so that one bad event does not take the others with it.
func (d *durable) commitLoop() {
	for c := range d.commits {
		batch := []*commit{c}
	gather:
		for len(batch) < maxBatch {
			select {
			case c, ok := <-d.commits:
				if !ok {
					break gather
				}
				batch = append(batch, c)
			default:
				break gather
			}
		}
		err := d.store.Update(func(tx *state.Tx) error {
			for _, c := range batch {
				if err := c.fn(tx); err != nil {
					return err
				}
			}
			return nil
		})
		if err == nil || len(batch) == 1 {
			for _, c := range batch {
				c.after(err)
			}
			continue
		}
		for _, c := range batch {
			c.after(d.store.Update(c.fn))
		}
	}
}

// flush returns once every commit submitted before it has been applied.
func (d *durable) flush() {
	done := make(chan struct{})
	d.submit(&commit{fn: func(*state.Tx) error { return nil }, after: func(error) { close(done) }})
	<-done
}

// routed is a delivery on its way to one action.
type routed struct {
	action string
	d      *event.Delivery
}

// route evaluates the rules of the event's resource and returns a delivery per
// matching rule and action. The payload is built and encoded once per rule.
func (w *Watcher) route(p *pipeline, rs []*rules.Rule, ev *event.Event) []routed {
	var out []routed
	var prepared *rules.Prepared
	for _, r := range rs {
		if ev.Initial && ev.Epoch > 0 && !p.added[ev.Epoch][r.Name] {
			continue // a reload's lists are new only to the rules it added
		}
		if !r.Match(ev) {
			continue
		}
		if prepared == nil {
			prepared = p.file.Prepare(ev)
		}
		d, err := rules.Delivery(r.Payload(prepared), ev.ObjectKey())
		if err != nil {
			w.log.Error("encode payload", "id", ev.ID(), "rule", r.Name, "err", err)
			continue
		}
		if w.log.Enabled(context.Background(), slog.LevelDebug) {
			w.log.Debug("rule matched", "id", d.Payload.ID, "rule", r.Name, "resource", ev.Resource.String(), "namespace", ev.Namespace, "name", ev.Name)
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

// persist writes the deliveries to their actions' durable queues in tx.
func persist(tx *state.Tx, rs []routed) error {
	for _, r := range rs {
		seq, err := tx.Enqueue(r.action, r.d.Key, r.d.JSON)
		if err != nil {
			return err
		}
		r.d.Seq = seq
	}
	return nil
}

// enqueue hands the deliveries to the in-memory queues; it never blocks.
func enqueue(p *pipeline, rs []routed) {
	for _, r := range rs {
		if q := p.queues[r.action]; q != nil {
			q.Enqueue(r.d)
		}
	}
}

// followListings finishes the listings whose informers have synced, until ctx ends.
func (w *Watcher) followListings(ctx context.Context) {
	wait.UntilWithContext(ctx, func(context.Context) {
		for _, k := range w.durable.listingKeys() {
			synced, watched := w.mgr.KeySynced(k)
			switch {
			case !watched:
				w.durable.mu.Lock()
				delete(w.durable.listing, k)
				w.durable.mu.Unlock()
			case synced:
				w.finishListing(k)
			}
		}
	}, 100*time.Millisecond)
}

// loadPending enqueues what the durable queues held at start, in the order it
// was accepted, before any new event: it is delivered first.
func (w *Watcher) loadPending() error {
	pending, err := w.durable.store.Pending()
	if err != nil {
		return err
	}
	p := w.pipe.Load()
	for action, list := range pending {
		q := p.queues[action]
		if q == nil {
			w.log.Warn("state holds undelivered events of an action the config no longer has; they stay on disk", "action", action, "events", len(list))
			continue
		}
		for _, pd := range list {
			var pl event.Payload
			if err := json.Unmarshal(pd.JSON, &pl); err != nil {
				w.log.Error("state: unreadable pending delivery dropped", "action", action, "seq", pd.Seq, "err", err)
				_ = w.durable.store.Done(action, pd.Seq)
				continue
			}
			q.Enqueue(&event.Delivery{Payload: &pl, JSON: pd.JSON, Key: pd.Key, Seq: pd.Seq})
		}
		w.log.Info("delivering events left from the last run first", "action", action, "events", len(list))
	}
	return nil
}
