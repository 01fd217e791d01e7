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
// ahead of the worker's: the action is down, its probe event has used its
// retries, and the pure wake-up at the next probe time finds nothing to do;
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
	probeFailed := make(chan struct{}, 2)
	s := senderFunc(func(_ context.Context, d *event.Delivery) error {
		switch d.Key {
		case "ns/alone":
			return &Failure{Err: errors.New("exit 1"), OneEvent: true, RetryAfter: 30 * time.Second}
		case "ns/down":
			probeFailed <- struct{}{}
			return &Failure{Err: errors.New("503"), RetryAfter: 50 * time.Millisecond}
		}
		close(delivered)
		return nil
	})
	fc := newFakeClock()
	q := NewQueue("x", s, QueueOptions{Concurrency: 1, Retry: Retry{Max: 1, Initial: time.Millisecond, MaxBackoff: time.Minute},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Clock: fc})
	cancel, took := runFor(q, time.Minute)
	defer func() { cancel(); q.Halt(); <-took }() // cancel again: a failure may come before the drain
	q.Enqueue(delivery("alone", 1))
	waitFor(t, "the first event to back off on its own", 10*time.Second, func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return len(q.backoffs) == 1
	})
	q.Enqueue(delivery("down", 1))
	cancel()
	<-probeFailed
	// its retries used: given up, and the next probe is set
	waitOnClock(t, fc, q, "the probe event given up", 10*time.Second, func() bool { return q.Stats().Failed == 1 })
	<-probeFailed
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
