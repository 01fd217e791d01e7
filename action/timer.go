package action

import (
	"slices"
	"time"

	"k8s.io/utils/clock"
)

// The queue has one timer, owned by Run: it hands keys whose own backoff is
// over back to the workers, wakes them when the next probe of an action
// that is down is due or the rate limit has a token again, and forms the
// deliveries of groups that are due. Nothing else in the queue waits on the
// clock but the shutdown drain's grace period, which stops its own timer.

// startTimer starts the queue's timer and returns what stops it and waits
// until it has.
func (q *Queue) startTimer() (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		q.runTimer(quit)
	}()
	return func() { close(quit); <-done }
}

// rearmTimer tells the timer that a wake-up time changed: an event began to
// back off on its own, or the next probe was set.
func (q *Queue) rearmTimer() {
	select {
	case q.rearm <- struct{}{}:
	default: // a rearm is pending already
	}
}

// runTimer sets its timer at the earliest wake-up time, hands back what is due
// when it fires or is rearmed, and returns once quit is closed.
func (q *Queue) runTimer(quit <-chan struct{}) {
	for {
		q.mu.Lock()
		now := q.clock.Now()
		q.readyDue(now)
		due, ok := q.nextWake(now)
		q.mu.Unlock()
		q.cond.Broadcast()
		var timer clock.Timer
		var fired <-chan time.Time
		if ok {
			timer = q.clock.NewTimer(due.Sub(now))
			fired = timer.C()
			if !q.clock.Now().Before(due) {
				// The clock reached due while the timer was being set: it
				// would fire only at due plus the wait (never, on a clock
				// that is moved only when the queue is idle). Look again.
				timer.Stop()
				continue
			}
		}
		select {
		case <-fired:
		case <-q.rearm:
		case <-quit:
		}
		if timer != nil {
			timer.Stop()
		}
		select {
		case <-quit:
			return
		default:
		}
	}
}

// readyDue hands back to the workers every key whose own backoff is over at
// now, the earliest due first. q.mu is held.
func (q *Queue) readyDue(now time.Time) {
	var due []string
	for key, at := range q.backoffs {
		if !at.After(now) {
			due = append(due, key)
		}
	}
	slices.SortFunc(due, func(a, b string) int { return q.backoffs[a].Compare(q.backoffs[b]) })
	for _, key := range due {
		delete(q.backoffs, key)
		if !q.stop {
			q.ready = append(q.ready, key)
		}
	}
	q.fireDue(now) // groups due now become deliveries
}

// nextWake returns the earliest wake-up time after now: a key's backoff, the
// next probe of an action that is down, the next group due, or the next
// token of a rate limit a worker waits for. q.mu is held.
func (q *Queue) nextWake(now time.Time) (time.Time, bool) {
	var next time.Time
	for _, at := range q.backoffs {
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	if h := q.health; h.down && h.nextProbe.After(now) && (next.IsZero() || h.nextProbe.Before(next)) {
		next = h.nextProbe
	}
	for _, wake := range [...]func(time.Time) (time.Time, bool){q.grp.nextDue, q.limit.nextWake} {
		if at, ok := wake(now); ok && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	return next, !next.IsZero()
}
