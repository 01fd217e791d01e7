package action

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/event"
)

// 10 000 open groups (by name: one per object, a debounce) use the queue's one
// timer and no goroutine each, and all arrive once due.
func Test10000GroupsOneTimer(t *testing.T) {
	const groups = 10_000
	g := &GroupOptions{By: []string{"name"}, Wait: 30 * time.Second, Interval: 5 * time.Minute, Max: 100}
	q, r, fc := groupQueue(t, g, QueueOptions{Size: 2 * groups, Concurrency: 4})
	before := runtime.NumGoroutine()
	for i := range groups {
		q.Enqueue(gdelivery("a", fmt.Sprint("cm", i), 0, event.Add, fc.Now()))
		q.Enqueue(gdelivery("a", fmt.Sprint("cm", i), 1, event.Update, fc.Now()))
	}
	waitFor(t, "the timer rearmed", 10*time.Second, func() bool { return fc.Waiters() == 1 })
	if n := runtime.NumGoroutine(); n > before+50 || fc.Waiters() != 1 { // other tests start and stop theirs meanwhile
		t.Errorf("%d goroutines (%d before), %d timers on the clock for %d open groups; want one timer", n, before, fc.Waiters(), groups)
	}
	if q.GroupEvents() != 2*groups {
		t.Errorf("%d events in groups, want %d", q.GroupEvents(), 2*groups)
	}
	waitOnClock(t, fc, q, "every group", time.Minute, func() bool { return q.Stats().Delivered == 2*groups })
	got := r.sent()
	if len(got) != groups {
		t.Fatalf("%d deliveries, want %d", len(got), groups)
	}
	for _, s := range got {
		name := s.labels["name"]
		if fmt.Sprint(s.events) != fmt.Sprintf("[a/%s:0 a/%s:1]", name, name) {
			t.Fatalf("group %s: %v", name, s.events)
		}
	}
}

// The clock jumping: forward, what is due goes at once; back, a group waits
// at most its wait from then, not the jump as well. A payload seen "later"
// than the queue's clock (a clock set back across a restart) waits the wait.
func TestGroupClockJumps(t *testing.T) {
	t.Parallel()
	q, r, fc := groupQueue(t, nsGroup(), QueueOptions{})
	q.Enqueue(gdelivery("a", "x", 0, event.Add, fc.Now()))
	waitFor(t, "the timer armed", 10*time.Second, func() bool { return fc.Waiters() == 1 })
	fc.Step(time.Hour)
	waitFor(t, "the group after a jump forward", 10*time.Second, func() bool { return len(r.sent()) == 1 })

	q.Enqueue(gdelivery("b", "y", 0, event.Add, fc.Now()))
	waitFor(t, "the timer rearmed", 10*time.Second, func() bool { q.mu.Lock(); defer q.mu.Unlock(); return len(q.grp.due) == 2 && fc.HasWaiters() })
	fc.SetTime(fc.Now().Add(-time.Hour))
	back := fc.Now()
	q.Enqueue(gdelivery("c", "z", 0, event.Add, fc.Now().Add(time.Hour))) // seen "in the future"
	waitOnClock(t, fc, q, "both groups after the jump back", time.Minute, func() bool { return q.Stats().Delivered == 3 })
	for _, s := range r.sent()[1:] {
		if d := s.at.Sub(back); d > 30*time.Second {
			t.Errorf("group %v delivered %s after the clock went back, want at most the wait, 30s", s.labels, d)
		}
	}
}

// rateLimit spaces deliveries: burst at once, then perSecond; a grouped
// delivery takes one token; nothing is dropped and the depth counts what
// waits.
func TestRateLimitSpacesDeliveries(t *testing.T) {
	t.Parallel()
	fc := newFakeClock()
	r := &grecorder{clock: fc}
	q := NewQueue("hook", r, QueueOptions{Concurrency: 4, Clock: fc, Logger: quiet, RateLimit: &RateLimitOptions{PerSecond: 2, Burst: 3}})
	runQueue(t, q)
	start := fc.Now()
	for i := range 9 {
		q.Enqueue(gdelivery("a", fmt.Sprint("cm", i), 0, event.Add, fc.Now()))
	}
	waitFor(t, "the burst", 10*time.Second, func() bool { return len(r.sent()) == 3 })
	if q.Len() != 6 {
		t.Errorf("depth %d while rate limited, want 6", q.Len())
	}
	waitOnClock(t, fc, q, "all nine", time.Minute, func() bool { return q.Stats().Delivered == 9 })
	var at []time.Duration
	for _, s := range r.sent() {
		at = append(at, s.at.Sub(start))
	}
	want := []time.Duration{0, 0, 0, 500 * time.Millisecond, time.Second, 1500 * time.Millisecond, 2 * time.Second, 2500 * time.Millisecond, 3 * time.Second}
	if !slices.Equal(at, want) {
		t.Errorf("delivered at %v, want %v", at, want)
	}

	// Grouped: the groups of three namespaces count one token each.
	fc2 := newFakeClock()
	r2 := &grecorder{clock: fc2}
	g := NewQueue("chat", r2, QueueOptions{Clock: fc2, Logger: quiet, Group: nsGroup(), RateLimit: &RateLimitOptions{PerSecond: 1, Burst: 1}})
	runQueue(t, g)
	for i := range 12 {
		g.Enqueue(gdelivery(fmt.Sprint("ns", i%3), fmt.Sprint("cm", i), 0, event.Add, fc2.Now()))
	}
	waitOnClock(t, fc2, g, "three groups", time.Minute, func() bool { return g.Stats().Delivered == 12 })
	got := r2.sent()
	if len(got) != 3 || got[1].at.Sub(got[0].at) != time.Second || got[2].at.Sub(got[1].at) != time.Second {
		t.Errorf("got %+v; want three groups a second apart", got)
	}
}

// SIGTERM: the drain delivers open groups at once, before the grace period
// ends, not when they would have been due.
func TestDrainDeliversOpenGroups(t *testing.T) {
	t.Parallel()
	fc := newFakeClock()
	r := &grecorder{clock: fc}
	q := NewQueue("chat", r, QueueOptions{Clock: fc, Logger: quiet, Group: nsGroup()})
	cancel, took := runFor(q, 10*time.Second)
	for i := range 4 {
		q.Enqueue(gdelivery(fmt.Sprint("ns", i%2), fmt.Sprint("cm", i), 0, event.Add, fc.Now()))
	}
	cancel()
	select {
	case d := <-took:
		if d >= 10*time.Second {
			t.Errorf("the drain took %s on the clock", d)
		}
	case <-time.After(time.Minute):
		t.Fatal("the drain did not end")
	}
	if st := q.Stats(); st.Delivered != 4 || st.Abandoned != 0 || len(r.sent()) != 2 {
		t.Errorf("stats %+v, %d deliveries: want both groups delivered by the drain", st, len(r.sent()))
	}
}

func TestGroupSplitDoneExactlyOnce(t *testing.T) {
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

func TestGroupByTypeKeepsObjectOrder(t *testing.T) {
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

func TestGroupHoldBackNoDeadlock(t *testing.T) {
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

// An event accepted before its group's delivery was formed, but joining it
// after (read back from disk after a restart, or from beyond the window),
// goes at once with the group's next delivery, not an interval later.
func TestGroupLateEventOfTheBurstNotHeld(t *testing.T) {
	t.Parallel()
	q, r, fc := groupQueue(t, nsGroup(), QueueOptions{})
	accepted := fc.Now()
	q.Enqueue(gdelivery("a", "cm0", 0, event.Add, accepted))
	waitOnClock(t, fc, q, "the first group", time.Minute, func() bool { return len(r.sent()) == 1 })
	q.Enqueue(gdelivery("a", "cm1", 0, event.Add, accepted))
	waitOnClock(t, fc, q, "the late event, at once", time.Second, func() bool { return len(r.sent()) == 2 })
	sleepOnClock(t, fc, q, time.Minute)
	q.Enqueue(gdelivery("a", "cm2", 0, event.Add, fc.Now())) // after the delivery: the interval holds it
	sleepOnClock(t, fc, q, time.Minute)
	if len(r.sent()) != 2 {
		t.Errorf("an event accepted after the delivery went before the interval: %+v", r.sent())
	}
}

// A genuinely new event (accepted after the group's delivery) waits the
// interval even when a late event of the burst joins the group after it:
// only the late event goes at once.
func TestGroupLateEventDoesNotReleaseNewOnes(t *testing.T) {
	t.Parallel()
	q, r, fc := groupQueue(t, nsGroup(), QueueOptions{})
	accepted := fc.Now()
	q.Enqueue(gdelivery("a", "cm0", 0, event.Add, accepted))
	waitOnClock(t, fc, q, "the first group", time.Minute, func() bool { return len(r.sent()) == 1 })
	sleepOnClock(t, fc, q, time.Second)
	q.Enqueue(gdelivery("a", "cm2", 0, event.Add, fc.Now())) // new: the interval holds it
	q.Enqueue(gdelivery("a", "cm1", 0, event.Add, accepted)) // late: goes at once
	waitOnClock(t, fc, q, "the late event, at once", time.Second, func() bool { return len(r.sent()) == 2 })
	if s := r.sent(); len(s) >= 2 && len(s[1].events) != 1 {
		t.Errorf("the late event released an event accepted after the delivery, before the interval: %+v", s[1])
	}
	sleepOnClock(t, fc, q, time.Minute)
	if len(r.sent()) != 2 {
		t.Fatalf("the new event went before the interval: %d deliveries", len(r.sent()))
	}
	waitOnClock(t, fc, q, "the new event, after the interval", 5*time.Minute, func() bool { return len(r.sent()) == 3 })
}

// Several late events that join before the queue's timer fires (a backlog
// read back from disk after a restart) all go at once: each is late, not
// only the first.
func TestGroupLateEventsTogether(t *testing.T) {
	t.Parallel()
	q, r, fc := groupQueue(t, nsGroup(), QueueOptions{})
	accepted := fc.Now()
	q.Enqueue(gdelivery("a", "cm0", 0, event.Add, accepted))
	waitOnClock(t, fc, q, "the first group", time.Minute, func() bool { return len(r.sent()) == 1 })
	for i := 1; i <= 5; i++ {
		q.Enqueue(gdelivery("a", fmt.Sprint("cm", i), 0, event.Add, accepted))
	}
	waitOnClock(t, fc, q, "the five late events, at once", time.Second, func() bool {
		n := 0
		for _, s := range r.sent()[1:] {
			n += len(s.events)
		}
		return n == 5
	})
}
