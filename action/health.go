package action

import "time"

// maxProbeInterval caps the wait between probes of an action that is down: a
// probe is one request, so a receiver that is back is found within this long
// however long it was down. A probe's failure counts against the outage, not
// against its event's retry.max.
const maxProbeInterval = 2 * time.Second

// stillDownEvery is how often an action that stays down says so again: an
// outage gives nothing up, so without it the first WARN would be all the
// logs say of one that lasts a day (or of one event that every receiver
// refuses with a 5xx on an action that has nothing else to deliver, which
// looks the same).
const stillDownEvery = 10 * time.Minute

// health is whether the action's receiver is down, and its probe schedule.
type health struct {
	down      bool
	since     time.Time // when it went down
	failures  int       // consecutive failed probes
	probing   bool      // a probe is in flight
	nextProbe time.Time
	waiting   int       // most deliveries queued while down
	told      time.Time // when the logs last said it is down
}

// failing records a failure of the receiver: the action goes down (logged
// once, with the reason and how much is queued, and again every
// stillDownEvery while it stays down), and a failed probe sets the next one
// on the backoff schedule, or after the receiver's Retry-After.
func (q *Queue) failing(probe bool, f *Failure, err error) { q.receiverFailed(probe, true, f, err) }

// probeEnded ends a probe whose failure counted as its event's own (the
// receiver took others since that event's previous attempt): an action that
// is still down sets its next probe as after any failed probe; one that came
// up meanwhile stays up.
func (q *Queue) probeEnded(f *Failure, err error) { q.receiverFailed(true, false, f, err) }

// receiverFailed is failing, and, unless goDown, probeEnded.
func (q *Queue) receiverFailed(probe, goDown bool, f *Failure, err error) {
	q.mu.Lock()
	h := &q.health
	wentDown := !h.down
	if wentDown && !goDown {
		q.mu.Unlock()
		return
	}
	now := q.clock.Now()
	if wentDown {
		*h = health{down: true, since: now, waiting: q.total, told: now}
	}
	if !wentDown && !probe {
		// An attempt that began before the action went down: it does not count
		// as a probe, but a Retry-After it brought still holds the probe back.
		if ra := q.retry.after(f); ra > 0 {
			h.nextProbe = later(h.nextProbe, now.Add(ra))
			q.rearmTimer()
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
	h.nextProbe, h.probing = now.Add(wait), false
	depth, failures, since := q.total, h.failures, h.since
	remind := now.Sub(h.told) >= stillDownEvery
	if remind {
		h.told = now
	}
	q.mu.Unlock()
	if wentDown {
		q.outages.Add(1)
		q.log.Warn("action failing: delivering one probe at a time on the backoff schedule until it recovers", "queued", depth, "err", err)
	}
	if remind {
		q.log.Warn("action still failing: nothing is given up while it is down; probing until it recovers", "downFor", now.Sub(since).Round(time.Second).String(), "queued", depth, "probes", failures, "err", err)
	}
	q.rearmTimer() // the queue's timer wakes a worker for the next probe
	q.log.Debug("probe failed", "failures", failures, "next in", wait.String(), "err", err)
}

// up records that the receiver answered: if the action was down, it is up
// again and the backlog goes at full concurrency.
func (q *Queue) up() {
	q.mu.Lock()
	h := q.health
	q.health = health{}
	q.mu.Unlock()
	if h.down {
		q.log.Info("action recovered: delivering the backlog", "downFor", q.clock.Since(h.since).Round(time.Millisecond).String(), "waited", h.waiting, "probes", h.failures+1)
		q.cond.Broadcast()
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
