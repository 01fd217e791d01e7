package watcher

import (
	"context"
	"errors"
	"time"

	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/plan"
	"github.com/dynwatch/dynwatch/rules"
	"github.com/dynwatch/dynwatch/state"
	"github.com/dynwatch/dynwatch/timed"
)

// timerRetry is how soon a wait is looked at again when its object's watch
// has not listed yet (at start, a reload), or its cache does not hold the
// object (its delete is on its way and will step the state itself).
const timerRetry = time.Second

// timerGiveUp is how long a wait whose object no synced cache holds is
// looked at again before it is forgotten: its delete would have stepped it.
const timerGiveUp = 2 * time.Minute

// TimedCounts returns, per timed rule, how many objects wait for `for` to
// pass (pending) and how many entered and have not exited (firing).
func (w *Watcher) TimedCounts() map[string][2]int {
	out := map[string][2]int{}
	for r, c := range w.waits.counted() {
		out[r] = [2]int{c.pending, c.firing}
	}
	return out
}

// timedSpecs are the timed rules of file, by name.
func timedSpecs(file *plan.File) map[string]timed.Spec {
	out := map[string]timed.Spec{}
	for _, r := range file.Rules {
		if r.Timed() {
			out[r.Name] = r.TimedSpec()
		}
	}
	return out
}

// waitScope says which waits a config keeps: those of its timed rules, on
// objects of its clusters and of the rule's namespaces. A wait outside it
// is of an object no watch of its rule sees any more, whose delete would not
// step it: kept, an entered one would stay for ever, and pass to an object
// re-created under the name once the rule watches it again.
func waitScope(file *plan.File) func(key string) bool {
	timedRules := map[string]*rules.Rule{}
	for _, r := range file.Rules {
		if r.Timed() {
			timedRules[r.Name] = r
		}
	}
	clusters := map[string]bool{}
	for _, c := range clustersOf(file) {
		clusters[c.Name] = true
	}
	return func(key string) bool {
		p, ok := parseWaitKey(key)
		r := timedRules[p.rule]
		return ok && r != nil && clusters[p.cluster] && r.InNamespace(p.namespace)
	}
}

// configureTimers takes the timed rules of file: the waits outside its
// scope (waitScope) are forgotten, and those kept are scheduled again by
// their rules' new specs. start says it is the watcher's first config,
// before any event: with state.path the file is read at once. At a reload
// the file is read and the book loaded through the events' committer, in
// the order of the commits (whose after steps move the book): a commit the
// book would hear of between the read and the load cannot lose its wake or
// be counted twice.
func (w *Watcher) configureTimers(file *plan.File, start bool) error {
	specs := timedSpecs(file)
	inScope := waitScope(file)
	w.waits.setSpecs(specs)
	if w.durable == nil {
		w.forgetMemWaits(inScope)
		return nil
	}
	kept := map[string]timed.State{}
	forget := func(tx *state.Tx) error {
		clear(kept) // a run again (the file refused one) starts afresh
		var gone []string
		err := tx.ForEachWait(func(key string, s timed.State, ok bool) error {
			if !ok || !inScope(key) {
				gone = append(gone, key)
				return nil
			}
			kept[key] = s
			return nil
		})
		for _, key := range gone {
			if err == nil {
				err = tx.PutWait(key, timed.State{})
			}
		}
		return err
	}
	if start {
		if err := w.durable.store.Update(forget); err != nil {
			return err
		}
		w.waits.load(kept)
		return nil
	}
	w.durable.commits.Submit(0, forget, func(err error) {
		switch {
		case err == nil:
			w.waits.load(kept)
		case !errors.Is(err, state.ErrStopped) && !errors.Is(err, state.ErrGivenUp):
			w.log.Error("state: cannot forget the waits the config no longer has", "err", err)
		}
	})
	return nil
}

// forgetMemWaits drops, without state.path, the waits outside the config's
// scope, and counts the rest afresh: under one hold of the book's lock, so
// that an event handled meanwhile finds each kept state where it was.
func (w *Watcher) forgetMemWaits(inScope func(key string) bool) {
	b := w.waits
	b.mu.Lock()
	for key := range b.states {
		if !inScope(key) {
			delete(b.states, key)
		}
	}
	b.loadLocked(b.states)
	b.mu.Unlock()
	b.kick()
}

// runTimers wakes at each wait's due time, until ctx is done: one goroutine
// and one timer for every wait.
func (w *Watcher) runTimers(ctx context.Context) {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		wait := time.Hour
		if due, ok := w.waits.next(); ok {
			wait = max(time.Until(due), 0)
		}
		t.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-w.waits.wake:
		case <-t.C:
		}
		for _, d := range w.waits.popDue(time.Now()) {
			w.fireWait(d)
		}
	}
}

// fireWait evaluates the rule of a wait that fell due on its object as the
// cache holds it now, within the object's watch's handler calls, through
// the path of every event: what it fires is delivered in order with the
// object's other events, and with state.path its state moves in the same
// commit as its deliveries.
//
// A wait whose object cannot be looked at yet (its watch has not started or
// listed, at start or after a reload; or its cache no longer holds it, its
// delete on its way, which steps the state itself) is looked at again every
// timerRetry, and forgotten after timerGiveUp of that. A wait of a rule the
// config no longer times is forgotten at once.
func (w *Watcher) fireWait(d dueAt) {
	place, ok := parseWaitKey(d.key)
	if !ok {
		return
	}
	spec, timedRule := w.waits.spec(place.rule)
	if !timedRule {
		w.forgetWait(d.key, place.rule)
		return
	}
	s, err := w.waitState(d.key)
	if err != nil {
		w.log.Error("state: cannot read a timed rule's wait", "rule", place.rule, "err", err)
		return
	}
	due := s.Due(spec)
	if due.IsZero() || due.After(d.due) {
		return // stepped since: its new due time is in the heap
	}
	found := false
	if k, mgr, ok := w.watchOf(place); ok {
		found, _ = mgr.Visit(k, place.namespace, place.name, func(ev *event.Event) {
			ev.Type, ev.Time = event.Update, time.Now()
			ev.Timed = &event.Timed{Rule: place.rule, Due: due, Late: due.Before(w.started)}
			w.handle(k, ev)
		})
	}
	switch {
	case found:
	case !d.missed.IsZero() && time.Since(d.missed) > timerGiveUp:
		w.log.Info("a timed rule's object is not watched or not in the cache; its wait is forgotten",
			"rule", place.rule, "namespace", place.namespace, "name", place.name)
		w.forgetWait(d.key, place.rule)
	default:
		w.waits.retry(d, timerRetry)
	}
}

// watchOf finds the watch that holds a wait's object, and its cluster's
// informers: a watch of its rule's resource whose scope has the object.
func (w *Watcher) watchOf(place waitPlace) (dyninformer.Key, *dyninformer.Manager, bool) {
	ci := w.pipe.Load().clusters[place.cluster]
	mgr := w.managerOf(place.cluster)
	if ci == nil || mgr == nil {
		return dyninformer.Key{}, nil, false
	}
	for gvr, rs := range ci.index {
		if gvr.Group != place.group || gvr.Resource != place.resource || !hasRule(rs, place.rule, place.namespace) {
			continue
		}
		for _, k := range mgr.Watches() {
			if k.GVR == gvr && (k.Namespace == "" || k.Namespace == place.namespace) {
				return k, mgr, true
			}
		}
	}
	return dyninformer.Key{}, nil, false
}

// hasRule reports whether rs has the named rule, for objects of namespace.
func hasRule(rs []*rules.Rule, name, namespace string) bool {
	for _, r := range rs {
		if r.Name == name && r.InNamespace(namespace) {
			return true
		}
	}
	return false
}

// managerOf returns the informers of the named cluster, nil when it has none
// yet.
func (w *Watcher) managerOf(cluster string) *dyninformer.Manager {
	for _, s := range w.sources() {
		if s.name == cluster && s.connected.Load() {
			return s.mgr
		}
	}
	return nil
}

// waitState reads the state of a wait: from the file with state.path (and
// its recheck, which the file does not keep, from the book), else from the
// book.
func (w *Watcher) waitState(key string) (timed.State, error) {
	if w.durable == nil {
		return w.waits.state(key), nil
	}
	var s timed.State
	err := w.durable.store.View(func(tx *state.Tx) error {
		var err error
		s, _, err = tx.Wait(key)
		return err
	})
	return w.waits.withRecheck(key, s), err
}

// forgetWait drops a wait whose rule or object is gone.
func (w *Watcher) forgetWait(key, rule string) {
	if w.durable == nil {
		prev := w.waits.state(key)
		w.waits.set(key, rule, prev, timed.State{})
		return
	}
	var prev timed.State
	w.durable.commits.Submit(0, func(tx *state.Tx) error {
		var err error
		if prev, _, err = tx.Wait(key); err != nil {
			prev = timed.State{} // not a state: forget it all the same
		}
		return tx.PutWait(key, timed.State{})
	}, func(err error) {
		if err == nil {
			w.waits.set(key, rule, prev, timed.State{})
		} else if !errors.Is(err, state.ErrStopped) && !errors.Is(err, state.ErrGivenUp) {
			w.log.Error("state: cannot forget a timed rule's wait", "rule", rule, "err", err)
		}
	})
}
