package action

import (
	"fmt"
	"runtime"
	"slices"
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
