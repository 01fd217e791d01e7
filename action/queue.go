package action

import (
	"context"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/event"
)

// Queue is one action's queue. Deliveries with the same Key are delivered one at
// a time in the order they were enqueued; different keys proceed in parallel, up
// to Concurrency at once.
//
// Failures back off per action, not per event: when the receiver fails, the
// action is down, one probe at a time retries on the backoff schedule while
// the other deliveries wait without holding a worker, and the first success
// lets the whole backlog go at full concurrency. An outage gives nothing up,
// however long: its failures count against the outage, not against the
// events' retry.max. A failure of one event alone (Failure.OneEvent, or any
// failure once other deliveries got through since that event's previous
// attempt) backs off that event's key only, and counts against its
// retry.max.
type Queue struct {
	name        string
	sender      Sender
	retry       Retry
	size        int
	concurrency int
	log         *slog.Logger
	clock       clock.Clock
	outbox      Outbox // nil: what is queued is in memory only

	mu      sync.Mutex
	cond    *sync.Cond
	pending map[string][]*item // by key; the head is in flight, waiting or next
	ready   []string           // keys with work and no worker on them
	total   int                // deliveries queued, in flight included
	stop    bool               // workers exit when set
	closed  bool               // Run has returned: nothing more is delivered
	health  health
	// accepted counts the deliveries the receiver accepted (carried over
	// by HandOff): an event's failure counts against its retry.max only
	// if it grew since the event's previous attempt.
	accepted uint64
	warned   time.Time // last per-event failure warning, to log at most once a minute
	// backoffs are the keys waiting on their own retry (retryAlone), and when.
	backoffs map[string]time.Time
	// rearm tells the queue's timer (wakeTimer) that a wake-up time changed.
	rearm chan struct{}
	// successor takes this queue's backlog when the action's settings change
	// (HandOff); after that, Enqueue forwards to it.
	successor *Queue
	retire    chan struct{} // closed by HandOff
	// heir is the queue that follows this one (HandOff, Follow); its sender
	// inherits this one's when Run ends (passOn). ended: Run has passed its
	// sender on, or ended without an heir.
	heir  *Queue
	ended bool
	// cancelWork aborts attempts in flight (set while Run runs); Halt uses it.
	cancelWork context.CancelFunc
	// after, when set, is the predecessor's handedOff: Run delivers nothing
	// before the backlog it takes over is in place, so that order holds.
	after     <-chan struct{}
	handedOff chan struct{} // closed when Run has returned
	// grp is the grouping stage (group.go); nil for an action that does not
	// group and took nothing grouped over.
	grp *grouper
	// limit spaces the action's attempts (rateLimit); nil: no limit.
	limit    *bucket
	draining bool // the shutdown drain runs: groups are delivered at once

	enqueued, delivered, retries, failed, dropped, abandoned, outages, groups atomic.Uint64
	peak                                                                      atomic.Uint64 // written under mu
}

// QueueOptions configure a Queue.
type QueueOptions struct {
	Size        int // default config.DefaultQueueSize
	Concurrency int // default config.DefaultConcurrency
	Retry       Retry
	Logger      *slog.Logger
	// Clock is what the queue reads the time from and sets its one timer on
	// (events' backoffs, probes, the shutdown grace period). Default: the
	// real clock; tests pass a fake one.
	Clock clock.Clock
	// Outbox, when set, keeps the deliveries on disk: Size does not apply,
	// and what is left at shutdown is delivered after the next start.
	Outbox Outbox
	// Group, when set, batches the deliveries into grouped ones.
	Group *GroupOptions
	// RateLimit, when set, spaces the deliveries (a grouped one counts once).
	RateLimit *RateLimitOptions
}

// NewQueue returns a queue named name that delivers through sender.
func NewQueue(name string, sender Sender, opts QueueOptions) *Queue {
	if opts.Size <= 0 {
		opts.Size = config.DefaultQueueSize
	}
	if opts.Outbox != nil {
		opts.Size = math.MaxInt // on disk already: refusing one would lose it
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = config.DefaultConcurrency
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	q := &Queue{
		name:        name,
		sender:      sender,
		retry:       opts.Retry,
		size:        opts.Size,
		concurrency: opts.Concurrency,
		log:         opts.Logger.With("action", name),
		clock:       opts.Clock,
		outbox:      opts.Outbox,
		pending:     map[string][]*item{},
		backoffs:    map[string]time.Time{},
		rearm:       make(chan struct{}, 1),
		retire:      make(chan struct{}),
		handedOff:   make(chan struct{}),
	}
	q.cond = sync.NewCond(&q.mu)
	if opts.Group != nil {
		g := *opts.Group
		q.grp = newGrouper(&g)
	}
	if opts.RateLimit != nil && opts.RateLimit.PerSecond > 0 {
		q.limit = newBucket(*opts.RateLimit, q.clock.Now())
	}
	return q
}

// Name returns the action's name.
func (q *Queue) Name() string { return q.name }

// Enqueue adds d without ever blocking. When the queue is full, d is refused,
// counted and logged, and Enqueue returns false.
func (q *Queue) Enqueue(d *event.Delivery) bool {
	q.mu.Lock()
	if q.closed && q.successor != nil {
		q.mu.Unlock()
		return q.successor.Enqueue(d) // a handler that still held the old pipeline
	}
	if q.closed {
		q.mu.Unlock()
		q.dropped.Add(1)
		q.log.Error("action stopped: event not delivered", "id", d.Payload.ID, "rule", d.Payload.Rule)
		return false
	}
	if q.total >= q.size {
		q.mu.Unlock()
		q.dropped.Add(1)
		q.log.Error("queue full: event dropped", "id", d.Payload.ID, "rule", d.Payload.Rule, "queueSize", q.size)
		return false
	}
	rearm := q.add(d)
	q.total++
	if n := uint64(q.total); n > q.peak.Load() {
		q.peak.Store(n)
	}
	if q.health.down {
		q.health.waiting = max(q.health.waiting, q.total)
	}
	q.mu.Unlock()
	q.enqueued.Add(1)
	if rearm {
		q.rearmTimer()
	}
	// Broadcast, not Signal: a shutdown drain waits on the same condition, and
	// a Signal that woke it instead of an idle worker would leave d undelivered
	// until some later wake-up.
	q.cond.Broadcast()
	return true
}

// add puts d in its open group, or in its key's pending list, and reports
// whether the timer must be rearmed. q.mu is held.
func (q *Queue) add(d *event.Delivery) (rearm bool) {
	g := q.grp
	switch {
	case g != nil && g.opts != nil:
		now := q.clock.Now()
		rearm = g.join(d, now)
		if q.draining {
			q.flushGroups(now)
		}
		return rearm
	case g != nil:
		// Grouped deliveries taken over may hold earlier events of d's object.
		it := &item{d: d, u: &unit{key: d.Key}}
		g.follow(it, d.Key)
		q.place(it)
		return false
	}
	list, busy := q.pending[d.Key]
	q.pending[d.Key] = append(list, &item{d: d})
	if !busy {
		q.ready = append(q.ready, d.Key)
	}
	return false
}

// Len returns how many deliveries are queued or in flight.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.total
}

// Down reports whether the action's receiver is failing, and since when.
func (q *Queue) Down() (bool, time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.health.down, q.health.since
}

// Halt stops delivering at once: attempts in flight are aborted and nothing
// more is tried; Run, once its context ends, drains nothing. For a replica
// that lost its lease, or whose events are safe on disk.
func (q *Queue) Halt() {
	q.mu.Lock()
	q.stop = true
	cancel := q.cancelWork
	q.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	q.cond.Broadcast()
}

// Stopped is closed once Run has returned: every attempt has ended and every
// Outbox.Done call has returned.
func (q *Queue) Stopped() <-chan struct{} { return q.handedOff }

// Run delivers until ctx is done, then drains for up to grace, and returns after
// every worker and the queue's timer have exited. What is still queued then is
// logged by event id. If HandOff is called first, Run hands its backlog over
// and returns.
func (q *Queue) Run(ctx context.Context, grace time.Duration) error {
	defer close(q.handedOff)
	defer q.passOn() // every attempt has ended; the heir's first has not begun
	q.mu.Lock()
	after := q.after
	q.mu.Unlock()
	if after != nil {
		<-after // the predecessor's backlog goes first
	}
	workCtx, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	q.mu.Lock()
	q.cancelWork = cancelWork
	halted := q.stop
	q.mu.Unlock()
	if halted {
		cancelWork()
	}
	stopTimer := q.startTimer()
	defer stopTimer()
	var wg sync.WaitGroup
	for range q.concurrency {
		wg.Go(func() { q.work(workCtx) })
	}
	select {
	case <-ctx.Done():
	case <-q.retire:
		q.stopWorkers()
		wg.Wait() // attempts in flight finish: their outcome decides what moves
		q.moveBacklog()
		return nil
	}
	q.drain(grace, cancelWork, &wg)
	q.abandon()
	return nil
}

// stopWorkers makes every worker exit once its attempt in flight, if any,
// has ended.
func (q *Queue) stopWorkers() {
	q.mu.Lock()
	q.stop = true
	q.mu.Unlock()
	q.cond.Broadcast()
}
