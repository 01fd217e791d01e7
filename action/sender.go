package action

import (
	"context"
	"time"

	"github.com/dynwatch/dynwatch/event"
)

// Sender makes one delivery attempt. It returns nil on success, a *Failure that
// says whether and when to retry, or any other error (retried).
type Sender interface {
	Send(ctx context.Context, d *event.Delivery) error
}

// Finisher is a Sender that keeps something per delivery across attempts
// (kafka: its record not acknowledged yet). The queue calls Finished once it
// is done with d, delivered or given up, so that nothing is kept for ever.
type Finisher interface {
	Finished(d *event.Delivery)
}

// Heir is a Sender that takes over what its predecessor still has in flight
// when a reload hands an action's backlog to a new queue (kafka: records the
// old client has not settled, which must land before the object's next
// record). The queue calls Inherit with the predecessor's sender once the
// predecessor's attempts have ended and before the heir's first attempt, and
// before the predecessor is closed.
type Heir interface {
	Inherit(prev Sender)
}

// Failure is a failed attempt with what the receiver said about retrying.
type Failure struct {
	Err error
	// Permanent failures are not retried (a 4xx other than 408 and 429).
	Permanent bool
	// RetryAfter is the receiver's Retry-After, if it gave one.
	RetryAfter time.Duration
	// OneEvent marks a failure of this event alone while the receiver works (a
	// command that ran and failed on this payload): the event backs off on its
	// own and the others go on. Any other failure means the receiver is down:
	// the whole action backs off, one probe at a time, and the failure counts
	// against the outage, not against the event's Retry.Max; unless other
	// deliveries got through since the event's previous attempt, which makes
	// it this event's failure as if it were OneEvent.
	OneEvent bool
	// Refused marks, with OneEvent, a receiver that answers but refuses the
	// route this event's template rendered (a topic it does not have or
	// lets no one write to, a subject no stream captures). The event backs
	// off alone, as OneEvent's do, but its failures count against its
	// Retry.Max only while other deliveries get through: when every route
	// is refused (topics not created yet, a stream being made again), the
	// backlog waits as it does through an outage, and nothing is given up.
	Refused bool
	// Throttled marks a receiver that asks the client to slow down (HTTP
	// 429): it says nothing of the event, so it never counts against the
	// event's Retry.Max, even while other deliveries get through; the action
	// backs off (down, one probe at a time, after its Retry-After).
	Throttled bool
}

func (f *Failure) Error() string { return f.Err.Error() }
func (f *Failure) Unwrap() error { return f.Err }
