package watcher

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/metrics"
	"github.com/dynwatch/dynwatch/payload"
	"github.com/dynwatch/dynwatch/rules"
	"github.com/dynwatch/dynwatch/state"
)

// durable keeps restart state: a record per object of every watched resource,
// and action queues on disk. An object's record advances in the same
// transaction as the deliveries its event produced, so a crash at any point
// either keeps both or neither (and then the next start's diff finds the change).
type durable struct {
	store   *state.Store
	key     event.DigestKey // the store's: digests and content hashes
	commits *state.Committer
	// marks removes delivered events from the durable queues, in group
	// commits of their own.
	marks *state.Committer
	log   *slog.Logger
	// pipe is the watcher's current pipeline: deliveries go to the queues that
	// are current once their commit is on disk, not those of when it began.
	pipe *atomic.Pointer[pipeline]
	// pager hands committed deliveries to memory a window at a time.
	pager *pager

	mu sync.Mutex
	// listing holds the watches whose initial list is being compared with the
	// records: the uids seen so far, and whether the scope had a baseline.
	listing map[dyninformer.Key]*listing

	// beforeCompare, when set (by tests), runs when a list is complete, before
	// its comparison with the records is submitted.
	beforeCompare func(dyninformer.Key)
	// afterStart, when set (by tests), runs once a Set has started its
	// informers, before its caller goes on.
	afterStart func()

	// givenUp counts the events given up unwritten; stopRun cancels the run
	// once a committer reached its bound (see durablestop.go).
	givenUp atomic.Int64
	stopRun atomic.Pointer[context.CancelCauseFunc]
}

func newDurable(store *state.Store, log *slog.Logger, pipe *atomic.Pointer[pipeline], m *metrics.Metrics, maxPending int64) *durable {
	d := &durable{
		store:   store,
		key:     store.DigestKey(),
		log:     log,
		pipe:    pipe,
		pager:   newPager(store, log, pipe),
		listing: map[dyninformer.Key]*listing{},
	}
	opts := state.CommitterOptions{Logger: log, Failed: func(error) { m.StateCommitFailed() }, MaxPendingBytes: maxPending, Overflow: d.overflowed}
	d.commits = state.NewCommitter(store, opts)
	opts.What = "delivery marks"
	d.marks = state.NewCommitter(store, opts)
	return d
}

type listing struct {
	res  event.Resource
	seen map[string]bool
	// byName maps namespace/name to the recorded uid, when the list is
	// compared with records: an object re-created under its name while
	// dynwatch was down replays the old uid's delete before the new one's add.
	// It is read from the records when the first object without a record
	// comes (most restarts have none), in the committer's goroutine.
	byName map[string]string
	// namespace is the watch's namespace ("" = all).
	namespace string
	baseline  bool
	diff      bool // the list is of objects known before (start, reload, move): compare
	// moved: the watch replaced one on another version while dynwatch ran; what
	// changed in between is live, not a replay.
	moved bool
	// finishing is set once the list is complete and its comparison submitted.
	finishing bool
}

// found is the origin of what a comparison finds: a replay after a restart,
// live changes after a version move.
func (l *listing) found() event.Origin {
	if l.moved {
		return event.Live
	}
	return event.Replay
}

// metaPaths are recorded for every object, so that a replayed delete can say
// which object went.
var metaPaths = []string{"metadata.name", "metadata.namespace", "metadata.uid", "metadata.labels"}

// recordsOf names the records of a resource: group and resource, not the
// version (a move to another version keeps them) nor the namespace (records
// follow the resource, whatever scopes the rules watch it in).
func recordsOf(group, resource string) string {
	return group + "/" + resource
}

// baselineOf names the baseline of a watch: its resource and namespace scope.
func baselineOf(group, resource, ns string) string {
	return group + "/" + resource + "/" + ns
}

// inScope reports whether an object in namespace ns is in a watch of watchNS.
func inScope(ns, watchNS string) bool { return watchNS == "" || ns == watchNS }

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
// records (known lists) or recorded as new.
func (d *durable) startListing(watches []dyninformer.Started, lists dyninformer.Lists) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, w := range watches {
		l := &listing{res: w.Resource, seen: map[string]bool{}, diff: lists == dyninformer.ListsKnown || w.Moved, moved: w.Moved, namespace: w.Namespace}
		_ = d.store.View(func(tx *state.Tx) error {
			// Records of all namespaces cover one namespace too.
			l.baseline = tx.HasBaseline(baselineOf(w.Resource.Group, w.Resource.Resource, w.Namespace)) ||
				tx.HasBaseline(baselineOf(w.Resource.Group, w.Resource.Resource, ""))
			return nil
		})
		d.listing[w.Key()] = l
		if !l.diff {
			d.baselineFirst(w.Key())
		}
	}
}

// baselineFirst records the baseline of a resource that appeared while
// dynwatch runs before any of its objects is recorded: should dynwatch stop
// (or be killed) before its list is on disk, the next start compares that
// list with the records, and every object whose add was not written fires
// one, rather than all of them being taken for a first baseline.
func (d *durable) baselineFirst(k dyninformer.Key) {
	b := baselineOf(k.GVR.Group, k.GVR.Resource, k.Namespace)
	d.commits.Submit(0, func(tx *state.Tx) error { return tx.SetBaseline(b) }, func(err error) {
		if err != nil && !errors.Is(err, state.ErrStopped) && !errors.Is(err, state.ErrGivenUp) {
			d.log.Error("state: cannot record the baseline of a new resource", "resource", k.String(), "err", err)
		}
	})
}

// listingKeys returns the watches whose initial list is not finished yet.
func (d *durable) listingKeys() []dyninformer.Key {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Collect(maps.Keys(d.listing))
}

// prune drops what the state keeps of scopes no watch covers any more:
// baselines of other scopes, records of other resources and, for a resource
// watched in some namespaces only, records of the other namespaces. What is on
// disk then stays exact however the rules' scopes come and go.
func (d *durable) prune(watches []dyninformer.Key) {
	baselines := map[string]bool{}
	nss := map[string]map[string]bool{} // records scope -> namespaces; "" = all
	for _, k := range watches {
		baselines[baselineOf(k.GVR.Group, k.GVR.Resource, k.Namespace)] = true
		r := recordsOf(k.GVR.Group, k.GVR.Resource)
		if nss[r] == nil {
			nss[r] = map[string]bool{}
		}
		nss[r][k.Namespace] = true
	}
	d.commits.Submit(0, func(tx *state.Tx) error {
		for _, b := range tx.Baselines() {
			if !baselines[b] {
				if err := tx.DropBaseline(b); err != nil {
					return err
				}
			}
		}
		for _, scope := range tx.Scopes() {
			if err := pruneScope(tx, scope, nss[scope]); err != nil {
				return err
			}
		}
		return nil
	}, func(err error) {
		if err != nil && !errors.Is(err, state.ErrStopped) && !errors.Is(err, state.ErrGivenUp) {
			d.log.Error("state: cannot drop the records no rule watches", "err", err)
		}
	})
}

// pruneScope keeps the records of scope in the namespaces nss (all of them
// when nss has ""; none when nss is empty).
func pruneScope(tx *state.Tx, scope string, nss map[string]bool) error {
	switch {
	case len(nss) == 0:
		return tx.DropScope(scope)
	case nss[""]:
		return nil
	}
	var drop []string
	if err := tx.ForEachName(scope, func(uid, ns, _ string) error {
		if !nss[ns] {
			drop = append(drop, uid)
		}
		return nil
	}); err != nil {
		return err
	}
	for _, uid := range drop {
		if err := tx.Delete(scope, uid); err != nil {
			return err
		}
	}
	return nil
}

// forget drops the listing of a watch that stopped before it synced.
func (d *durable) forget(k dyninformer.Key) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.listing, k)
}

// handle decides what the event fires (a live event, or during an initial
// list what changed while dynwatch was down), records the object and persists
// the deliveries in one transaction, and only then enqueues them.
func (d *durable) handle(p *pipeline, watch dyninformer.Key, ev *event.Event) {
	scope := recordsOf(ev.Resource.Group, ev.Resource.Resource)
	paths, ok := p.paths[watch.GVR]
	if !ok {
		paths = metaPaths // a resource no rule selects any more: keep who it was
	}
	d.mu.Lock()
	l := d.listing[watch]
	if l != nil && ev.Type == event.Add {
		l.seen[ev.UID] = true
	}
	d.mu.Unlock()

	var out []routed
	d.commits.Submit(len(ev.Object)+len(ev.OldObject), func(tx *state.Tx) error {
		out = nil
		// For initial lists, the recorded version of the object: the same
		// one (most objects at a restart) needs no more of the record.
		prevRV, prevHash, recorded := "", "", false
		if (ev.Origin == event.InitialList || ev.Origin == event.Relist) && l != nil && l.diff && l.baseline {
			prevRV, prevHash, recorded = tx.Version(scope, ev.UID)
			var err error
			if !recorded {
				// Deleted and re-created while dynwatch was down: the old
				// uid's delete goes first.
				if out, err = d.replaceByName(tx, p, watch.GVR, scope, l, ev); err != nil {
					return err
				}
			}
			if !recorded || prevRV != ev.ResourceVersion {
				var rec *state.Record // none: an add
				if recorded {
					if rec, err = tx.Get(scope, ev.UID); err != nil {
						return err
					}
				}
				if replay := replayOf(ev, rec, l.found(), d.key); replay != nil {
					out = append(out, p.route(watch.GVR, replay)...)
				}
			}
		}
		out = append(out, p.route(watch.GVR, ev)...)
		if err := persist(tx, out); err != nil {
			return err
		}
		if ev.Type == event.Delete {
			return tx.Delete(scope, ev.UID)
		}
		r := recordOf(ev, paths, p.file.Redactor, d.key)
		if recorded && prevRV == ev.ResourceVersion {
			r.Hash = prevHash // one version is one content: no need to hash it
		} else {
			r.Hash, _ = state.Hash(d.key, ev.Object)
		}
		return tx.Put(scope, ev.UID, r)
	}, func(err error) {
		switch {
		case errors.Is(err, state.ErrGivenUp):
			// Refused by the file at shutdown or past the bound: the
			// committer said so once, with the count; the record on disk
			// predates the event, so the next start's comparison finds it.
			d.notWritten(ev.ID())
			return
		case err != nil:
			// A change bbolt rejects by itself: the same holds.
			d.log.Error("state: event not recorded; it fires after the next start", "id", ev.ID(), "err", err)
			return
		}
		d.pager.offer(out)
	})
}

// replaceByName returns the replayed delete of the object that had ev's name
// under another uid, and drops its record.
func (d *durable) replaceByName(tx *state.Tx, p *pipeline, gvr schema.GroupVersionResource, scope string, l *listing, ev *event.Event) ([]routed, error) {
	if l.byName == nil {
		// The first object without a record: no record has been added in
		// this list yet, so the records are still those it is compared with.
		byName := map[string]string{}
		if err := tx.ForEachName(scope, func(uid, ns, name string) error {
			if inScope(ns, l.namespace) {
				byName[ns+"/"+name] = uid
			}
			return nil
		}); err != nil {
			return nil, err
		}
		l.byName = byName
	}
	old := l.byName[ev.Namespace+"/"+ev.Name]
	if old == "" || old == ev.UID {
		return nil, nil
	}
	rec, err := tx.Get(scope, old)
	if err != nil || rec == nil {
		return nil, err
	}
	if err := tx.Delete(scope, old); err != nil {
		return nil, err
	}
	return p.route(gvr, replayedDelete(l.res, old, rec, l.found())), nil
}

// replayOf returns the event an object of the initial list fires under onStart
// diff: add when it is new, update when it changed while dynwatch was down
// (or, after a version move, while the watch moved). key is the store's.
func replayOf(ev *event.Event, rec *state.Record, origin event.Origin, key event.DigestKey) *event.Event {
	r := *ev
	r.Origin = origin
	switch {
	case rec == nil:
		return &r
	case rec.ResourceVersion == ev.ResourceVersion:
		return nil
	}
	if state.SameContent(key, ev.Object, rec.Hash) {
		return nil // a new version of the same content
	}
	r.Type = event.Update
	r.OldObject = state.Doc(rec.Values)
	r.OldValues, r.DigestKey = rec.Values, key
	if r.OldValues == nil {
		r.OldValues = map[string]json.RawMessage{}
	}
	return &r
}

// recordOf is what the state keeps of an object: who it is, its version, and
// the values at paths, as digests under key those that read a redacted value
// (payload.Redactor.Secret). The caller sets its content hash.
func recordOf(ev *event.Event, paths []string, red *payload.Redactor, key event.DigestKey) *state.Record {
	return &state.Record{
		Namespace:       ev.Namespace,
		Name:            ev.Name,
		ResourceVersion: ev.ResourceVersion,
		Values:          state.Values(key, ev.Object, paths, red.Secret(ev.Resource, ev.Object)),
	}
}

// finishListing compares the records of a watch whose initial list is complete
// with what the list held: the objects that went while dynwatch was down fire a
// replayed delete. Then the scope has a baseline.
func (d *durable) finishListing(k dyninformer.Key) {
	d.mu.Lock()
	l := d.listing[k]
	if l == nil || l.finishing {
		d.mu.Unlock()
		return
	}
	l.finishing = true
	d.mu.Unlock()
	if d.beforeCompare != nil {
		d.beforeCompare(k)
	}
	p := d.pipe.Load()
	scope := recordsOf(l.res.Group, l.res.Resource)
	var out []routed
	var seen map[string]bool
	d.commits.Submit(0, func(tx *state.Tx) error {
		out = nil
		// What was seen is read here, in the committer, not when the list
		// ended: a live add marks its object seen before it submits its
		// record, so every record written before this comparison is of an
		// object seen, and none is taken for one that went while dynwatch
		// was down.
		d.mu.Lock()
		seen = maps.Clone(l.seen)
		d.mu.Unlock()
		var gone []string
		err := tx.ForEachName(scope, func(uid, ns, _ string) error {
			if !seen[uid] && inScope(ns, k.Namespace) {
				gone = append(gone, uid)
			}
			return nil
		})
		if err != nil {
			return err
		}
		slices.Sort(gone)
		for _, uid := range gone {
			if l.diff && l.baseline {
				rec, err := tx.Get(scope, uid)
				if err != nil {
					return err
				}
				out = append(out, p.route(k.GVR, replayedDelete(l.res, uid, rec, l.found()))...)
			}
			if err := tx.Delete(scope, uid); err != nil {
				return err
			}
		}
		if err := persist(tx, out); err != nil {
			return err
		}
		return tx.SetBaseline(baselineOf(l.res.Group, l.res.Resource, k.Namespace))
	}, func(err error) {
		d.forget(k) // only now is the watch synced, records included
		switch {
		case errors.Is(err, state.ErrGivenUp), errors.Is(err, state.ErrStopped):
			// Not written (the committer logged the count) or stopped
			// first: the next start compares this list again.
			return
		case err != nil:
			d.log.Error("state: cannot compare the records with the listed objects", "resource", k.String(), "err", err)
			return
		}
		d.logListed(k, l, len(seen), len(out))
		d.pager.offer(out)
	})
}

// replayedDelete is the delete of an object that went while dynwatch was down,
// built from its record.
func replayedDelete(res event.Resource, uid string, r *state.Record, origin event.Origin) *event.Event {
	return &event.Event{
		Type: event.Delete, Resource: res, Object: state.Doc(r.Values), Origin: origin,
		Namespace: r.Namespace, Name: r.Name, UID: uid, ResourceVersion: r.ResourceVersion,
		Time: time.Now(),
	}
}

// logListed says how a list compared with the records; deletesReplayed counts the
// deliveries of objects that went while dynwatch was down (the adds and updates
// replayed for listed objects are delivered as each is compared, not counted here).
func (d *durable) logListed(k dyninformer.Key, l *listing, objects, replayed int) {
	switch {
	case !l.diff:
		d.log.Info("state: new resource recorded", "resource", k.String(), "objects", objects)
	case !l.baseline:
		d.log.Info("state: baseline recorded; changes fire from now on", "resource", k.String(), "objects", objects)
	default:
		d.log.Info("state: compared with the records", "resource", k.String(), "objects", objects, "deletesReplayed", replayed)
	}
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

// followListings finishes the listings whose informers have synced, until ctx
// ends; synced is the informer manager's KeySynced.
func (d *durable) followListings(ctx context.Context, synced func(dyninformer.Key) (synced, watched bool)) {
	wait.UntilWithContext(ctx, func(context.Context) {
		for _, k := range d.listingKeys() {
			switch s, watched := synced(k); {
			case !watched:
				d.forget(k)
			case s:
				d.finishListing(k)
			}
		}
	}, 100*time.Millisecond)
}
