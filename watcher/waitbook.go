package watcher

import (
	dueq "container/heap"
	"strings"
	"sync"
	"time"

	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/state"
	"github.com/dynwatch/dynwatch/timed"
)

// waitSep separates a wait's object key from its rule's name in its key:
// neither a name nor an object key holds a NUL.
const waitSep = "\x00"

// waitKey names the state of one object under one timed rule: the object's
// key (event.Event.ObjectKey) and the rule's name.
func waitKey(objectKey, rule string) string { return objectKey + waitSep + rule }

// waitPlace is what a wait's key says: the object (its cluster, group,
// resource, namespace and name) and the rule.
type waitPlace struct {
	cluster, group, resource, namespace, name, rule string
}

// parseWaitKey reads a wait's key back; ok is false for one that is not a
// wait key (a file written by another build).
func parseWaitKey(key string) (waitPlace, bool) {
	obj, rule, ok := strings.Cut(key, waitSep)
	if !ok || rule == "" {
		return waitPlace{}, false
	}
	var p waitPlace
	p.rule = rule
	// [CLUSTER:]group/resource/namespace/name: a cluster's name comes before
	// the first ':' that precedes the first '/' (a group has neither).
	if slash := strings.IndexByte(obj, '/'); slash >= 0 {
		if colon := strings.IndexByte(obj[:slash], ':'); colon >= 0 {
			p.cluster, obj = obj[:colon], obj[colon+1:]
		}
	}
	parts := strings.SplitN(obj, "/", 4)
	if len(parts) != 4 || parts[1] == "" || parts[3] == "" {
		return waitPlace{}, false
	}
	p.group, p.resource, p.namespace, p.name = parts[0], parts[1], parts[2], parts[3]
	return p, true
}

// waitBook is what the watcher keeps in memory of the timed rules' states:
// when each falls due (one heap and one timer goroutine for all of them, not
// one per wait), and how many objects each rule has pending and entered.
// Without state.path it also holds the states themselves (states); with it
// they are in the file, and the book follows what each commit wrote.
type waitBook struct {
	mu sync.Mutex
	// states holds the states without state.path; nil with it.
	states map[string]timed.State
	// rechecks holds, with state.path, when a time condition's answer
	// changes next for each key that has one: the file does not keep it
	// (kept), and the timer must know it to tell a recheck that fell due
	// from one the state moved past.
	rechecks map[string]time.Time
	dues     dueHeap
	// counts are, per rule, its objects pending (waiting for `for`) and
	// entered (fired enter, not yet exit).
	counts map[string]*waitCounts
	// specs are the timed rules by name, as the current config says.
	specs map[string]timed.Spec
	wake  chan struct{}
}

type waitCounts struct{ pending, firing int }

func newWaitBook(inMemory bool) *waitBook {
	b := &waitBook{counts: map[string]*waitCounts{}, specs: map[string]timed.Spec{}, wake: make(chan struct{}, 1), dues: dueHeap{at: map[string]*placed{}}}
	if inMemory {
		b.states = map[string]timed.State{}
	} else {
		b.rechecks = map[string]time.Time{}
	}
	return b
}

// setSpecs takes the timed rules of a new config and schedules the states
// the book holds again by them (a `for` a reload shortened falls due
// sooner). With state.path the caller schedules the file's states again
// (load).
func (b *waitBook) setSpecs(specs map[string]timed.Spec) {
	b.mu.Lock()
	b.specs = specs
	for key, s := range b.states {
		if p, ok := parseWaitKey(key); ok {
			if due := s.Due(specs[p.rule]); !due.IsZero() {
				b.dues.schedule(dueAt{due: due, key: key})
			}
		}
	}
	b.mu.Unlock()
	b.kick()
}

// load schedules the states the file keeps, and counts them afresh: at
// start, and when a reload changed the timed rules. The rechecks the book
// holds are scheduled again with them (those of rules no longer timed
// forgotten).
func (b *waitBook) load(states map[string]timed.State) {
	b.mu.Lock()
	b.loadLocked(states)
	b.mu.Unlock()
	b.kick()
}

func (b *waitBook) loadLocked(states map[string]timed.State) {
	b.counts = map[string]*waitCounts{}
	b.dues = dueHeap{at: map[string]*placed{}}
	for key, s := range states {
		p, ok := parseWaitKey(key)
		if !ok {
			continue
		}
		b.countLocked(p.rule, s, +1)
		if b.rechecks != nil {
			s.Recheck = b.rechecks[key]
		}
		if due := s.Due(b.specs[p.rule]); !due.IsZero() {
			b.dues.add(dueAt{due: due, key: key})
		}
	}
	for key, at := range b.rechecks {
		p, ok := parseWaitKey(key)
		if _, timedRule := b.specs[p.rule]; !ok || !timedRule {
			delete(b.rechecks, key)
			continue
		}
		if _, inFile := states[key]; !inFile {
			b.dues.add(dueAt{due: at, key: key})
		}
	}
	dueq.Init(&b.dues)
}

// kick wakes the timer loop to look at the heap again.
func (b *waitBook) kick() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// state returns the state of key, without state.path.
func (b *waitBook) state(key string) timed.State {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.states[key]
}

// set notes that key's state went from prev to next (written to the file,
// or kept here without one), and schedules next's due time.
func (b *waitBook) set(key, rule string, prev, next timed.State) {
	b.mu.Lock()
	if b.states != nil {
		if next.IsZero() {
			delete(b.states, key)
		} else {
			b.states[key] = next
		}
	}
	if b.rechecks != nil {
		if next.Recheck.IsZero() {
			delete(b.rechecks, key)
		} else {
			b.rechecks[key] = next.Recheck
		}
	}
	b.countLocked(rule, prev, -1)
	b.countLocked(rule, next, +1)
	due := next.Due(b.specs[rule])
	first := !due.IsZero() && (b.dues.Len() == 0 || due.Before(b.dues.items[0].due))
	if due.IsZero() {
		b.dues.unschedule(key)
	} else {
		b.dues.schedule(dueAt{due: due, key: key})
	}
	b.mu.Unlock()
	if first {
		b.kick()
	}
}

func (b *waitBook) countLocked(rule string, s timed.State, d int) {
	if s.IsZero() {
		return
	}
	c := b.counts[rule]
	if c == nil {
		c = &waitCounts{}
		b.counts[rule] = c
	}
	if s.Pending() {
		c.pending += d
	}
	if s.Entered {
		c.firing += d
	}
}

// next returns the earliest due time; ok is false when nothing waits.
func (b *waitBook) next() (time.Time, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dues.Len() == 0 {
		return time.Time{}, false
	}
	return b.dues.items[0].due, true
}

// popDue takes out the keys due at now, each with its due time. A key may
// come out when it is no longer due (its state stepped by a commit the book
// has not heard of yet): the caller checks its state then.
func (b *waitBook) popDue(now time.Time) []dueAt {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []dueAt
	for b.dues.Len() > 0 && !b.dues.items[0].due.After(now) {
		out = append(out, dueq.Pop(&b.dues).(dueAt))
	}
	return out
}

// counted returns, per rule, its pending and entered objects.
func (b *waitBook) counted() map[string]waitCounts {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string]waitCounts, len(b.counts))
	for r, c := range b.counts {
		out[r] = *c
	}
	return out
}

// dueAt is one wake: the key whose state falls due at due. missed is when
// a wake of the key first found its object out of reach (see fireWait).
type dueAt struct {
	due    time.Time
	key    string
	missed time.Time
}

// dueHeap orders wakes by time (container/heap), one per key: a state
// scheduled again moves its key's wake rather than adding one, so that an
// object that flaps under a long wait holds one wake, not one per flap
// until each old one falls due. at finds a key's wake; each wake knows its
// place in items, so that a swap does not touch the map.
type dueHeap struct {
	items []*placed
	at    map[string]*placed
}

type placed struct {
	dueAt
	i int
}

func (h *dueHeap) Len() int           { return len(h.items) }
func (h *dueHeap) Less(i, j int) bool { return h.items[i].due.Before(h.items[j].due) }
func (h *dueHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].i, h.items[j].i = i, j
}

func (h *dueHeap) Push(x any) {
	p := &placed{dueAt: x.(dueAt), i: len(h.items)}
	h.at[p.key] = p
	h.items = append(h.items, p)
}

func (h *dueHeap) Pop() any {
	last := len(h.items) - 1
	p := h.items[last]
	h.items[last] = nil
	h.items = h.items[:last]
	delete(h.at, p.key)
	return p.dueAt
}

// schedule sets d's key to wake at d.due.
func (h *dueHeap) schedule(d dueAt) {
	if p, ok := h.at[d.key]; ok {
		p.dueAt = d
		dueq.Fix(h, p.i)
		return
	}
	dueq.Push(h, d)
}

// unschedule takes key's wake out, if it has one.
func (h *dueHeap) unschedule(key string) {
	if p, ok := h.at[key]; ok {
		dueq.Remove(h, p.i)
	}
}

// add puts d in while the heap is built (load, before dueq.Init); each key
// comes once.
func (h *dueHeap) add(d dueAt) { h.Push(d) }

// memWaits is rules.Waits without state.path: the book holds the states.
type memWaits struct{ b *waitBook }

func (m memWaits) Wait(objectKey, rule string) timed.State {
	return m.b.state(waitKey(objectKey, rule))
}

func (m memWaits) SetWait(ev *event.Event, rule string, prev, next timed.State) {
	if prev == next {
		return
	}
	m.b.set(waitKey(ev.ObjectKey(), rule), rule, prev, next)
}

// txWaits is rules.Waits with state.path: states read and written in the
// event's commit; the book follows once the commit is on disk (applied),
// so that a commit the file refused and ran again schedules nothing twice.
type txWaits struct {
	tx *state.Tx
	// book gives each rule's spec (what the file keeps of a state).
	book    *waitBook
	changes []waitChange
	err     error
}

type waitChange struct {
	key, rule  string
	prev, next timed.State
}

func (t *txWaits) Wait(objectKey, rule string) timed.State {
	s, _, err := t.tx.Wait(waitKey(objectKey, rule))
	if err != nil && t.err == nil {
		t.err = err
	}
	return s
}

func (t *txWaits) SetWait(ev *event.Event, rule string, prev, next timed.State) {
	if prev == next {
		return
	}
	key := waitKey(ev.ObjectKey(), rule)
	sp, _ := t.book.spec(rule)
	if kept(prev, sp) != kept(next, sp) {
		if err := t.tx.PutWait(key, kept(next, sp)); err != nil && t.err == nil {
			t.err = err
		}
	}
	t.changes = append(t.changes, waitChange{key: key, rule: rule, prev: prev, next: next})
}

// kept is what the file keeps of a state: not when a rolling recheck (CEL's
// now(), asked again every 30s) comes next, which the object says again at
// each evaluation (the start's list included), so that a recheck that
// changes nothing writes nothing; the book holds it meanwhile (rechecks).
// An exact one (olderThan, newerThan) is kept: once past, it is when the
// conditions started holding, which a start after it fell due needs.
func kept(s timed.State, sp timed.Spec) timed.State {
	if sp.Rolling {
		s.Recheck = time.Time{}
	}
	return s
}

// applied tells the book what the commit wrote.
func (b *waitBook) applied(changes []waitChange) {
	for _, c := range changes {
		b.set(c.key, c.rule, c.prev, c.next)
	}
}

// retry looks at d again after wait, noting when its object was first out
// of reach.
func (b *waitBook) retry(d dueAt, wait time.Duration) {
	now := time.Now()
	if d.missed.IsZero() {
		d.missed = now
	}
	b.mu.Lock()
	b.dues.schedule(dueAt{due: now.Add(wait), key: d.key, missed: d.missed})
	b.mu.Unlock()
}

// withRecheck is s, read from the file, with the recheck the book holds for
// key (with state.path).
func (b *waitBook) withRecheck(key string, s timed.State) timed.State {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rechecks != nil {
		s.Recheck = b.rechecks[key]
	}
	return s
}

// spec returns the named timed rule's spec; ok is false when the config has
// no timed rule of that name.
func (b *waitBook) spec(rule string) (timed.Spec, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, ok := b.specs[rule]
	return s, ok
}

// forgetUnlisted forgets, once a watch's list is complete, the waits of the
// objects in its scope that the list did not have: gone while dynwatch was
// down without a record to replay their delete, or moved to another shard
// at a reshard. No watch here will see their delete, so an entered state
// would stay for ever (in dynwatch_firing) and pass to an object made again
// under the name. The deletes the comparison replays stepped theirs first.
func forgetUnlisted(tx *state.Tx, waits *txWaits, k dyninformer.Key, listed map[string]bool) error {
	prefix := k.GVR.Group + "/" + k.GVR.Resource + "/"
	if k.Cluster != "" {
		prefix = k.Cluster + ":" + prefix
	}
	if k.Namespace != "" {
		prefix += k.Namespace + "/"
	}
	var gone []waitChange
	err := tx.ForEachWaitUnder(prefix, func(key string, s timed.State, ok bool) error {
		p, parsed := parseWaitKey(key)
		if !parsed || listed[p.namespace+"/"+p.name] {
			return nil // another build's key is configureTimers' to forget
		}
		gone = append(gone, waitChange{key: key, rule: p.rule, prev: s})
		return nil
	})
	for _, c := range gone {
		if err == nil {
			err = tx.PutWait(c.key, timed.State{})
		}
	}
	waits.changes = append(waits.changes, gone...)
	return err
}
