package watcher

import (
	"slices"
	"sync"

	"github.com/dynwatch/dynwatch/action"
	"github.com/dynwatch/dynwatch/metrics"
)

// actionSet is every action queue the watcher has started: the current ones,
// and those a reload replaced or removed while they still hand their backlog
// on or drain it.
//
// Halting is a state of the set, not of the queues that happen to be current:
// once halted, every queue in it stops delivering at once, and every queue
// started later (a reload that lands after the halt) starts halted. After a
// lost Lease nothing delivers, whatever reloads do.
//
// The set also keeps an action's counts across the queues it has had, so that
// a reload that replaces a queue does not reset its counters.
type actionSet struct {
	mu     sync.Mutex
	halted bool
	// members are the queues started and not yet folded into past, by action.
	members map[string][]*action.Queue
	// past holds the counts of queues that stopped after a reload replaced or
	// removed them, by action name.
	past map[string]action.Stats
}

// start adds q, which is about to run, halting it if the set is halted.
func (s *actionSet) start(q *action.Queue) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.members == nil {
		s.members = map[string][]*action.Queue{}
	}
	s.members[q.Name()] = append(s.members[q.Name()], q)
	if s.halted {
		q.Halt()
	}
}

// stopped notes that q's Run has returned. A queue that is no longer its
// action's current one has its counts folded into the action's past; the
// current one (the watcher is stopping) stays as it is.
func (s *actionSet) stopped(q *action.Queue, current bool) {
	if current {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	name := q.Name()
	i := slices.Index(s.members[name], q)
	if i < 0 {
		return
	}
	s.members[name] = slices.Delete(s.members[name], i, i+1)
	if s.past == nil {
		s.past = map[string]action.Stats{}
	}
	s.past[name] = addStats(s.past[name], q.Stats())
}

// halt stops every queue of the set at once and makes the set halted for good.
func (s *actionSet) halt() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.halted = true
	for _, qs := range s.members {
		for _, q := range qs {
			q.Halt()
		}
	}
}

// sample is the action's counts over every queue it has had, and how many of
// its deliveries its queues hold in memory.
func (s *actionSet) sample(name string) metrics.QueueSample {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, depth := s.past[name], 0
	for _, q := range s.members[name] {
		st = addStats(st, q.Stats())
		depth += q.Len()
	}
	return metrics.QueueSample{Action: name, Delivered: st.Delivered, Retries: st.Retries, Failed: st.Failed, Dropped: st.Dropped, Depth: depth}
}

func addStats(a, b action.Stats) action.Stats {
	return action.Stats{
		Enqueued:  a.Enqueued + b.Enqueued,
		Delivered: a.Delivered + b.Delivered,
		Retries:   a.Retries + b.Retries,
		Failed:    a.Failed + b.Failed,
		Dropped:   a.Dropped + b.Dropped,
		Abandoned: a.Abandoned + b.Abandoned,
		Outages:   a.Outages + b.Outages,
	}
}

// Halt stops every delivery at once (attempts in flight are aborted), for
// good: for a replica that lost its lease, or whose queued events are on
// disk. Queues a reload retired stop too, and queues a later reload builds
// start halted. Run then drains nothing when its context ends.
func (w *Watcher) Halt() { w.set.halt() }
