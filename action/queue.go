// Package action delivers payloads to actions (log, webhook, exec, kafka, nats) through one
// bounded queue per action that keeps each object's events in order, delivers
// different objects in parallel, and retries failures. kinds.go is the table
// of action kinds.
//
// It imports config, payload and event; never rules, plan, state or the
// daemon (a durable queue is the watcher's, through QueueOptions.Done).
package action

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dynwatch/dynwatch/event"
)

// Sender makes one delivery attempt. It returns nil on success, a *Failure that
// says whether and when to retry, or any other error (retried).
type Sender interface {
	Send(ctx context.Context, d *event.Delivery) error
}

// Finisher is a Sender that keeps something per delivery across attempts
// (kafka: its record not acknowledged yet). The queue calls Finished once it
// is done with d, delivered or given up, so that nothing is kept for ever.
type Finisher interface {
	Finished(d *event.Delivery)
}

// Failure is a failed attempt with what the receiver said about retrying.
type Failure struct {
	Err error
	// Permanent failures are not retried (a 4xx other than 408 and 429).
	Permanent bool
	// RetryAfter is the receiver's Retry-After, if it gave one.
	RetryAfter time.Duration
	// OneEvent marks a failure of this event alone while the receiver works (a
	// command that ran and failed on this payload): the event backs off on its
	// own and the others go on. Any other failure means the receiver is down:
	// the whole action backs off, one probe at a time.
	OneEvent bool
}

func (f *Failure) Error() string { return f.Err.Error() }
func (f *Failure) Unwrap() error { return f.Err }

// Retry is an exponential backoff policy with jitter.
type Retry struct {
	// Max is how many retries follow the first attempt.
	Max int
	// Initial is the first wait; each later wait doubles, up to MaxBackoff.
	Initial    time.Duration
	MaxBackoff time.Duration
}

// step returns the exponential step before retry n (1-based), without jitter.
func (r Retry) step(n int) time.Duration {
	d := r.Initial
	for i := 1; i < n && d < r.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, r.MaxBackoff)
}

// backoff returns the wait before retry n (1-based): the exponential step with
// "equal jitter" (half fixed, half random) so that retries of many events spread out.
func (r Retry) backoff(n int) time.Duration {
	d := r.step(n)
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2+1)
}

// maxProbeInterval caps the wait between probes of an action that is down: a
// probe is one request, so a receiver that is back is found within this long
// however long it was down. Events' retries still count on their own schedule.
const maxProbeInterval = 2 * time.Second

// Stats counts what a queue did. All counts are since the queue was made.
type Stats struct {
	Enqueued  uint64 // accepted into the queue
	Delivered uint64 // delivered successfully
	Retries   uint64 // attempts after the first
	Failed    uint64 // gave up: retries exhausted or a permanent failure
	Dropped   uint64 // refused because the queue was full
	Abandoned uint64 // still queued when the shutdown grace period ended
	Outages   uint64 // times the action went down (its receiver failing)
	Peak      uint64 // the most deliveries queued at once, in flight included
}

// item is one delivery in the queue with its attempts so far.
type item struct {
	d *event.Delivery
	// attempts counts the attempts that count against retry.max: every one,
	// but for failures of a down receiver that come sooner than the event's own
	// backoff schedule would have retried it (probes are more frequent).
	attempts int
	countAt  time.Time // when a failure of the receiver counts again
}

// Queue is one action's queue. Deliveries with the same Key are delivered one at
// a time in the order they were enqueued; different keys proceed in parallel, up
// to Concurrency at once.
//
// Failures back off per action, not per event: when the receiver fails, the
// action is down, one probe at a time retries on the backoff schedule while
// the other deliveries wait without holding a worker, and the first success
// lets the whole backlog go at full concurrency. A failure of one event alone
// (Failure.OneEvent) backs off that event's key only.
type Queue struct {
	name        string
	sender      Sender
	retry       Retry
	size        int
	concurrency int
	log         *slog.Logger
	done        func(*event.Delivery)
	durable     bool

	mu      sync.Mutex
	cond    *sync.Cond
	pending map[string][]*item // by key; the head is in flight, waiting or next
	ready   []string           // keys with work and no worker on them
	total   int                // deliveries queued, in flight included
	stop    bool               // workers exit when set
	closed  bool               // Run has returned: nothing more is delivered
	health  health
	warned  time.Time // last per-event failure warning, to log at most once a minute
	// backoffs are the keys waiting on their own retry (retryAlone), and when.
	backoffs map[string]time.Time
	// successor takes this queue's backlog when the action's settings change
	// (HandOff); after that, Enqueue forwards to it.
	successor *Queue
	retire    chan struct{} // closed by HandOff
	// cancelWork aborts attempts in flight (set while Run runs); Halt uses it.
	cancelWork context.CancelFunc
	// after, when set, is the predecessor's handedOff: Run delivers nothing
	// before the backlog it takes over is in place, so that order holds.
	after     <-chan struct{}
	handedOff chan struct{} // closed when Run has returned

	enqueued, delivered, retries, failed, dropped, abandoned, outages atomic.Uint64
	peak                                                              atomic.Uint64 // written under mu
}

// health is whether the action's receiver is down, and its probe schedule.
type health struct {
	down      bool
	since     time.Time // when it went down
	failures  int       // consecutive failed probes
	probing   bool      // a probe is in flight
	nextProbe time.Time
	waiting   int // most deliveries queued while down
}

// QueueOptions configure a Queue.
type QueueOptions struct {
	Size        int // default 10000
	Concurrency int // default 4
	Retry       Retry
	Logger      *slog.Logger
	// Done, when set, is called once a delivery is finished with: delivered, or
	// given up (and logged). A durable queue removes it from disk there.
	Done func(*event.Delivery)
	// Durable says that what is queued is also on disk: what is left at
	// shutdown is delivered after the next start, not lost.
	Durable bool
}

// NewQueue returns a queue named name that delivers through sender.
func NewQueue(name string, sender Sender, opts QueueOptions) *Queue {
	if opts.Size <= 0 {
		opts.Size = 10000
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 4
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	q := &Queue{
		name:        name,
		sender:      sender,
		retry:       opts.Retry,
		size:        opts.Size,
		concurrency: opts.Concurrency,
		log:         opts.Logger.With("action", name),
		done:        opts.Done,
		durable:     opts.Durable,
		pending:     map[string][]*item{},
		backoffs:    map[string]time.Time{},
		retire:      make(chan struct{}),
		handedOff:   make(chan struct{}),
	}
	q.cond = sync.NewCond(&q.mu)
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
	list, busy := q.pending[d.Key]
	q.pending[d.Key] = append(list, &item{d: d})
	if !busy {
		q.ready = append(q.ready, d.Key)
	}
	q.total++
	if n := uint64(q.total); n > q.peak.Load() {
		q.peak.Store(n)
	}
	if q.health.down {
		q.health.waiting = max(q.health.waiting, q.total)
	}
	q.mu.Unlock()
	q.enqueued.Add(1)
	// Broadcast, not Signal: a shutdown drain waits on the same condition, and
	// a Signal that woke it instead of an idle worker would leave d undelivered
	// until some later wake-up.
	q.cond.Broadcast()
	return true
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

// Stats returns the queue's counters.
func (q *Queue) Stats() Stats {
	return Stats{
		Enqueued:  q.enqueued.Load(),
		Delivered: q.delivered.Load(),
		Retries:   q.retries.Load(),
		Failed:    q.failed.Load(),
		Dropped:   q.dropped.Load(),
		Abandoned: q.abandoned.Load(),
		Outages:   q.outages.Load(),
		Peak:      q.peak.Load(),
	}
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

// HandOff makes next the action's queue from now on: this queue's Run stops
// taking new attempts, lets those in flight finish, moves its backlog, in
// order, ahead of what next holds, and returns; later Enqueue calls go to next.
// next must not run before that: HandOff makes next's Run wait for it. A
// reload that changes an action's settings loses none of its backlog.
func (q *Queue) HandOff(next *Queue) {
	q.mu.Lock()
	q.successor = next
	q.mu.Unlock()
	next.mu.Lock()
	next.after = q.handedOff
	next.mu.Unlock()
	close(q.retire)
}

// Follow makes next's Run wait until this queue's has returned, without
// moving anything to next: for a queue whose backlog next gets from elsewhere
// (a durable queue's, read again from disk). This queue must be stopping.
func (q *Queue) Follow(next *Queue) {
	next.mu.Lock()
	next.after = q.handedOff
	next.mu.Unlock()
}

// Stopped is closed once Run has returned: every attempt has ended and every
// Done callback has run.
func (q *Queue) Stopped() <-chan struct{} { return q.handedOff }

// Run delivers until ctx is done, then drains for up to grace, and returns after
// every worker has exited. What is still queued then is logged by event id. If
// HandOff is called first, Run hands its backlog over and returns.
func (q *Queue) Run(ctx context.Context, grace time.Duration) error {
	defer close(q.handedOff)
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
	var wg sync.WaitGroup
	for range q.concurrency {
		wg.Go(func() { q.work(workCtx) })
	}
	select {
	case <-ctx.Done():
	case <-q.retire:
		q.mu.Lock()
		q.stop = true
		q.mu.Unlock()
		q.cond.Broadcast()
		wg.Wait() // attempts in flight finish: their outcome decides what moves
		q.moveBacklog()
		return nil
	}
	q.mu.Lock()
	n, halted := q.total, q.stop
	q.mu.Unlock()
	if n > 0 && !halted {
		q.log.Info("draining the action's queue before stopping", "events", n, "for up to", grace.String())
	}
	drained := make(chan struct{})
	deadline := time.Now().Add(grace)
	go func() {
		q.mu.Lock()
		for q.total > 0 && !q.stop && !q.idleUntil(deadline) {
			q.cond.Wait()
		}
		idle := q.total > 0 && !q.stop
		q.mu.Unlock()
		if idle {
			q.log.Info("nothing can be attempted before the shutdown grace period ends (the action is down or its events back off past it): stopping now")
		}
		close(drained)
	}()
	timer := time.NewTimer(grace)
	select {
	case <-drained:
	case <-timer.C:
	}
	timer.Stop()
	q.mu.Lock()
	q.stop = true
	q.mu.Unlock()
	q.cond.Broadcast()
	cancelWork() // aborts attempts still running
	wg.Wait()
	<-drained
	q.abandon()
	return nil
}

// moveBacklog hands every queued delivery to the successor, each object's in
// order and ahead of any the successor already holds for it, and closes q.
func (q *Queue) moveBacklog() {
	q.mu.Lock()
	pending := q.pending
	q.pending, q.ready, q.total, q.closed = map[string][]*item{}, nil, 0, true
	next := q.successor
	q.mu.Unlock()
	moved := 0
	next.mu.Lock()
	for key, list := range pending {
		if _, busy := next.pending[key]; !busy {
			next.ready = append(next.ready, key)
		}
		next.pending[key] = append(list, next.pending[key]...)
		next.total += len(list)
		moved += len(list)
	}
	next.mu.Unlock()
	next.cond.Broadcast()
	if moved > 0 {
		q.log.Info("action changed: its backlog moves to the new settings, in order", "events", moved)
	}
}

// abandon closes the queue and logs what is left in it: each event by id, and
// the total.
func (q *Queue) abandon() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	left := 0
	for _, list := range q.pending {
		for _, it := range list {
			left++
			q.abandoned.Add(1)
			if q.durable {
				q.log.Info("not delivered before shutdown; kept on disk for the next start", "id", it.d.Payload.ID, "rule", it.d.Payload.Rule)
			} else {
				q.log.Error("not delivered before shutdown", "id", it.d.Payload.ID, "rule", it.d.Payload.Rule)
			}
		}
	}
	switch {
	case left == 0:
	case q.durable:
		q.log.Warn("stopped with undelivered events; they are kept on disk and delivered after the next start", "events", left)
	default:
		q.log.Error("stopped with undelivered events; they are lost", "events", left)
	}
}

// next waits for a delivery this worker may attempt: a ready key while the
// action is up, or, while it is down, the one probe when its time has come.
// It returns false when the worker is to stop.
func (q *Queue) next() (key string, it *item, probe bool, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for {
		if q.stop {
			return "", nil, false, false
		}
		h := &q.health
		if len(q.ready) > 0 && (!h.down || (!h.probing && !time.Now().Before(h.nextProbe))) {
			break
		}
		q.cond.Wait()
	}
	key = q.ready[0]
	q.ready = q.ready[1:]
	if q.health.down {
		q.health.probing, probe = true, true
	}
	return key, q.pending[key][0], probe, true
}

func (q *Queue) work(ctx context.Context) {
	for {
		key, it, probe, ok := q.next()
		if !ok {
			return
		}
		if it.attempts > 0 {
			q.retries.Add(1)
		}
		err := q.sender.Send(ctx, it.d)
		if err != nil && ctx.Err() != nil {
			q.release(key, probe) // stopping: it stays queued and counts as abandoned
			continue
		}
		q.settle(key, it, probe, err)
	}
}

// release puts an attempted key back without a verdict.
func (q *Queue) release(key string, probe bool) {
	q.mu.Lock()
	if probe {
		q.health.probing = false
	}
	q.mu.Unlock()
	q.cond.Broadcast()
}

// settle records the outcome of one attempt at the head of key's list.
func (q *Queue) settle(key string, it *item, probe bool, err error) {
	var f *Failure
	errors.As(err, &f)
	receiverDown := err != nil && (f == nil || !f.Permanent && !f.OneEvent)
	if now := time.Now(); !receiverDown || !now.Before(it.countAt) {
		it.attempts++
		it.countAt = now.Add(q.retry.step(it.attempts) / 2) // the earliest its own jittered retry could come
	}
	switch {
	case err == nil:
		q.delivered.Add(1)
		q.up()
		q.finish(key)
	case f != nil && f.Permanent:
		q.up() // the receiver answered
		q.giveUp(key, it, "permanent failure, not retried", err)
	case it.attempts > q.retry.Max:
		if f == nil || !f.OneEvent {
			q.failing(probe, f, err)
		} else {
			q.up()
		}
		q.giveUp(key, it, "retries exhausted", err)
	case f != nil && f.OneEvent:
		q.up()
		q.retryAlone(key, it, f, err)
	default:
		q.failing(probe, f, err)
		q.requeueFirst(key)
	}
}

// finish removes the head of key's list and hands the key on if it has more.
func (q *Queue) finish(key string) {
	q.mu.Lock()
	head := q.pending[key][0]
	list := q.pending[key][1:]
	if len(list) == 0 {
		delete(q.pending, key)
	} else {
		q.pending[key] = list
		if !q.stop {
			q.ready = append(q.ready, key) // to the back: other objects get a turn
		}
	}
	q.total--
	q.mu.Unlock()
	if f, ok := q.sender.(Finisher); ok {
		f.Finished(head.d)
	}
	if q.done != nil {
		q.done(head.d)
	}
	q.cond.Broadcast()
}

func (q *Queue) giveUp(key string, it *item, reason string, err error) {
	q.failed.Add(1)
	q.log.Error("delivery failed: "+reason, "id", it.d.Payload.ID, "rule", it.d.Payload.Rule, "attempts", it.attempts, "err", err)
	q.finish(key)
}

// requeueFirst puts key at the front of the ready keys: while the action is
// down, the event that failed is the next probe.
func (q *Queue) requeueFirst(key string) {
	q.mu.Lock()
	if !q.stop {
		q.ready = append([]string{key}, q.ready...)
	}
	q.mu.Unlock()
	q.cond.Broadcast()
}

// retryAlone backs off one event's key on its own schedule; no worker waits
// for it.
func (q *Queue) retryAlone(key string, it *item, f *Failure, err error) {
	wait := q.retry.backoff(it.attempts)
	if ra := q.retry.after(f); ra > 0 {
		wait = ra
	}
	q.mu.Lock()
	now := time.Now()
	q.backoffs[key] = now.Add(wait)
	warn := now.Sub(q.warned) >= time.Minute
	if warn {
		q.warned = now
	}
	q.mu.Unlock()
	if warn {
		q.log.Warn("delivery failed; retrying this event on its own (more such failures are logged at most once a minute)", "id", it.d.Payload.ID, "attempt", it.attempts, "wait", wait.String(), "err", err)
	} else {
		q.log.Debug("delivery failed; retrying", "id", it.d.Payload.ID, "attempt", it.attempts, "wait", wait.String(), "err", err)
	}
	q.cond.Broadcast() // a drain waits for what it can still deliver
	time.AfterFunc(wait, func() {
		q.mu.Lock()
		delete(q.backoffs, key)
		if !q.stop {
			q.ready = append(q.ready, key)
		}
		q.mu.Unlock()
		q.cond.Broadcast()
	})
}

// failing records a failure of the receiver: the action goes down (logged
// once, with the reason and how much is queued), and a failed probe sets the
// next one on the backoff schedule, or after the receiver's Retry-After.
func (q *Queue) failing(probe bool, f *Failure, err error) {
	q.mu.Lock()
	h := &q.health
	wentDown := !h.down
	if wentDown {
		*h = health{down: true, since: time.Now(), waiting: q.total}
	}
	if !wentDown && !probe {
		// An attempt that began before the action went down: it does not count
		// as a probe, but a Retry-After it brought still holds the probe back.
		if ra := q.retry.after(f); ra > 0 {
			h.nextProbe = later(h.nextProbe, time.Now().Add(ra))
			time.AfterFunc(time.Until(h.nextProbe), q.cond.Broadcast)
		}
		q.mu.Unlock()
		q.cond.Broadcast()
		return
	}
	h.failures++
	wait := min(q.retry.backoff(h.failures), maxProbeInterval)
	if ra := q.retry.after(f); ra > 0 {
		wait = ra // the receiver knows best when it can take more, within maxBackoff
	}
	h.nextProbe, h.probing = time.Now().Add(wait), false
	depth, failures := q.total, h.failures
	q.mu.Unlock()
	if wentDown {
		q.outages.Add(1)
		q.log.Warn("action failing: delivering one probe at a time on the backoff schedule until it recovers", "queued", depth, "err", err)
	}
	q.log.Debug("probe failed", "failures", failures, "next in", wait.String(), "err", err)
	time.AfterFunc(wait, q.cond.Broadcast)
}

// up records that the receiver answered: if the action was down, it is up
// again and the backlog goes at full concurrency.
func (q *Queue) up() {
	q.mu.Lock()
	h := q.health
	q.health = health{}
	q.mu.Unlock()
	if h.down {
		q.log.Info("action recovered: delivering the backlog", "downFor", time.Since(h.since).Round(time.Millisecond).String(), "waited", h.waiting, "probes", h.failures+1)
		q.cond.Broadcast()
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
