package action

import (
	"errors"
	"fmt"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dynwatch/dynwatch/event"
)

// handOffPair runs old, grouped by from, and makes a successor grouped by to
// (nil: not grouped) on one fake clock, which the test runs once it was
// handed off to, as a reload does; the successor's sender records.
func handOffPair(t *testing.T, from, to *GroupOptions) (old, next *Queue, r *grecorder, fc *clocktesting.FakeClock) {
	t.Helper()
	old, _, fc = groupQueue(t, from, QueueOptions{})
	r = &grecorder{clock: fc}
	next = NewQueue("chat", r, QueueOptions{Concurrency: 4, Clock: fc, Logger: quiet, Group: to})
	return old, next, r, fc
}

// A reload that changes group delivers the open groups under the old
// settings first, at once (through the new queue's sender), then groups what
// comes next the new way; an object's events stay in order across the two.
func TestHandOffChangedGroupDeliversOpenGroupsFirst(t *testing.T) {
	t.Parallel()
	byName := &GroupOptions{By: []string{"name"}, Wait: 30 * time.Second, Interval: 5 * time.Minute, Max: 100}
	old, next, r, fc := handOffPair(t, nsGroup(), byName)
	old.Enqueue(gdelivery("a", "x", 0, event.Add, fc.Now()))
	old.Enqueue(gdelivery("a", "y", 0, event.Add, fc.Now()))
	old.Enqueue(gdelivery("b", "z", 0, event.Add, fc.Now()))
	next.Enqueue(gdelivery("a", "x", 1, event.Update, fc.Now())) // the new pipeline's, before the hand-off
	old.HandOff(next)
	runQueue(t, next)
	waitFor(t, "the old groups", 10*time.Second, func() bool { return len(r.sent()) == 2 })
	for _, s := range r.sent() {
		if _, ok := s.labels["namespace"]; !ok {
			t.Errorf("first deliveries: %+v; want the old groups, by namespace", s)
		}
	}
	waitOnClock(t, fc, next, "the new group", time.Minute, func() bool { return next.Stats().Delivered == 4 })
	got := r.sent()
	if len(got) != 3 || got[2].labels["name"] != "x" || fmt.Sprint(got[2].events) != "[a/x:1]" {
		t.Errorf("got %+v; want x's update last, grouped by name", got)
	}
}

// A reload that keeps group as it was (another setting changed) keeps the
// open groups: they are delivered when they were due, with what the new
// queue added to them.
func TestHandOffSameGroupKeepsOpenGroups(t *testing.T) {
	t.Parallel()
	old, next, r, fc := handOffPair(t, nsGroup(), nsGroup())
	start := fc.Now()
	old.Enqueue(gdelivery("a", "x", 0, event.Add, fc.Now()))
	sleepOnClock(t, fc, old, 20*time.Second)
	old.HandOff(next)
	runQueue(t, next)
	next.Enqueue(gdelivery("a", "y", 0, event.Add, fc.Now()))
	waitFor(t, "the hand-off", 10*time.Second, func() bool { return next.GroupEvents() == 2 })
	waitOnClock(t, fc, next, "the group", time.Minute, func() bool { return next.Stats().Delivered == 2 })
	got := r.sent()
	if len(got) != 1 || fmt.Sprint(got[0].events) != "[a/x:0 a/y:0]" || got[0].at.Sub(start) != 30*time.Second {
		t.Errorf("got %+v; want one group at 30s, x then y", got)
	}
}

// A reload that removes group delivers the open groups first, as groups; an
// object's later (ungrouped) events wait for them.
func TestHandOffToUngroupedKeepsOrder(t *testing.T) {
	t.Parallel()
	old, next, r, fc := handOffPair(t, nsGroup(), nil)
	for i := range 3 {
		old.Enqueue(gdelivery("a", fmt.Sprint("cm", i), 0, event.Add, fc.Now()))
	}
	next.Enqueue(gdelivery("a", "cm1", 1, event.Update, fc.Now()))
	old.HandOff(next)
	runQueue(t, next)
	next.Enqueue(gdelivery("a", "cm2", 1, event.Update, fc.Now()))
	waitOnClock(t, fc, next, "everything", time.Minute, func() bool { return next.Stats().Delivered == 5 })
	got := r.sent()
	if len(got) != 3 || len(got[0].events) != 3 || got[0].labels["namespace"] != "a" {
		t.Fatalf("got %+v; want the old group first, then two plain deliveries", got)
	}
}

// A reload that adds group: the old queue's plain backlog goes first, as it
// was; the new queue's events of those objects wait for it, grouped.
func TestHandOffToGroupedKeepsOrder(t *testing.T) {
	t.Parallel()
	fc := newFakeClock()
	down := &grecorder{clock: fc, fail: func(int, *event.Delivery) error { return errors.New("503") }}
	old := NewQueue("chat", down, QueueOptions{Clock: fc, Logger: quiet, Retry: Retry{Max: 100, Initial: time.Minute, MaxBackoff: time.Hour}})
	runQueue(t, old)
	r := &grecorder{clock: fc}
	next := NewQueue("chat", r, QueueOptions{Concurrency: 4, Clock: fc, Logger: quiet, Group: nsGroup()})
	old.Enqueue(gdelivery("a", "x", 0, event.Add, fc.Now()))
	old.Enqueue(gdelivery("a", "y", 0, event.Add, fc.Now()))
	waitFor(t, "the old receiver failing", 10*time.Second, func() bool { d, _ := old.Down(); return d })
	next.Enqueue(gdelivery("a", "x", 1, event.Update, fc.Now()))
	old.HandOff(next)
	runQueue(t, next)
	waitOnClock(t, fc, next, "everything", time.Minute, func() bool { return next.Stats().Delivered == 3 })
	got := r.sent()
	if len(got) != 3 || got[0].labels != nil || got[1].labels != nil || fmt.Sprint(got[2].events) != "[a/x:1]" {
		t.Errorf("got %+v; want the two plain deliveries, then x's update grouped", got)
	}
}

func TestHandOffUngroupsBackingOffGroup(t *testing.T) {
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

// A reload that keeps group while a late event has made its group due now
// (for the late event only) keeps the interval for the group's other
// members: a new event accepted after the delivery still waits the interval
// in the new queue. (The old queue is driven by hand, so that its timer
// cannot deliver the late event before the hand-off.)
func TestHandOffSameGroupKeepsLateResume(t *testing.T) {
	t.Parallel()
	fc := newFakeClock()
	r := &grecorder{clock: fc}
	old := NewQueue("chat", r, QueueOptions{Clock: fc, Logger: quiet, Group: nsGroup()})
	next := NewQueue("chat", r, QueueOptions{Concurrency: 4, Clock: fc, Logger: quiet, Group: nsGroup()})
	accepted := fc.Now()
	old.Enqueue(gdelivery("a", "cm0", 0, event.Add, accepted))
	fc.Step(30 * time.Second)
	old.mu.Lock()
	old.fireDue(fc.Now()) // the first group's delivery is formed
	old.mu.Unlock()
	fc.Step(time.Second)
	old.Enqueue(gdelivery("a", "cm2", 0, event.Add, fc.Now())) // new: the interval holds it
	old.Enqueue(gdelivery("a", "cm1", 0, event.Add, accepted)) // late: goes at once
	old.mu.Lock()
	old.successor = next
	old.mu.Unlock()
	old.moveBacklog()
	runQueue(t, next)
	waitOnClock(t, fc, next, "the first group and the late event", time.Second, func() bool { return len(r.sent()) >= 2 })
	sleepOnClock(t, fc, next, time.Minute)
	if s := r.sent(); len(s) != 2 || fmt.Sprint(s[1].events) != "[a/cm1:0]" {
		t.Errorf("after the hand-off: %+v; want the first group, then only the late cm1 (cm2 held by the interval)", s)
	}
}
