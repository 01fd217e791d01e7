package action

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/event"
)

// Review: a reload that changes another setting of a rate-limited action
// gives the new queue a full bucket: with perSecond 0.1 (one every 10s), a
// delivery right after a reload goes at once, although the last one went a
// moment before. Reloads can so defeat the limit.
func TestReviewRateLimitTokensSurviveHandOff(t *testing.T) {
	t.Parallel()
	fc := newFakeClock()
	rl := &RateLimitOptions{PerSecond: 0.1, Burst: 1}
	r0 := &grecorder{clock: fc}
	old := NewQueue("chat", r0, QueueOptions{Clock: fc, Logger: quiet, RateLimit: rl})
	runQueue(t, old)
	old.Enqueue(gdelivery("a", "x", 0, event.Add, fc.Now()))
	waitFor(t, "the first delivery", 10*time.Second, func() bool { return len(r0.sent()) == 1 })
	r := &grecorder{clock: fc}
	next := NewQueue("chat", r, QueueOptions{Clock: fc, Logger: quiet, RateLimit: rl})
	old.HandOff(next)
	runQueue(t, next)
	next.Enqueue(gdelivery("a", "y", 0, event.Add, fc.Now()))
	time.Sleep(300 * time.Millisecond) // the clock does not move: no token is due
	if got := r.sent(); len(got) != 0 {
		t.Errorf("a delivery went %s after the previous one, with perSecond 0.1: the reload refilled the bucket", fc.Now().Sub(r0.sent()[0].at))
	}
}

// Split by max with a failing second part: every member is finished with
// (Outbox.Done) exactly once, the delivered part's as it is delivered, the
// given-up part's when given up; nothing twice, nothing left.
func TestReviewGroupSplitDoneExactlyOnce(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	done := map[string]int{}
	ob := OutboxFunc(func(d *event.Delivery) { mu.Lock(); done[d.Payload.ID]++; mu.Unlock() })
	g := nsGroup()
	g.Max = 2
	q, r, fc := groupQueue(t, g, QueueOptions{Outbox: ob, Concurrency: 2})
	r.fail = func(_ int, d *event.Delivery) error {
		if d.Group != nil && d.Members[0].Payload.Name == "cm2" {
			return &Failure{Err: errors.New("400"), Permanent: true}
		}
		return nil
	}
	var ids []string
	for i := range 5 {
		d := gdelivery("a", fmt.Sprint("cm", i), 0, event.Add, fc.Now())
		ids = append(ids, d.Payload.ID)
		q.Enqueue(d)
	}
	waitOnClock(t, fc, q, "all finished", time.Minute, func() bool { return q.Len() == 0 })
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	for _, id := range ids {
		if done[id] != 1 {
			t.Errorf("%s done %d times, want once (all: %v)", id, done[id], done)
		}
	}
	if st := q.Stats(); st.Delivered != 3 || st.Failed != 2 {
		t.Errorf("stats %+v: want 3 delivered, 2 failed", st)
	}
}

// by: [type]: one object's add, update, delete land in three groups; with
// other objects filling the groups at other times, the object's events are
// still delivered in order across the groups (a held group waits for the
// earlier one, and nothing deadlocks).
func TestReviewGroupByTypeKeepsObjectOrder(t *testing.T) {
	t.Parallel()
	g := &GroupOptions{By: []string{"type"}, Wait: 30 * time.Second, Interval: 5 * time.Minute, Max: 100}
	q, r, fc := groupQueue(t, g, QueueOptions{Concurrency: 4})
	// The add group is delivered first, then stays in its interval.
	q.Enqueue(gdelivery("a", "w", 0, event.Add, fc.Now()))
	waitOnClock(t, fc, q, "the first add group", time.Minute, func() bool { return len(r.sent()) == 1 })
	// x's add joins the add group (due in ~5m), its update and delete new
	// groups due in 30s: they must wait for the add.
	q.Enqueue(gdelivery("a", "x", 0, event.Add, fc.Now()))
	q.Enqueue(gdelivery("a", "x", 1, event.Update, fc.Now()))
	q.Enqueue(gdelivery("a", "y", 0, event.Update, fc.Now()))
	q.Enqueue(gdelivery("a", "x", 2, event.Delete, fc.Now()))
	q.Enqueue(gdelivery("a", "y", 1, event.Add, fc.Now())) // y: update before add, both in order
	waitOnClock(t, fc, q, "everything", 30*time.Minute, func() bool { return q.Stats().Delivered == 6 })
	var xs, ys []string
	for _, e := range r.events() {
		switch e[:3] {
		case "a/x":
			xs = append(xs, e)
		case "a/y":
			ys = append(ys, e)
		}
	}
	if fmt.Sprint(xs) != "[a/x:0 a/x:1 a/x:2]" || fmt.Sprint(ys) != "[a/y:0 a/y:1]" {
		t.Errorf("x %v, y %v: out of order (deliveries %+v)", xs, ys, r.sent())
	}
}

// Hold-back cycle: x's events in groups A then B, y's in B then A. Nothing
// deadlocks and each object's order holds.
func TestReviewGroupHoldBackNoDeadlock(t *testing.T) {
	t.Parallel()
	g := &GroupOptions{By: []string{"type"}, Wait: 30 * time.Second, Interval: 5 * time.Minute, Max: 100}
	q, r, fc := groupQueue(t, g, QueueOptions{Concurrency: 4})
	q.Enqueue(gdelivery("a", "x", 0, event.Add, fc.Now()))
	q.Enqueue(gdelivery("a", "y", 0, event.Update, fc.Now()))
	q.Enqueue(gdelivery("a", "y", 1, event.Add, fc.Now()))
	q.Enqueue(gdelivery("a", "x", 1, event.Update, fc.Now()))
	waitOnClock(t, fc, q, "everything", 30*time.Minute, func() bool { return q.Stats().Delivered == 4 })
	var xs, ys []string
	for _, e := range r.events() {
		if e[:3] == "a/x" {
			xs = append(xs, e)
		} else {
			ys = append(ys, e)
		}
	}
	if fmt.Sprint(xs) != "[a/x:0 a/x:1]" || fmt.Sprint(ys) != "[a/y:0 a/y:1]" {
		t.Errorf("x %v, y %v (deliveries %+v)", xs, ys, r.sent())
	}
}

// Review: check accepts any perSecond above 0; below about 1.1e-10 the wait
// for the next token overflows time.Duration, the wake-up time lands in the
// past, and the worker and the timer wake each other in a loop (every take
// rearms the timer, every timer pass broadcasts).
func TestReviewRateLimitTinyRateWakesInTheFuture(t *testing.T) {
	t.Parallel()
	fc := newFakeClock()
	q := NewQueue("chat", &grecorder{clock: fc}, QueueOptions{Clock: fc, Logger: quiet, RateLimit: &RateLimitOptions{PerSecond: 1e-11, Burst: 1}})
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.limit.take(q) {
		t.Fatal("the first token is not there")
	}
	if q.limit.take(q) {
		t.Fatal("a second token at once")
	}
	if !q.limit.wakeAt.After(fc.Now()) {
		t.Errorf("the next token is due at %s, before now (%s)", q.limit.wakeAt, fc.Now())
	}
}

// Review: a grouped delivery's id (CloudEvents id, Kafka dynwatch-delivery-id)
// is its first event's key plus ":group", whatever else it holds. kill -9
// while [e1 e2] is in flight (the receiver got it), e3 joining the group
// meanwhile: after the restart the group is re-formed as [e1 e2 e3] with the
// same id, and a receiver that drops duplicates by id (what a stable id is
// for) drops e3 with it.
func TestReviewGroupIDNamesItsContent(t *testing.T) {
	t.Parallel()
	now := newFakeClock().Now()
	e1 := gdelivery("a", "x", 0, event.Add, now)
	e2 := gdelivery("a", "y", 0, event.Add, now)
	e3 := gdelivery("a", "z", 0, event.Add, now)
	labels := map[string]string{"namespace": "a"}
	before, err := event.NewGroupDelivery(labels, []*event.Delivery{e1, e2})
	if err != nil {
		t.Fatal(err)
	}
	after, err := event.NewGroupDelivery(labels, []*event.Delivery{e1, e2, e3})
	if err != nil {
		t.Fatal(err)
	}
	if DeliveryID(before) == DeliveryID(after) {
		t.Errorf("two grouped deliveries of different events share the id %q", DeliveryID(after))
	}
}

// A reload that removes group while a grouped delivery backs off: the new,
// ungrouped queue delivers it (whole) before the object's next event, which
// reached the new queue before the hand-off.
func TestReviewHandOffUngroupsBackingOffGroup(t *testing.T) {
	t.Parallel()
	fc := newFakeClock()
	r0 := &grecorder{clock: fc, fail: func(int, *event.Delivery) error { return errors.New("503") }}
	old := NewQueue("chat", r0, QueueOptions{Clock: fc, Logger: quiet, Group: nsGroup(), Retry: Retry{Max: 100, Initial: time.Second, MaxBackoff: time.Second}})
	runQueue(t, old)
	old.Enqueue(gdelivery("a", "x", 0, event.Add, fc.Now()))
	old.Enqueue(gdelivery("a", "y", 0, event.Add, fc.Now()))
	waitOnClock(t, fc, old, "a failed attempt", time.Minute, func() bool { r0.mu.Lock(); defer r0.mu.Unlock(); return r0.tries > 0 })
	waitFor(t, "backing off", 10*time.Second, old.settled)
	r := &grecorder{clock: fc}
	next := NewQueue("chat", r, QueueOptions{Clock: fc, Logger: quiet, Concurrency: 4, Retry: Retry{Max: 100, Initial: time.Second, MaxBackoff: time.Second}})
	next.Enqueue(gdelivery("a", "x", 1, event.Update, fc.Now()))
	next.Enqueue(gdelivery("a", "z", 0, event.Add, fc.Now()))
	old.HandOff(next)
	runQueue(t, next)
	waitOnClock(t, fc, next, "everything", 10*time.Minute, func() bool { return next.Stats().Delivered == 4 })
	var xs []string
	for _, e := range r.events() {
		if e[:3] == "a/x" {
			xs = append(xs, e)
		}
	}
	if fmt.Sprint(xs) != "[a/x:0 a/x:1]" {
		t.Errorf("x delivered %v (deliveries %+v)", xs, r.sent())
	}
	if q := next.Len(); q != 0 {
		t.Errorf("depth %d after all delivered", q)
	}
}

// Review: SIGTERM with a rate limit: the drain flushes three open groups,
// and with a grace period of 30s (room for all three at one every 10s)
// it delivers one and abandons the rest at once: the drain's idle check
// does not count a worker waiting for a token. Without state they are lost. The drain could deliver
// what it flushed regardless of the limit (or the docs say it does not).
func TestReviewDrainDeliversOpenGroupsDespiteRateLimit(t *testing.T) {
	t.Parallel()
	fc := newFakeClock()
	r := &grecorder{clock: fc}
	q := NewQueue("chat", r, QueueOptions{Clock: fc, Logger: quiet, Group: nsGroup(), RateLimit: &RateLimitOptions{PerSecond: 0.1, Burst: 1}})
	cancel, took := runFor(q, 30*time.Second)
	for i := range 3 {
		q.Enqueue(gdelivery(fmt.Sprint("ns", i), "cm", 0, event.Add, fc.Now()))
	}
	cancel()
	end := fc.Now().Add(time.Hour)
	for done := false; !done; {
		select {
		case <-took:
			done = true
		case <-time.After(time.Millisecond):
			moveClock(fc, q, end)
		}
	}
	if st := q.Stats(); st.Delivered != 3 || st.Abandoned != 0 {
		t.Errorf("stats %+v, %d deliveries: want the three open groups delivered by the drain", st, len(r.sent()))
	}
}

// SIGTERM with a rate limit and a grace period shorter than the limit's
// spacing: the drain delivers the three open groups regardless of the
// limit, within the grace.
func TestDrainBypassesRateLimit(t *testing.T) {
	t.Parallel()
	fc := newFakeClock()
	r := &grecorder{clock: fc}
	q := NewQueue("chat", r, QueueOptions{Clock: fc, Logger: quiet, Group: nsGroup(), RateLimit: &RateLimitOptions{PerSecond: 0.1, Burst: 1}})
	cancel, took := runFor(q, 5*time.Second)
	for i := range 3 {
		q.Enqueue(gdelivery(fmt.Sprint("ns", i), "cm", 0, event.Add, fc.Now()))
	}
	start := fc.Now()
	cancel()
	end := fc.Now().Add(time.Hour)
	for done := false; !done; {
		select {
		case <-took:
			done = true
		case <-time.After(time.Millisecond):
			moveClock(fc, q, end)
		}
	}
	if st := q.Stats(); st.Delivered != 3 || st.Abandoned != 0 {
		t.Errorf("stats %+v: want the three open groups delivered by the drain", st)
	}
	for _, s := range r.sent() {
		if s.at.Sub(start) > 5*time.Second {
			t.Errorf("a group went %s after SIGTERM, past the 5s grace", s.at.Sub(start))
		}
	}
}
