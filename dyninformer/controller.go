package dyninformer

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/client-go/features"
	"k8s.io/client-go/tools/cache"
)

// An informer here is client-go's controller (a reflector feeding a RealFIFO,
// and a store) whose handler is called from the FIFO's pop. client-go's shared
// informer puts, between the pop and each of its handlers, a listener with a
// goroutine and a buffer of its own: for the one handler a watch has here,
// that is two more goroutine hand-offs per event, and at 10 000 Deployments
// about a fifth of the informers' CPU. The FIFO is the buffer instead: the
// reflector adds to it while the handler runs (UnlockWhileProcessingFIFO, on
// by default), and the handler hands work on and returns (see Handler). Past
// 2000 queued deltas the FIFO holds its lock while the handler runs, so the
// reflector reads the watch no faster than the handler takes its events:
// what waits is bounded there, where the listener's buffer grew without bound.

// newController returns the store and the controller of one informer, with
// the FIFO client-go's feature gates choose (KUBE_FEATURE_AtomicFIFO and
// KUBE_FEATURE_UnlockWhileProcessingFIFO), as its shared informer would.
// listed is told each complete list's resourceVersion (listedFIFO); nil:
// nobody asks.
func newController(lw cache.ListerWatcher, resync time.Duration, desc string, onErr cache.WatchErrorHandlerWithContext, h cache.ResourceEventHandler, listed func(rv string)) (cache.Store, cache.Controller) {
	store := cache.NewStore(cache.DeletionHandlingMetaNamespaceKeyFunc)
	opts := cache.RealFIFOOptions{Name: "RealFIFO " + desc, KeyFunction: cache.MetaNamespaceKeyFunc}
	if gates := features.FeatureGates(); gates.Enabled(features.AtomicFIFO) {
		opts.AtomicEvents, opts.EmitDeltaTypeBookmark = true, true
		opts.UnlockWhileProcessing = gates.Enabled(features.UnlockWhileProcessingFIFO)
	} else {
		opts.KnownObjects = store // the FIFO turns a relist into per-object deltas itself
	}
	p := &applier{store: store, h: h}
	return store, cache.New(&cache.Config{
		Queue:                        &listedFIFO{RealFIFO: cache.NewRealFIFOWithOptions(opts), listed: listed},
		ListerWatcher:                lw,
		ObjectType:                   &Object{},
		ObjectDescription:            desc,
		FullResyncPeriod:             resync,
		WatchErrorHandlerWithContext: onErr,
		Process:                      p.apply,
		ProcessBatch:                 p.applyBatch,
	})
}

// hasSynced reports whether c's informer has handed its whole initial list to
// the handler (or a change was queued before any list: the reflector lists
// first, so that does not happen). It reads the FIFO's
// synced channel, which the FIFO closes once the last item of its first
// Replace has been processed, and never the FIFO's HasSynced, which takes the
// FIFO's lock: the FIFO holds that lock while the handler runs whenever 2000
// deltas or more are queued (and always without UnlockWhileProcessingFIFO),
// so a handler that asked, or /readyz while a handler call runs, would wait
// for that call.
func hasSynced(c cache.Controller) bool { return cache.IsDone(c.HasSyncedChecker()) }

// applier applies what the FIFO pops to the store, then tells the handler:
// the handler sees the store as it is after the change.
type applier struct {
	store cache.Store
	h     cache.ResourceEventHandler
}

// apply is the controller's Process: one pop of the FIFO, its deltas oldest
// first. initial is whether they belong to the initial list (the FIFO's
// first Replace, until every item of it has been applied: HasSynced is true
// only once the handler has been given all of them).
func (p *applier) apply(obj any, initial bool) error {
	ds, ok := obj.(cache.Deltas)
	if !ok {
		return fmt.Errorf("dyninformer: the FIFO popped a %T, not deltas", obj)
	}
	return p.applyBatch(ds, initial) // a RealFIFO pops one delta at a time
}

// applyBatch is the controller's ProcessBatch (InOrderInformersBatchProcess,
// on by default): changes of distinct objects that the FIFO popped together,
// applied in order, each told to the handler before the next is applied
// (client-go's shared informer applies a whole batch, then tells each): the
// store runs ahead of what the handler was told by one change at most (by a
// whole list while a relist is told, as before), which a Replay between two
// calls may hand over as well (a repeat, never a loss).
// A batch costs the FIFO one lock and one pop for up to 1000 changes. A
// change the store refuses is dropped, as the FIFO and client-go drop it.
func (p *applier) applyBatch(ds []cache.Delta, initial bool) error {
	var errs []error
	for _, d := range ds {
		if err := p.one(d, initial); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// one applies one delta and tells the handler.
func (p *applier) one(d cache.Delta, initial bool) error {
	switch d.Type {
	case cache.ReplacedAll: // a list, with AtomicFIFO
		info, ok := d.Object.(cache.ReplacedAllInfo)
		if !ok {
			return fmt.Errorf("dyninformer: a ReplacedAll delta holds a %T", d.Object)
		}
		if err := p.replaceAll(info, initial); err != nil {
			return err
		}
	case cache.SyncAll: // a resync, with AtomicFIFO
		for _, o := range p.store.List() {
			p.h.OnUpdate(o, o)
		}
	case cache.Sync, cache.Replaced, cache.Added, cache.Updated:
		if err := p.put(d.Object, initial); err != nil {
			return err
		}
	case cache.Deleted: // a watch's delete, or (without AtomicFIFO) one a relist found
		if last, ok, err := p.store.Get(d.Object); err == nil && ok {
			keepChoice(d.Object, last)
		}
		if err := p.store.Delete(d.Object); err != nil {
			return err
		}
		p.h.OnDelete(d.Object)
	case cache.Bookmark:
		info, ok := d.Object.(cache.BookmarkInfo)
		if !ok {
			return fmt.Errorf("dyninformer: a Bookmark delta holds a %T", d.Object)
		}
		p.store.Bookmark(info.ResourceVersion)
	}
	return nil
}

// put adds obj to the store, or updates what the store holds under its key.
func (p *applier) put(obj any, initial bool) error {
	old, exists, err := p.store.Get(obj)
	if err == nil && exists {
		if err := p.store.Update(obj); err != nil {
			return err
		}
		p.h.OnUpdate(old, obj)
		return nil
	}
	if err := p.store.Add(obj); err != nil {
		return err
	}
	p.h.OnAdd(obj, initial)
	return nil
}

// replaceAll makes the store what a list found. Each object the store held
// and the list does not is deleted (a tombstone: the watch missed its delete,
// a 410 Gone), each listed object the store held is updated, each other one
// added. The store is replaced first; the handler is told the deletes first,
// then the rest in the list's order.
func (p *applier) replaceAll(info cache.ReplacedAllInfo, initial bool) error {
	held := p.store.ListKeys()
	type change struct{ old, cur any }
	changes := make([]change, len(info.Objects))
	var listed map[string]struct{}
	if len(held) > 0 { // nothing to compare with on a first list
		listed = make(map[string]struct{}, len(info.Objects))
	}
	for i, obj := range info.Objects {
		changes[i].cur = obj
		if listed == nil {
			continue
		}
		key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
		if err != nil {
			return cache.KeyError{Obj: obj, Err: err}
		}
		listed[key] = struct{}{}
		if old, exists, err := p.store.GetByKey(key); err == nil && exists {
			changes[i].old = old
		}
	}
	var gone []cache.DeletedFinalStateUnknown
	for _, key := range held {
		if _, ok := listed[key]; ok {
			continue
		}
		last, _, _ := p.store.GetByKey(key)
		gone = append(gone, cache.DeletedFinalStateUnknown{Key: key, Obj: last})
	}
	if err := p.store.Replace(info.Objects, info.ResourceVersion); err != nil {
		return err
	}
	for _, t := range gone {
		p.h.OnDelete(t)
	}
	for _, c := range changes {
		if c.old != nil {
			p.h.OnUpdate(c.old, c.cur)
		} else {
			p.h.OnAdd(c.cur, initial)
		}
	}
	return nil
}
