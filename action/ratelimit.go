package action

import (
	"math"
	"time"
)

// RateLimitOptions space an action's deliveries with a token bucket: Burst
// attempts may go at once, then PerSecond a second. Nothing is dropped: what
// waits stays queued (and counts in the depth).
type RateLimitOptions struct {
	PerSecond float64
	Burst     int // default 1
}

// bucket is the token bucket, on the queue's clock; q.mu guards it. The
// queue's one timer wakes the workers when the next token is due.
type bucket struct {
	rate   float64 // tokens a second
	burst  float64
	tokens float64
	last   time.Time
	wakeAt time.Time // when a worker waits for the next token; zero: none does
}

func newBucket(o RateLimitOptions, now time.Time) *bucket {
	burst := float64(max(o.Burst, 1))
	return &bucket{rate: o.PerSecond, burst: burst, tokens: burst, last: now}
}

// take takes a token for an attempt, if one is there; if not, it sets the
// time the next one is due for the queue's timer. A nil bucket always has
// one. q.mu is held.
func (b *bucket) take(q *Queue) bool {
	if b == nil {
		return true
	}
	now := q.clock.Now()
	if el := now.Sub(b.last); el > 0 {
		b.tokens = min(b.burst, b.tokens+el.Seconds()*b.rate)
	}
	b.last = now // a clock that went back refills nothing until it passes again
	if b.tokens >= 1 {
		b.tokens--
		return true
	}
	if b.wakeAt.IsZero() || !b.wakeAt.After(now) {
		b.wakeAt = now.Add(time.Duration(math.Ceil((1 - b.tokens) / b.rate * float64(time.Second))))
		q.rearmTimer()
	}
	return false
}

// nextWake is when a worker waiting for a token is to be woken, if later
// than now. q.mu is held.
func (b *bucket) nextWake(now time.Time) (time.Time, bool) {
	if b == nil || !b.wakeAt.After(now) {
		return time.Time{}, false
	}
	return b.wakeAt, true
}
