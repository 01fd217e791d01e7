package action

import "time"

// after returns the wait a receiver's Retry-After asks for, at most
// MaxBackoff: one 503 with "Retry-After: 3600" must not hold an action for an
// hour when its retry policy says it waits 5m at most.
func (r Retry) after(f *Failure) time.Duration {
	if f == nil {
		return 0
	}
	return min(f.RetryAfter, r.MaxBackoff)
}

// idleUntil reports whether nothing can be attempted before deadline: no
// attempt is in flight, and the action is down with its next probe due after
// deadline, or nothing is ready and every event backing off on its own is due
// after it. A shutdown drain then stops at once instead of waiting out its
// grace period for nothing. q.mu is held.
func (q *Queue) idleUntil(deadline time.Time) bool {
	// A pending key is ready, backing off, or in flight (or between two of
	// these, which counts as in flight here).
	if len(q.pending)-len(q.ready)-len(q.backoffs) > 0 {
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
