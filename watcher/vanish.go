package watcher

import (
	"time"

	"github.com/dynwatch/dynwatch/dyninformer"
)

// vanishGrace is how long, with state, a watched resource that discovery
// stops serving (an aggregated API whose backend flaps, a group version whose
// discovery fails) keeps its records and baseline. Back within it, its list is
// compared with the records as at a restart: what went in the gap fires a
// replayed delete once, what did not change fires nothing. Gone for longer,
// its records are dropped, and back later it is a new resource (every object
// fires add). A resource whose CRD the CRD watch saw deleted is gone at once,
// not flapping (see crdgone.go).
const vanishGrace = time.Minute

// scopeKey is a watch's resource and namespace scope, whatever its version.
type scopeKey struct{ group, resource, namespace string }

func scopeOf(k dyninformer.Key) scopeKey {
	return scopeKey{k.GVR.Group, k.GVR.Resource, k.Namespace}
}

// vanishedWatch is a watch that stopped because discovery stopped serving its
// resource, and when.
type vanishedWatch struct {
	key dyninformer.Key
	at  time.Time
}

// setWatchesLocked makes the running informers match watches, calling before
// as dyninformer.Manager.SetThen does, and with state notes their lists for
// the comparison with the records. A refresh of discovery (lists ListsNew)
// that drops a watched resource notes it as vanished; a resource back within
// vanishGrace starts with known lists, compared with its records as at a
// restart, while resources not watched before start as new (a second step:
// before is called at each). w.mu is held.
func (w *Watcher) setWatchesLocked(s *source, watches []dyninformer.Watch, lists dyninformer.Lists, before func(dyninformer.Change)) dyninformer.Change {
	if w.durable == nil {
		return s.mgr.SetThen(watches, lists, before)
	}
	now := time.Now()
	watching := w.noteVanishedLocked(s, watches, lists, now)
	var known []dyninformer.Watch
	back := false
	for _, wt := range watches {
		sk := scopeOf(wt.Key())
		v, vanished := s.vanished[sk]
		if vanished && !watching[sk] {
			back = true
			delete(s.vanished, sk)
			s.log.Info("resource back in discovery: its list is compared with its records, as at a restart", "resource", wt.Key().String(), "after", now.Sub(v.at).Round(time.Millisecond).String())
		}
		if watching[sk] || vanished {
			known = append(known, wt)
		}
	}
	if lists != dyninformer.ListsNew || !back {
		return w.setListingLocked(s, watches, lists, before)
	}
	first := w.setListingLocked(s, known, dyninformer.ListsKnown, before)
	more := w.setListingLocked(s, watches, dyninformer.ListsNew, before)
	more.Started = append(first.Started, more.Started...)
	return more
}

// setListingLocked is the manager's SetThen, with the lists of the watches it
// adds noted for the comparison with the records (after before) before their
// informers start: no object of a first list comes before its listing. w.mu
// is held.
func (w *Watcher) setListingLocked(s *source, watches []dyninformer.Watch, lists dyninformer.Lists, before func(dyninformer.Change)) dyninformer.Change {
	ch := s.mgr.SetThen(watches, lists, func(c dyninformer.Change) {
		before(c)
		w.durable.startListing(c.Started, lists)
	})
	if w.durable.afterStart != nil {
		w.durable.afterStart()
	}
	return ch
}

// noteVanishedLocked notes, on a refresh of discovery, the running watches
// that watches no longer has (under any version), forgets those that vanished
// vanishGrace ago or more, and returns the scopes running now. w.mu is held.
func (w *Watcher) noteVanishedLocked(src *source, watches []dyninformer.Watch, lists dyninformer.Lists, now time.Time) map[scopeKey]bool {
	wanted := map[scopeKey]bool{}
	served := map[groupResource]bool{}
	for _, wt := range watches {
		s := scopeOf(wt.Key())
		wanted[s] = true
		served[groupResource{s.group, s.resource}] = true
	}
	var crdGone map[groupResource]bool // resources whose CRD was deleted: gone, not flapping
	if lists == dyninformer.ListsNew {
		crdGone = src.crdDeleted.take(served, now, src.vanishGrace)
	}
	watching := map[scopeKey]bool{}
	for _, k := range src.mgr.Watches() {
		s := scopeOf(k)
		watching[s] = true
		if lists == dyninformer.ListsNew && !wanted[s] && !crdGone[groupResource{s.group, s.resource}] {
			src.vanished[s] = vanishedWatch{key: k, at: now}
			src.log.Info("resource left discovery; its records are kept in case it comes back", "resource", k.String(), "for", src.vanishGrace.String())
		}
	}
	for s, v := range src.vanished {
		if now.Sub(v.at) >= src.vanishGrace || crdGone[groupResource{s.group, s.resource}] {
			delete(src.vanished, s)
		}
	}
	return watching
}

// vanishedKeys returns the watches of s that vanished within vanishGrace:
// their records and baselines are kept. The watcher's mu is held.
func (s *source) vanishedKeys() []dyninformer.Key {
	out := make([]dyninformer.Key, 0, len(s.vanished))
	for _, v := range s.vanished {
		out = append(out, v.key)
	}
	return out
}
