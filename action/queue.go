// Package action delivers payloads to actions (log, webhook, exec) through one
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

// Failure is a failed attempt with what the receiver said about retrying.
type Failure struct {
	Err error
	// Permanent failures are not retried (a 4xx other than 408 and 429).
	Permanent bool
	// RetryAfter is the receiver's Retry-After, if it gave one.
	RetryAfter time.Duration
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

// backoff returns the wait before retry n (1-based): the exponential step with
// "equal jitter" (half fixed, half random) so that retries of many events spread out.
func (r Retry) backoff(n int) time.Duration {
	d := r.Initial
	for i := 1; i < n && d < r.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, r.MaxBackoff)
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2+1)
}

// Stats counts what a queue did. All counts are since the queue was made.
type Stats struct {
	Enqueued  uint64 // accepted into the queue
	Delivered uint64 // delivered successfully
	Retries   uint64 // attempts after the first
	Failed    uint64 // gave up: retries exhausted or a permanent failure
	Dropped   uint64 // refused because the queue was full
	Abandoned uint64 // still queued when the shutdown grace period ended
}

// Queue is one action's queue. Deliveries with the same Key are delivered one at
// a time in the order they were enqueued; different keys proceed in parallel, up
// to Concurrency at once.
type Queue struct {
	name        string
	sender      Sender
	retry       Retry
	size        int
	concurrency int
	log         *slog.Logger
	done        func(*event.Delivery)

	mu      sync.Mutex
	cond    *sync.Cond
	pending map[string][]*event.Delivery // by key; the head is in flight or next
	ready   []string                     // keys with work and no worker on them
	total   int                          // deliveries queued, in flight included
	stop    bool                         // workers exit when set
	closed  bool                         // Run has returned: nothing more is delivered

	enqueued, delivered, retries, failed, dropped, abandoned atomic.Uint64
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
		pending:     map[string][]*event.Delivery{},
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
	q.pending[d.Key] = append(list, d)
	if !busy {
		q.ready = append(q.ready, d.Key)
	}
	q.total++
	q.mu.Unlock()
	q.enqueued.Add(1)
	q.cond.Signal()
	return true
}

// Len returns how many deliveries are queued or in flight.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.total
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
	}
}

// Run delivers until ctx is done, then drains for up to grace, and returns after
// every worker has exited. What is still queued then is logged by event id.
func (q *Queue) Run(ctx context.Context, grace time.Duration) error {
	workCtx, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	var wg sync.WaitGroup
	for range q.concurrency {
		wg.Go(func() { q.work(workCtx) })
	}
	<-ctx.Done()

	drained := make(chan struct{})
	go func() {
		q.mu.Lock()
		for q.total > 0 && !q.stop {
			q.cond.Wait()
		}
		q.mu.Unlock()
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
	cancelWork() // aborts attempts and backoff waits still running
	wg.Wait()
	<-drained

	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	for _, list := range q.pending {
		for _, d := range list {
			q.abandoned.Add(1)
			q.log.Error("not delivered before shutdown", "id", d.Payload.ID, "rule", d.Payload.Rule)
		}
	}
	return nil
}

func (q *Queue) work(ctx context.Context) {
	for {
		q.mu.Lock()
		for len(q.ready) == 0 && !q.stop {
			q.cond.Wait()
		}
		if q.stop {
			q.mu.Unlock()
			return
		}
		key := q.ready[0]
		q.ready = q.ready[1:]
		d := q.pending[key][0]
		q.mu.Unlock()

		finished := q.deliver(ctx, d)
		if finished && q.done != nil {
			q.done(d)
		}

		q.mu.Lock()
		if finished {
			list := q.pending[key][1:]
			if len(list) == 0 {
				delete(q.pending, key)
			} else {
				q.pending[key] = list
			}
			q.total--
		}
		if _, more := q.pending[key]; more && !q.stop {
			q.ready = append(q.ready, key) // to the back: other objects get a turn
		}
		q.mu.Unlock()
		q.cond.Broadcast()
	}
}

// deliver tries d until it succeeds, fails for good, or ctx ends. It returns
// false only when ctx ended first: d stays queued and counts as abandoned.
func (q *Queue) deliver(ctx context.Context, d *event.Delivery) bool {
	var err error
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			q.retries.Add(1)
		}
		err = q.sender.Send(ctx, d)
		if err == nil {
			q.delivered.Add(1)
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		var f *Failure
		permanent := errors.As(err, &f) && f.Permanent
		if permanent || attempt >= q.retry.Max {
			q.failed.Add(1)
			reason := "retries exhausted"
			if permanent {
				reason = "permanent failure, not retried"
			}
			q.log.Error("delivery failed: "+reason, "id", d.Payload.ID, "rule", d.Payload.Rule, "attempts", attempt+1, "err", err)
			return true
		}
		wait := q.retry.backoff(attempt + 1)
		if f != nil && f.RetryAfter > 0 {
			wait = f.RetryAfter // the receiver knows best when it can take more
		}
		q.log.Debug("delivery failed; retrying", "id", d.Payload.ID, "attempt", attempt+1, "wait", wait, "err", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
	}
}
