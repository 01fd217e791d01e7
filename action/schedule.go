package action

import (
	"context"
	"errors"
	"time"

	"github.com/dynwatch/dynwatch/event"
)

// item is one delivery in the queue with its attempts so far.
type item struct {
	d *event.Delivery
	// attempts counts the attempts that count against retry.max: every one,
	// but for failures of a down receiver that come sooner than the event's own
	// backoff schedule would have retried it (probes are more frequent).
	attempts int
	countAt  time.Time // when a failure of the receiver counts again
	// u is its order across keys and, for a grouped delivery, its members
	// (then d is made at its first attempt); nil in a queue without a
	// grouper.
	u *unit
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
		if len(q.ready) > 0 && (!h.down || (!h.probing && !q.clock.Now().Before(h.nextProbe))) && q.limit.take(q) {
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
		d, err := q.delivery(it)
		if err == nil {
			err = q.sender.Send(ctx, d)
		}
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
	if now := q.clock.Now(); !receiverDown || !now.Before(it.countAt) {
		it.attempts++
		it.countAt = now.Add(q.retry.step(it.attempts) / 2) // the earliest its own jittered retry could come
	}
	switch {
	case err == nil:
		q.delivered.Add(uint64(it.count()))
		if it.u != nil && it.u.members != nil {
			q.groups.Add(1)
		}
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
		if !q.stop && !q.waits(key) {
			q.ready = append(q.ready, key) // to the back: other objects get a turn
		}
	}
	q.total -= head.count()
	if head.u != nil {
		q.finishUnit(head)
	}
	q.mu.Unlock()
	f, _ := q.sender.(Finisher)
	if head.u == nil || head.u.members == nil {
		q.finished(f, head.d)
	} else {
		if f != nil && head.d != nil {
			f.Finished(head.d) // the grouped delivery itself
		}
		for _, d := range head.u.members {
			q.finished(f, d)
		}
	}
	q.cond.Broadcast()
}

// finished tells the sender (if it is a Finisher) and the outbox that d is
// finished with.
func (q *Queue) finished(f Finisher, d *event.Delivery) {
	if f != nil {
		f.Finished(d)
	}
	if q.outbox != nil {
		q.outbox.Done(d)
	}
}

// giveUp logs and counts a delivery that failed for good, then finishes it.
// The log line comes first: whoever sees the count finds it written.
func (q *Queue) giveUp(key string, it *item, reason string, err error) {
	if it.u != nil && it.u.members != nil {
		q.log.Error("grouped delivery failed: "+reason, "ids", it.ids(), "events", it.count(), "attempts", it.attempts, "err", err)
	} else {
		q.log.Error("delivery failed: "+reason, "id", it.d.Payload.ID, "rule", it.d.Payload.Rule, "attempts", it.attempts, "err", err)
	}
	q.failed.Add(uint64(it.count()))
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
	now := q.clock.Now()
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
	q.rearmTimer()     // the queue's timer hands key back when its backoff is over
	q.cond.Broadcast() // a drain waits for what it can still deliver
}
