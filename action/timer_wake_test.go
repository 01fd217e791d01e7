package action

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dynwatch/dynwatch/event"
)

// raceClock is a fake clock that moves to the due time of the first timer the
// queue sets, just before setting it: what a test stepping the clock to the
// queue's next wake-up does when it runs between the timer goroutine's read of
// the time and its NewTimer.
type raceClock struct {
	*clocktesting.FakeClock
	armed atomic.Bool
}

func (c *raceClock) NewTimer(d time.Duration) clock.Timer {
	if d > 0 && c.armed.CompareAndSwap(true, false) {
		c.SetTime(c.Now().Add(d))
	}
	return c.FakeClock.NewTimer(d)
}

// A backoff whose due time the clock reaches while the timer is being set is
// still handed back: the timer must not sleep d past the time it has reached.
func TestTimerBackoffDueWhileArming(t *testing.T) {
	rc := &raceClock{FakeClock: newFakeClock()}
	var tries atomic.Int64
	s := senderFunc(func(context.Context, *event.Delivery) error {
		if tries.Add(1) == 1 {
			rc.armed.Store(true)
			return &Failure{Err: errors.New("exit 1"), OneEvent: true}
		}
		return nil
	})
	q := NewQueue("x", s, QueueOptions{Concurrency: 1, Retry: Retry{Max: 3, Initial: time.Second, MaxBackoff: time.Second},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Clock: rc})
	runQueue(t, q)
	t.Cleanup(q.Halt)                 // first: a drain on the fake clock waits for the lost retry
	time.Sleep(50 * time.Millisecond) // the timer has nothing to wait for yet, and waits for a rearm
	q.Enqueue(delivery("a", 1))
	deadline := time.Now().Add(3 * time.Second)
	for q.Stats().Delivered != 1 {
		if time.Now().After(deadline) {
			q.mu.Lock()
			backoffs := fmt.Sprint(q.backoffs)
			q.mu.Unlock()
			t.Fatalf("the retry is due (now %s, backoffs %s) but was not handed back; the timer waits past it", rc.Now().Format(time.StampMilli), backoffs)
		}
		time.Sleep(time.Millisecond)
	}
}

// The queue's timer ends with Run however Run ends: a drain, a hand-off, a
// halt, each with an event backing off for an hour.
func TestTimerEndsWithRun(t *testing.T) {
	waitFor(t, "the goroutines of earlier tests to end", 10*time.Second, func() bool { return true })
	before := runtime.NumGoroutine()
	alone := senderFunc(func(context.Context, *event.Delivery) error {
		return &Failure{Err: errors.New("exit 1"), OneEvent: true, RetryAfter: time.Hour}
	})
	opts := QueueOptions{Retry: Retry{Max: 5, Initial: time.Hour, MaxBackoff: time.Hour}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	var wg sync.WaitGroup
	for i := range 30 {
		q := NewQueue("x", alone, opts)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel() // each case cancels too; for vet
		wg.Go(func() { _ = q.Run(ctx, time.Minute) })
		q.Enqueue(delivery("a", i))
		waitFor(t, "the backoff", 10*time.Second, func() bool { q.mu.Lock(); defer q.mu.Unlock(); return len(q.backoffs) == 1 })
		switch i % 3 {
		case 0:
			cancel()
		case 1:
			next := NewQueue("x", alone, opts)
			q.HandOff(next)
			nctx, ncancel := context.WithCancel(context.Background())
			wg.Go(func() { _ = next.Run(nctx, time.Millisecond) })
			<-q.Stopped()
			ncancel()
			<-next.Stopped()
			cancel()
		case 2:
			q.Halt()
			cancel()
		}
		<-q.Stopped()
	}
	wg.Wait()
	waitFor(t, "the queues' goroutines to end", 5*time.Second, func() bool { return runtime.NumGoroutine() <= before })
}

// An event backing off on its own when its action is handed off is delivered
// by the successor, in order with the object's next event, each told to the
// successor's outbox once; the old queue's timer hands nothing back after.
func TestHandOffWithABackoffPending(t *testing.T) {
	fc := newFakeClock()
	discard := slog.New(slog.NewTextHandler(io.Discard, nil))
	old := NewQueue("x", senderFunc(func(context.Context, *event.Delivery) error {
		return &Failure{Err: errors.New("exit 1"), OneEvent: true}
	}), QueueOptions{Retry: Retry{Max: 5, Initial: time.Hour, MaxBackoff: time.Hour}, Logger: discard, Clock: fc})
	var mu sync.Mutex
	var got []string
	done := map[string]int{}
	next := NewQueue("x", senderFunc(func(_ context.Context, d *event.Delivery) error {
		mu.Lock()
		got = append(got, d.Payload.ID)
		mu.Unlock()
		return nil
	}), QueueOptions{Logger: discard, Clock: fc, Outbox: OutboxFunc(func(d *event.Delivery) {
		mu.Lock()
		done[d.Payload.ID]++
		mu.Unlock()
	})})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = old.Run(ctx, time.Second) }()
	old.Enqueue(delivery("a", 1))
	waitFor(t, "the backoff", 10*time.Second, func() bool { old.mu.Lock(); defer old.mu.Unlock(); return len(old.backoffs) == 1 })
	old.Enqueue(delivery("a", 2))
	old.HandOff(next)
	runQueue(t, next)
	<-old.Stopped()
	waitFor(t, "both events on the successor", 10*time.Second, func() bool { return next.Stats().Delivered == 2 })
	fc.Step(2 * time.Hour) // the old backoff's time
	time.Sleep(20 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0] != "uid-a:1:update" || got[1] != "uid-a:2:update" || len(done) != 2 || done[got[0]] != 1 || done[got[1]] != 1 {
		t.Errorf("successor got %v, outbox %v: want a:1 then a:2, each done once", got, done)
	}
	old.mu.Lock()
	defer old.mu.Unlock()
	if len(old.ready) != 0 || old.total != 0 {
		t.Errorf("the old queue has ready %v, total %d after its hand-off", old.ready, old.total)
	}
}

// A clock set back while an event backs off: the event is retried once the
// clock reaches its due time again, not before and not never.
func TestTimerClockSetBack(t *testing.T) {
	fc := newFakeClock()
	var tries atomic.Int64
	s := senderFunc(func(context.Context, *event.Delivery) error {
		if tries.Add(1) == 1 {
			return &Failure{Err: errors.New("exit 1"), OneEvent: true, RetryAfter: time.Minute}
		}
		return nil
	})
	q := NewQueue("x", s, QueueOptions{Retry: Retry{Max: 3, Initial: time.Minute, MaxBackoff: time.Minute}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Clock: fc})
	runQueue(t, q)
	start := fc.Now()
	q.Enqueue(delivery("a", 1))
	waitFor(t, "the backoff", 10*time.Second, func() bool { q.mu.Lock(); defer q.mu.Unlock(); return len(q.backoffs) == 1 })
	fc.SetTime(start.Add(-time.Hour))
	time.Sleep(20 * time.Millisecond)
	fc.SetTime(start.Add(30 * time.Second))
	time.Sleep(20 * time.Millisecond)
	if n := tries.Load(); n != 1 {
		t.Fatalf("%d attempts before the backoff is over", n)
	}
	fc.SetTime(start.Add(time.Minute + time.Second))
	waitFor(t, "the retry", 5*time.Second, func() bool { return q.Stats().Delivered == 1 })
}
