package watcher

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/dynwatch/dynwatch/action"
	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/metrics"
	"github.com/dynwatch/dynwatch/plan"
)

// actionSet is the watcher's action queues: it builds them (reusing a running
// queue whose spec a reload left as it was), starts them, hands a replaced
// queue's backlog on to its successor, retires the queues of removed actions
// and halts them all at once.
type actionSet struct {
	stdout  io.Writer
	source  string // the actions' CloudEvents source
	log     *slog.Logger
	durable *durable // nil without state.path

	// mu is the watcher's, which serializes changes of config and catalog;
	// it guards queues, removed and queueCtx.
	mu       *sync.Mutex
	queues   map[string]*queueRun // the current queue of each action
	queueCtx context.Context      // set once Run starts the queues
	queueWG  sync.WaitGroup
	set      startedQueues // every queue started, for halting and counts
	lost     atomic.Uint64 // events abandoned at shutdown without state

	// removed holds, with state, the queues of actions a reload removed, by
	// name: a reload that adds the name again takes over what they hold.
	removed map[string]*queueRun
}

// queueRun is an action's queue and what stops it.
type queueRun struct {
	spec   config.ActionSpec
	q      *action.Queue
	closer io.Closer
	cancel context.CancelFunc
}

// buildQueues makes a queue for every action of file whose spec differs from
// the running one's, and reuses the running queue where it is the same.
func (s *actionSet) buildQueues(file *plan.File) (map[string]*queueRun, error) {
	out := map[string]*queueRun{}
	for _, a := range file.Actions {
		if old, ok := s.queues[a.Spec.Name]; ok && reflect.DeepEqual(old.spec, a.Spec) {
			out[a.Spec.Name] = old
			continue
		}
		qr, err := s.newQueue(a, file.Secrets())
		if err != nil {
			for _, qr := range out {
				if s.queues[qr.spec.Name] != qr && qr.closer != nil {
					_ = qr.closer.Close()
				}
			}
			return nil, fmt.Errorf("action %s: %w", a.Spec.Name, err)
		}
		out[a.Spec.Name] = qr
	}
	return out, nil
}

// newQueue builds an action's sender (masking secrets, the file's ${VAR}
// values, in what receivers say back) and queue; with state, a delivery is
// removed from disk once it is finished with.
func (s *actionSet) newQueue(a *action.Action, secrets *config.Secrets) (*queueRun, error) {
	sender, closer, err := a.Build(action.Env{Stdout: s.stdout, Source: s.source, Secrets: secrets, Logger: s.log})
	if err != nil {
		return nil, err
	}
	opts := action.QueueOptions{
		Size:        a.Spec.QueueSize,
		Concurrency: a.Spec.Concurrency,
		Retry:       a.Retry,
		Logger:      s.log,
	}
	opts.Group, opts.RateLimit = groupOptions(a.Spec)
	if s.durable != nil {
		// Accepted events are on disk: the memory queue refuses none, and what
		// is left at shutdown is delivered after the next start.
		opts.Outbox = s.durable.outbox.of(a.Spec.Name)
	}
	return &queueRun{spec: a.Spec, closer: closer, q: action.NewQueue(a.Spec.Name, sender, opts)}, nil
}

func queueMap(qs map[string]*queueRun) map[string]*action.Queue {
	m := make(map[string]*action.Queue, len(qs))
	for name, qr := range qs {
		m[name] = qr.q
	}
	return m
}

// startAll starts every current queue under ctx, which ends when no more
// events can arrive (they then drain); s.mu is held.
func (s *actionSet) startAll(ctx context.Context, file *plan.File) {
	s.queueCtx = ctx
	for _, qr := range s.queues {
		s.startQueue(qr, file)
	}
}

// startQueue runs qr until it is replaced or the watcher stops; s.mu is held.
func (s *actionSet) startQueue(qr *queueRun, file *plan.File) {
	ctx, cancel := context.WithCancel(s.queueCtx)
	qr.cancel = cancel
	grace := file.Config.ShutdownGrace.Std()
	s.set.start(qr.q)
	s.queueWG.Go(func() {
		_ = qr.q.Run(ctx, grace)
		// Whether qr is still current is read under s.mu: a queue a reload
		// replaced can stop before that reload has published the new pipeline.
		s.mu.Lock()
		current := s.queues[qr.spec.Name] == qr
		s.mu.Unlock()
		s.set.stopped(qr.q, current)
		if s.durable == nil {
			s.lost.Add(qr.q.Stats().Abandoned)
		}
		if qr.closer != nil {
			_ = qr.closer.Close() // a log file stays open until its queue has drained
		}
	})
}

// running reports whether Run has started the queues; s.mu is held.
func (s *actionSet) running() bool { return s.queueCtx != nil }

// handOff makes queues, built for file, the current ones: while the queues
// run, each new queue takes over the backlog of the one it replaces (or, with
// state, what its name left on disk) and starts. It returns the queues that
// were current; s.mu is held.
func (s *actionSet) handOff(queues map[string]*queueRun, file *plan.File) (retired map[string]*queueRun) {
	for name, qr := range queues {
		if s.queues[name] == qr || !s.running() {
			continue
		}
		if old, ok := s.queues[name]; ok {
			old.q.HandOff(qr.q) // the backlog moves to the new settings, in order
		} else {
			s.takeBacklogLocked(name, qr) // an action's backlog belongs to its name
		}
		s.startQueue(qr, file)
	}
	retired = s.queues
	s.queues = queues
	return retired
}

// retire stops the queues of retired whose action the current queues no
// longer have: each drains for its grace period, then stops. s.mu is held.
func (s *actionSet) retire(retired map[string]*queueRun) {
	for name, qr := range retired {
		if _, kept := s.queues[name]; !kept && s.running() {
			qr.cancel() // drains for its grace period, then stops
			s.removedLocked(name, qr)
		}
	}
}

// startedQueues is every action queue the watcher has started: the current
// ones, and those a reload replaced or removed while they still hand their
// backlog on or drain it.
//
// Halting is a state of the set, not of the queues that happen to be current:
// once halted, every queue in it stops delivering at once, and every queue
// started later (a reload that lands after the halt) starts halted. After a
// lost Lease nothing delivers, whatever reloads do.
//
// The set also keeps an action's counts across the queues it has had, so that
// a reload that replaces a queue does not reset its counters.
type startedQueues struct {
	mu     sync.Mutex
	halted bool
	// members are the queues started and not yet folded into past, by action.
	members map[string][]*action.Queue
	// past holds the counts of queues that stopped after a reload replaced or
	// removed them, by action name.
	past map[string]action.Stats
}

// start adds q, which is about to run, halting it if the set is halted.
func (s *startedQueues) start(q *action.Queue) {
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
func (s *startedQueues) stopped(q *action.Queue, current bool) {
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
func (s *startedQueues) halt() {
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
func (s *startedQueues) sample(name string) metrics.QueueSample {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, depth, grouped, inGroups := s.past[name], 0, false, 0
	for _, q := range s.members[name] {
		st = addStats(st, q.Stats())
		depth += q.Len()
		grouped = grouped || q.Grouped()
		inGroups += q.GroupEvents()
	}
	return metrics.QueueSample{Action: name, Delivered: st.Delivered, Retries: st.Retries, Failed: st.Failed, Dropped: st.Dropped, Depth: depth, Enqueued: st.Enqueued,
		Grouped: grouped || st.Groups > 0, GroupEvents: inGroups, Groups: st.Groups}
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
		Groups:    a.Groups + b.Groups,
	}
}

// Halt stops every delivery at once (attempts in flight are aborted), for
// good: for a replica that lost its lease, or whose queued events are on
// disk. Queues a reload retired stop too, and queues a later reload builds
// start halted. Run then drains nothing when its context ends.
func (w *Watcher) Halt() { w.acts.set.halt() }
