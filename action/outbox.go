package action

import "github.com/dynwatch/dynwatch/event"

// Outbox keeps an action's deliveries on disk until they are done with (the
// watcher's durable queue). A queue with an Outbox refuses none for size, since
// what it holds in memory is on disk already, and what is left in it at
// shutdown is kept for the next start, not lost.
type Outbox interface {
	// Done is called once a delivery is finished with: delivered, or given up
	// (and logged). The outbox removes it from disk.
	Done(d *event.Delivery)
}

// OutboxFunc is an Outbox written as its Done function.
type OutboxFunc func(d *event.Delivery)

// Done calls f(d).
func (f OutboxFunc) Done(d *event.Delivery) { f(d) }
