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
	// tries counts every attempt; counted those that count against
	// retry.max: all but the failures of a receiver that is down (see
	// countsAgainstMax).
	tries, counted int
	// accepted is the queue's accepted count when this event's last attempt
	// ended: a later failure counts only if deliveries were accepted since.
	accepted uint64
	// refused is set at this event's first refused route, refusedAt to the
	// queue's accepted count then: its refusals count once any delivery
	// got through since (countsAgainstMax).
	refused   bool
	refusedAt uint64
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
		if it.tries > 0 {
			q.retries.Add(1)
		}
		it.tries++
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
//
// retry.max bounds the failures of an event the receiver refuses while it
// takes others; an outage, however long, gives nothing up. A failure that
// says the receiver is down (no Permanent or OneEvent) is that event's own
// only if the action delivered something else since the event's previous
// attempt (countsAgainstMax): then it counts, and the event backs off on its own
// while the others go on. Else the receiver is down: the failure counts
// against the outage, the action goes down and its events take turns as
// the probe. So a receiver that answers 5xx to one event for ever while it
// takes the others gives that event up on its own schedule, and one that is
// down for an hour keeps every event.
func (q *Queue) settle(key string, it *item, probe bool, err error) {
	o, f := outcomeOf(err)
	counted := q.countsAgainstMax(it, o)
	switch {
	case o == delivered:
		q.delivered.Add(uint64(it.count()))
		if it.u != nil && it.u.members != nil {
			q.groups.Add(1)
		}
		q.up()
		q.finish(key)
	case o == permanent:
		q.up() // the receiver answered
		q.giveUp(key, it, "permanent failure, not retried", err)
	case !counted && o == refused:
		// Its route refused while nothing got through since: the receiver
		// answers (the action is not down) and the event waits on its own
		// schedule, as long as every route is refused, counting nothing.
		q.up()
		q.retryAlone(key, it, f, err)
	case !counted:
		q.failing(probe, f, err)
		q.requeue(key)
	case o == receiverDown:
		// The receiver took others since: a failure of this event alone,
		// which puts no action down. A probe's ends here.
		if probe {
			q.probeEnded(f, err)
		}
		q.retryOrGiveUp(key, it, f, err)
	default: // oneEvent, or a refused route counted
		q.up()
		q.retryOrGiveUp(key, it, f, err)
	}
}

// outcome is what an attempt's error says of the receiver and the event.
type outcome int

const (
	delivered    outcome = iota
	permanent            // refused for good (Failure.Permanent)
	oneEvent             // this event's failure alone (Failure.OneEvent)
	refused              // this event's route refused (Failure.Refused)
	receiverDown         // any other failure: the receiver may be down
	throttled            // the receiver asks for a slower rate (Failure.Throttled)
)

// outcomeOf classifies an attempt's error, and returns its Failure if it
// has one.
func outcomeOf(err error) (outcome, *Failure) {
	var f *Failure
	errors.As(err, &f)
	switch {
	case err == nil:
		return delivered, nil
	case f == nil:
		return receiverDown, nil
	case f.Permanent:
		return permanent, f
	case f.Refused:
		return refused, f
	case f.OneEvent:
		return oneEvent, f
	case f.Throttled:
		return throttled, f
	}
	return receiverDown, f
}

// countsAgainstMax counts one attempt of it and reports whether it counts
// against retry.max: a success, a permanent failure or a failure of this
// event alone always; a failure that says the receiver is down only if the
// action delivered another event since this one's previous attempt ended
// (never at its first: a failure then is the receiver's until shown
// otherwise); a throttled attempt never: a 429 is about the rate, not the
// event, and a receiver that takes one request in ten must not have the
// other nine given up; a refused route once the action delivered another
// event since this event's first refusal (the receiver takes others: the
// route is this event's; while it takes none, every route may be refused,
// and the backlog waits as through an outage).
func (q *Queue) countsAgainstMax(it *item, o outcome) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	othersSince := it.tries > 1 && q.accepted > it.accepted
	if o == refused && !it.refused {
		it.refused, it.refusedAt = true, q.accepted
	}
	if o == delivered {
		q.accepted++
	}
	it.accepted = q.accepted
	switch {
	case o == throttled, o == receiverDown && !othersSince:
		return false
	case o == refused && q.accepted == it.refusedAt:
		return false
	}
	it.counted++
	return true
}

// retryOrGiveUp backs off an event whose failure counted on its own
// schedule, or gives it up once it has failed more than retry.max times.
func (q *Queue) retryOrGiveUp(key string, it *item, f *Failure, err error) {
	if it.counted > q.retry.Max {
		q.giveUp(key, it, "retries exhausted", err)
		return
	}
	q.retryAlone(key, it, f, err)
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
		q.log.Error("grouped delivery failed: "+reason, "ids", it.ids(), "events", it.count(), "attempts", it.tries, "counted", it.counted, "err", err)
	} else {
		q.log.Error("delivery failed: "+reason, "id", it.d.Payload.ID, "rule", it.d.Payload.Rule, "attempts", it.tries, "counted", it.counted, "err", err)
	}
	q.failed.Add(uint64(it.count()))
	q.finish(key)
}

// requeue puts key back among the ready keys, at the back: while the
// action is down its events take turns as the probe, so that an event the
// receiver refuses for ever is not the only one tried, and once another
// gets through, that event's failures count (countsAgainstMax).
func (q *Queue) requeue(key string) {
	q.mu.Lock()
	if !q.stop {
		q.ready = append(q.ready, key)
	}
	q.mu.Unlock()
	q.cond.Broadcast()
}

// retryAlone backs off one event's key on its own schedule; no worker waits
// for it.
func (q *Queue) retryAlone(key string, it *item, f *Failure, err error) {
	// Read before the backoff is set: from then on the timer may hand the key
	// to another worker, whose attempt changes it.
	attempt, id := it.counted, it.d.Payload.ID
	wait := q.retry.backoff(attempt)
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
		q.log.Warn("delivery failed; retrying this event on its own (more such failures are logged at most once a minute)", "id", id, "attempt", attempt, "wait", wait.String(), "err", err)
	} else {
		q.log.Debug("delivery failed; retrying", "id", id, "attempt", attempt, "wait", wait.String(), "err", err)
	}
	q.rearmTimer()     // the queue's timer hands key back when its backoff is over
	q.cond.Broadcast() // a drain waits for what it can still deliver
}
