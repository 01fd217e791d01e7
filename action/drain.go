package action

import (
	"context"
	"sync"
	"time"

	"github.com/dynwatch/dynwatch/event"
)

// drain delivers what it can for up to grace once Run's context has ended,
// then stops the workers, aborts the attempts still running and waits for
// them. It stops sooner when everything is delivered, or when nothing can be
// attempted before the grace period ends.
func (q *Queue) drain(grace time.Duration, cancelWork context.CancelFunc, workers *sync.WaitGroup) {
	q.mu.Lock()
	n, halted := q.total, q.stop
	if !halted {
		// Open groups go now, not when due: SIGTERM delivers them.
		q.draining = true
		q.flushGroups(q.clock.Now())
	}
	q.mu.Unlock()
	q.cond.Broadcast()
	if n > 0 && !halted {
		q.log.Info("draining the action's queue before stopping", "events", n, "for up to", grace.String())
	}
	drained := make(chan struct{})
	deadline := q.clock.Now().Add(grace)
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
	timer := q.clock.NewTimer(grace)
	select {
	case <-drained:
	case <-timer.C():
	}
	timer.Stop()
	q.stopWorkers()
	cancelWork() // aborts attempts still running
	workers.Wait()
	<-drained
}

// idleUntil reports whether nothing can be attempted before deadline: no
// attempt is in flight, and the action is down with its next probe due after
// deadline, or nothing is ready and every event backing off on its own is due
// after it. A shutdown drain then stops at once instead of waiting out its
// grace period for nothing. q.mu is held.
func (q *Queue) idleUntil(deadline time.Time) bool {
	// A pending key is ready, backing off, or in flight (or between two of
	// these, which counts as in flight here).
	if len(q.pending)-len(q.ready)-len(q.backoffs)-q.blockedKeys() > 0 {
		return false
	}
	if q.health.down && q.health.nextProbe.After(deadline) {
		return true
	}
	if len(q.ready) > 0 {
		return false
	}
	for _, at := range q.backoffs {
		if !at.After(deadline) {
			return false
		}
	}
	return true
}

// abandon closes the queue and logs what is left in it: each event by id, and
// the total.
func (q *Queue) abandon() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	left := 0
	for _, d := range q.undelivered() {
		left++
		q.abandoned.Add(1)
		if q.outbox != nil {
			q.log.Info("not delivered before shutdown; kept on disk for the next start", "id", d.Payload.ID, "rule", d.Payload.Rule)
		} else {
			q.log.Error("not delivered before shutdown", "id", d.Payload.ID, "rule", d.Payload.Rule)
		}
	}
	switch {
	case left == 0:
	case q.outbox != nil:
		q.log.Warn("stopped with undelivered events; they are kept on disk and delivered after the next start", "events", left)
	default:
		q.log.Error("stopped with undelivered events; they are lost", "events", left)
	}
}

// undelivered returns every event the queue holds: in its pending lists
// (each grouped delivery's members) and in its open groups. q.mu is held.
func (q *Queue) undelivered() []*event.Delivery {
	var out []*event.Delivery
	for _, list := range q.pending {
		for _, it := range list {
			out = append(out, it.deliveries()...)
		}
	}
	if q.grp != nil {
		for _, gr := range q.grp.groups {
			for _, m := range gr.members {
				out = append(out, m.d)
			}
		}
	}
	return out
}
