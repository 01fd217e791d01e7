package action

import (
	"math/rand/v2"
	"time"
)

// Retry is an exponential backoff policy with jitter.
type Retry struct {
	// Max is how many failures of one event may follow its first attempt
	// before it is given up: failures of that event alone, and failures that
	// say the receiver is down once other deliveries got through since the
	// event's previous attempt. An outage counts none (Queue.settle).
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

// after returns the wait a receiver's Retry-After asks for, at most
// MaxBackoff: one 503 with "Retry-After: 3600" must not hold an action for an
// hour when its retry policy says it waits 5m at most.
func (r Retry) after(f *Failure) time.Duration {
	if f == nil {
		return 0
	}
	return min(f.RetryAfter, r.MaxBackoff)
}
