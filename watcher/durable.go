package watcher

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/metrics"
	"github.com/dynwatch/dynwatch/restart"
	"github.com/dynwatch/dynwatch/rules"
	"github.com/dynwatch/dynwatch/state"
)

// durable keeps restart state: a record per object of every watched resource,
// and action queues on disk. An object's record advances in the same
// transaction as the deliveries its event produced, so a crash at any point
// either keeps both or neither (and then the next start's diff finds the change).
type durable struct {
	store   *state.Store
	key     state.DigestKey // the store's: digests and content hashes
	commits *state.Committer
	// marks removes delivered events from the durable queues: in the
	// events' next commit, or after markLinger in one of their own.
	marks *state.Committer
	log   *slog.Logger
	// pipe is the watcher's current pipeline: deliveries go to the queues that
	// are current once their commit is on disk, not those of when it began.
	pipe *atomic.Pointer[pipeline]
	// pager hands committed deliveries to memory a window at a time.
	pager *pager
	// outbox puts deliveries in their actions' durable queues and takes
	// them out again (with pager and marks).
	outbox *outbox
	// book follows the timed rules' states each commit writes.
	book *waitBook

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

// commitGather: events that come in a burst (a streak of them each within
// this of the one before, state.Committer's Gather) share a commit, its two fdatasyncs, even when the file could take
// them one by one: each waits up to this long for the ones behind it. An
// event after a quieter spell (at 100 updates/s, nearly every one) is
// committed at once.
const commitGather = 10 * time.Millisecond

// commitBurstHold: while events come at 160 a second or faster (over the
// last 96 of them, and as the recent gaps say: state.Committer's
// BurstHold), each waits as long as 16 more take to come, to share their
// commit: a sustained flow costs two fdatasyncs per 8 to 16 events rather
// than per one or two. That is this bound, 80ms, up to 200 a second, 64ms
// at 250, 16ms at 1 000; a flow of 120 a second or less is (nearly) never
// held, but in the 600ms after a burst (a relist's) now and then.
const commitBurstHold = 80 * time.Millisecond

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
	events := opts
	events.Gather, events.BurstHold = commitGather, commitBurstHold
	d.commits = state.NewCommitter(store, events)
	opts.What, opts.Linger = "delivery marks", markLinger
	d.marks = state.NewCommitter(store, opts)
	d.commits.Carry(d.marks) // while events flow, their marks ride in their commits
	d.outbox = &outbox{pager: d.pager, marks: d.marks, log: log}
	return d
}

// recordsOf names the records of a resource: group and resource, not the
// version (a move to another version keeps them) nor the namespace (records
// follow the resource, whatever scopes the rules watch it in).
func recordsOf(cluster, group, resource string) state.Resource {
	return state.Resource{Cluster: cluster, Group: group, Resource: resource}
}

// watchScope names what a watch lists, and so what has a baseline: its resource
// in its namespace scope.
func watchScope(k dyninformer.Key) state.Scope {
	return recordsOf(k.Cluster, k.GVR.Group, k.GVR.Resource).In(k.Namespace)
}

// recordPaths are the paths recorded for objects of a resource: every path its
// rules read, and the metadata.
func recordPaths(rs []*rules.Rule) []string {
	paths := slices.Clone(restart.MetaPaths)
	for _, r := range rs {
		paths = append(paths, r.Paths()...)
	}
	slices.Sort(paths)
	return slices.Compact(paths)
}

// startListing notes new watches, whose initial lists are compared with the
// records (known lists) or recorded as new.
func (d *durable) startListing(watches []dyninformer.Started, lists dyninformer.Lists) {
	d.adoptNewShard(watches)
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, w := range watches {
		l := &listing{res: w.Resource, seen: map[string]bool{}, listed: map[string]bool{}, diff: lists == dyninformer.ListsKnown || w.Moved, moved: w.Moved, namespace: w.Namespace}
		_ = d.store.View(func(tx *state.Tx) error {
			// Records of all namespaces cover one namespace too.
			scope := watchScope(w.Key())
			l.baseline = tx.HasBaseline(scope) || tx.HasBaseline(scope.Resource.In(""))
			l.resharded = tx.Resharded(scope) || tx.Resharded(scope.Resource.In(""))
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
	b := watchScope(k)
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

// prune drops what the state keeps of scopes no watch covers any more
// (state.Tx.Prune): what is on disk then stays exact however the rules'
// scopes come and go.
//
// With several clusters (named: cluster is a name) it drops only what the
// named cluster keeps: the others', a cluster that cannot be reached
// included, stay for their comparison when they are back.
func (d *durable) prune(named bool, cluster string, watches []dyninformer.Key) {
	scopes := make([]state.Scope, len(watches))
	for i, k := range watches {
		scopes[i] = watchScope(k)
	}
	d.commits.Submit(0, func(tx *state.Tx) error {
		if named {
			return tx.PruneCluster(cluster, scopes)
		}
		return tx.Prune(scopes)
	}, func(err error) {
		if err != nil && !errors.Is(err, state.ErrStopped) && !errors.Is(err, state.ErrGivenUp) {
			d.log.Error("state: cannot drop the records no rule watches", "err", err)
		}
	})
}

// forget drops the listing of a watch that stopped before it synced.
func (d *durable) forget(k dyninformer.Key) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.listing, k)
}

// handle decides what the event fires (a live event, or during an initial
// list what changed while dynwatch was down), records the object and persists
// the deliveries in one transaction, and only then enqueues them. The commit
// reads the record, compares, routes, persists and puts; it builds what it
// hands on afresh each time it runs, so a run again (after the file refused
// one) starts from scratch.
//
// An event of a cluster the pipeline no longer has (a reload removed it, or
// is building its clients again, while its source still runs) routes
// nowhere: nothing of it is written, its record included, so that the
// cluster, added back, is compared with records that predate it and
// replays it. A record moves forward only with its event's deliveries.
func (d *durable) handle(p *pipeline, watch dyninformer.Key, ev *event.Event) {
	if p.clusters[watch.Cluster] == nil {
		return
	}
	res := recordsOf(watch.Cluster, ev.Resource.Group, ev.Resource.Resource)
	paths, ok := p.pathsOf(watch)
	if !ok {
		paths = restart.MetaPaths // a resource no rule selects any more: keep who it was
	}
	d.mu.Lock()
	l := d.listing[watch]
	if l != nil && ev.Type == event.Add {
		l.seen[ev.UID] = true
		l.listed[ev.Namespace+"/"+ev.Name] = true
	}
	d.mu.Unlock()
	compare := l != nil && l.compares(ev)

	var committed []routed
	var waited []waitChange
	d.commits.Submit(len(ev.Object)+len(ev.OldObject), func(tx *state.Tx) error {
		evs := []*event.Event{ev}
		var known restart.Known
		if compare && ev.Timed == nil {
			k, baseline, err := l.reshardKnown(tx, res, ev)
			if err != nil {
				return err
			}
			if !baseline {
				known = k
				evs = append(restart.Listed(l.res, ev, known, l.found(), d.key, time.Now()), ev)
			}
		}
		waits := &txWaits{tx: tx, book: d.book}
		out := routeAll(p, watch, evs, waits)
		if waits.err != nil {
			return waits.err
		}
		if err := d.outbox.put(tx, out); err != nil {
			return err
		}
		if ev.Timed == nil { // a timer's evaluation leaves the record as its object's last event put it
			if err := d.putRecord(tx, p, res, ev, known, paths); err != nil {
				return err
			}
		}
		committed, waited = out, waits.changes
		return nil
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
		d.book.applied(waited)
		d.outbox.offer(committed)
	})
}

// routeAll routes the events in order.
func routeAll(p *pipeline, k dyninformer.Key, evs []*event.Event, waits rules.Waits) []routed {
	var out []routed
	for _, ev := range evs {
		ev.Cluster = k.Cluster
		out = append(out, p.route(k, ev, waits)...)
	}
	return out
}

// putRecord advances the records to ev: the record of the object that had
// its name under another uid goes (known.Renamed), and ev's object is
// recorded, or forgotten on a delete.
func (d *durable) putRecord(tx *state.Tx, p *pipeline, res state.Resource, ev *event.Event, known restart.Known, paths []string) error {
	if known.Renamed != nil {
		if err := tx.Delete(res, known.RenamedUID); err != nil {
			return err
		}
	}
	if ev.Type == event.Delete {
		return tx.Delete(res, ev.UID)
	}
	r := restart.Record(ev, known.Record, paths, p.file.Redactor.Secret(ev.Resource, ev.Object), d.key)
	return tx.Put(res, ev.UID, r)
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
	if p.clusters[k.Cluster] == nil {
		// Its cluster left the config: the records stay as they were, for
		// the comparison when it is back; no baseline, no replayed delete.
		d.mu.Lock()
		if d.listing[k] == l {
			delete(d.listing, k)
		}
		d.mu.Unlock()
		return
	}
	var committed []routed
	var waited []waitChange
	var listed int
	d.commits.Submit(0, func(tx *state.Tx) error {
		waits := &txWaits{tx: tx, book: d.book}
		out, n, err := d.compareRecords(tx, p, l, k, waits)
		if err != nil {
			return err
		}
		committed, waited, listed = out, waits.changes, n
		return nil
	}, func(err error) {
		// Only now is the watch synced, records included, and what the
		// comparison replays handed to the queues first: a caller that
		// sees it synced and the queues empty has seen the replays.
		defer d.forget(k)
		switch {
		case errors.Is(err, state.ErrGivenUp), errors.Is(err, state.ErrStopped):
			// Not written (the committer logged the count) or stopped
			// first: the next start compares this list again.
			return
		case err != nil:
			d.log.Error("state: cannot compare the records with the listed objects", "resource", k.String(), "err", err)
			return
		}
		d.logListed(k, l, listed, len(committed))
		d.book.applied(waited)
		d.outbox.offer(committed)
	})
}

// compareRecords is the comparison of a complete list with the records, in
// tx: the records of objects the list did not see go, each firing a replayed
// delete when the list is compared, and the scope gets its baseline. It
// returns the deliveries (persisted in tx) and how many objects were listed.
func (d *durable) compareRecords(tx *state.Tx, p *pipeline, l *listing, k dyninformer.Key, waits *txWaits) ([]routed, int, error) {
	res := recordsOf(k.Cluster, l.res.Group, l.res.Resource)
	scope := res.In(k.Namespace)
	// What was seen is read here, in the committer, not when the list
	// ended: a live add marks its object seen before it submits its
	// record, so every record written before this comparison is of an
	// object seen, and none is taken for one that went while dynwatch
	// was down.
	d.mu.Lock()
	seen, listed := maps.Clone(l.seen), maps.Clone(l.listed)
	d.mu.Unlock()
	records := map[string]string{}
	if err := tx.ForEachName(res, func(uid, ns, _ string) error { records[uid] = ns; return nil }); err != nil {
		return nil, 0, err
	}
	gone := restart.Vanished(records, seen, scope)
	var evs []*event.Event
	if l.diff && l.baseline {
		for _, uid := range gone {
			rec, err := tx.Get(res, uid)
			if err != nil {
				return nil, 0, err
			}
			evs = append(evs, restart.Gone(l.res, uid, rec, l.found(), time.Now()))
		}
	}
	out := routeAll(p, k, evs, waits)
	if waits.err != nil {
		return nil, 0, waits.err
	}
	if err := forgetUnlisted(tx, waits, k, listed); err != nil {
		return nil, 0, err
	}
	if err := d.outbox.put(tx, out); err != nil {
		return nil, 0, err
	}
	for _, uid := range gone {
		if err := tx.Delete(res, uid); err != nil {
			return nil, 0, err
		}
	}
	return out, len(seen), tx.SetBaseline(scope)
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
