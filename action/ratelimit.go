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
// one, and so has any during a shutdown drain: SIGTERM delivers what it can
// (open groups above all) before the grace period ends, limit or not.
// q.mu is held.
func (b *bucket) take(q *Queue) bool {
	if b == nil || q.draining {
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
		b.wakeAt = now.Add(tokenWait(1-b.tokens, b.rate))
		q.rearmTimer()
	}
	return false
}

// maxTokenWait caps the wait for a token: a rate so small that the wait
// overflows a time.Duration would put the wake-up in the past. A worker
// woken early takes no token and waits again.
const maxTokenWait = 365 * 24 * time.Hour

// tokenWait is how long need tokens take at rate a second, at most
// maxTokenWait.
func tokenWait(need, rate float64) time.Duration {
	ns := math.Ceil(need / rate * float64(time.Second))
	if !(ns < float64(maxTokenWait)) { // NaN or too large
		return maxTokenWait
	}
	return time.Duration(ns)
}

// nextWake is when a worker waiting for a token is to be woken, if later
// than now. q.mu is held.
func (b *bucket) nextWake(now time.Time) (time.Time, bool) {
	if b == nil || !b.wakeAt.After(now) {
		return time.Time{}, false
	}
	return b.wakeAt, true
}

// snapshot is a copy of the bucket, or nil. q.mu is held.
func (b *bucket) snapshot() *bucket {
	if b == nil {
		return nil
	}
	c := *b
	return &c
}

// carry takes the tokens of from, a predecessor's bucket with the same
// rate and burst: a reload that keeps the action's rateLimit does not
// refill its bucket. q.mu of b's queue is held.
func (b *bucket) carry(from *bucket) {
	if b == nil || from == nil || b.rate != from.rate || b.burst != from.burst {
		return
	}
	b.tokens, b.last = from.tokens, from.last
}
