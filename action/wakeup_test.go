package action

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/event"
)

// An event enqueued while a shutdown drain waits is delivered at once, never
// left until the next timer: Enqueue's wake-up must reach a worker, not the
// drain's waiter on the same condition. The scene that puts the drain's wait
// ahead of the worker's: the action is down with nothing to probe (its probe
// event gone: given up, or backing off on its own once the receiver took
// others), and the pure wake-up at the next probe time finds nothing to do;
// another event backs off on its own for longer than the test waits. On a
// fake clock: the 20 scenes take no waiting for the probe schedule.
func TestEnqueueDuringDrainWakesAWorker(t *testing.T) {
	t.Parallel()
	for i := range 20 {
		if !enqueueDuringDrain(t) {
			t.Fatalf("iteration %d: an event enqueued during the drain, deliverable at once, was not delivered within 3s", i)
		}
	}
}

func enqueueDuringDrain(t *testing.T) bool {
	delivered := make(chan struct{})
	s := senderFunc(func(_ context.Context, d *event.Delivery) error {
		if d.Key == "ns/alone" {
			return &Failure{Err: errors.New("exit 1"), OneEvent: true, RetryAfter: 30 * time.Second}
		}
		close(delivered)
		return nil
	})
	fc := newFakeClock()
	q := NewQueue("x", s, QueueOptions{Concurrency: 1, Retry: Retry{Max: 1, Initial: time.Millisecond, MaxBackoff: time.Minute},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Clock: fc})
	cancel, took := runFor(q, time.Minute)
	defer func() { cancel(); q.Halt(); <-took }()
	q.Enqueue(delivery("alone", 1))
	waitFor(t, "the first event to back off on its own", 10*time.Second, func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return len(q.backoffs) == 1
	})
	// The receiver fails a probe whose event then leaves the ready keys (the
	// scene's state, set directly): the action is down, its next probe set.
	q.failing(true, &Failure{Err: errors.New("503"), RetryAfter: 50 * time.Millisecond}, errors.New("503"))
	cancel()
	q.mu.Lock()
	next := q.health.nextProbe
	q.mu.Unlock()
	// Only sets the scene (that wake-up cannot be seen from here): whenever B
	// comes, a worker can take it at once as the next probe.
	fc.SetTime(next.Add(20 * time.Millisecond))
	time.Sleep(20 * time.Millisecond) // the pure wake-up at nextProbe has come and gone
	q.Enqueue(delivery("b", 1))
	select {
	case <-delivered:
		return true
	case <-time.After(3 * time.Second):
		return false
	}
}
