package action

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dynwatch/dynwatch/event"
)

// The grouping stage's tests, on a fake clock.

// gdelivery is event seq (its type typ) of ConfigMap ns/name, seen at seen.
func gdelivery(ns, name string, seq int, typ event.Type, seen time.Time) *event.Delivery {
	pl := &event.Payload{
		ID:        fmt.Sprintf("uid-%s-%s:%d:%s", ns, name, seq, typ),
		Time:      seen.UTC().Format(event.TimeFormat),
		Type:      typ,
		Rule:      "r",
		Resource:  event.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true},
		Namespace: ns,
		Name:      name,
		Object:    json.RawMessage(fmt.Sprintf(`{"seq":%d}`, seq)),
	}
	b, _ := json.Marshal(pl)
	return &event.Delivery{Payload: pl, JSON: b, Key: "configmaps/" + ns + "/" + name}
}

// sent is one delivery a grecorder saw: when, its group's labels, and its
// events as ns/name:seq.
type sent struct {
	at     time.Time
	labels map[string]string
	events []string
}

// grecorder is a sender that records what it is sent, and fails an attempt
// when fail says so.
type grecorder struct {
	clock *clocktesting.FakeClock
	mu    sync.Mutex
	got   []sent
	tries int
	fail  func(try int, d *event.Delivery) error
}

func (r *grecorder) Send(_ context.Context, d *event.Delivery) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tries++
	if r.fail != nil {
		if err := r.fail(r.tries, d); err != nil {
			return err
		}
	}
	s := sent{at: r.clock.Now()}
	members := []*event.Delivery{d}
	if d.Group != nil {
		s.labels, members = d.Group.Group, d.Members
		var body struct {
			Count  int
			Events []json.RawMessage
		}
		if err := json.Unmarshal(d.JSON, &body); err != nil || body.Count != len(members) || len(body.Events) != len(members) {
			return fmt.Errorf("grouped delivery's JSON %s: count %d, %d events, %d members (%v)", d.JSON, body.Count, len(body.Events), len(members), err)
		}
	}
	for _, m := range members {
		var o struct{ Seq int }
		_ = json.Unmarshal(m.Payload.Object, &o)
		s.events = append(s.events, fmt.Sprintf("%s/%s:%d", m.Payload.Namespace, m.Payload.Name, o.Seq))
	}
	r.got = append(r.got, s)
	return nil
}

func (r *grecorder) sent() []sent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// events returns every event delivered, in the order of the deliveries.
func (r *grecorder) events() []string {
	var out []string
	for _, s := range r.sent() {
		out = append(out, s.events...)
	}
	return out
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// groupQueue runs a queue grouped by g on a fake clock until the test ends.
func groupQueue(t *testing.T, g *GroupOptions, opts QueueOptions) (*Queue, *grecorder, *clocktesting.FakeClock) {
	t.Helper()
	fc := newFakeClock()
	r := &grecorder{clock: fc}
	opts.Group, opts.Clock = g, fc
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	q := NewQueue("chat", r, opts)
	runQueue(t, q)
	return q, r, fc
}

func nsGroup() *GroupOptions {
	return &GroupOptions{By: []string{"namespace"}, Wait: 30 * time.Second, Interval: 5 * time.Minute, Max: 100}
}

// Events grouped by namespace: nothing goes before the wait is over, then
// one delivery per namespace with its events in order and the namespace as
// the group's label; the depth counts the events waiting.
func TestGroupByNamespace(t *testing.T) {
	t.Parallel()
	q, r, fc := groupQueue(t, nsGroup(), QueueOptions{})
	start := fc.Now()
	for i := range 3 {
		q.Enqueue(gdelivery("a", fmt.Sprint("cm", i), 0, event.Add, fc.Now()))
		q.Enqueue(gdelivery("b", fmt.Sprint("cm", i), 0, event.Add, fc.Now()))
	}
	if q.Len() != 6 || q.GroupEvents() != 6 {
		t.Errorf("depth %d, in groups %d: want 6 and 6", q.Len(), q.GroupEvents())
	}
	sleepOnClock(t, fc, q, 29*time.Second)
	if got := r.sent(); len(got) != 0 {
		t.Fatalf("delivered before the wait was over: %+v", got)
	}
	waitOnClock(t, fc, q, "two grouped deliveries", time.Minute, func() bool { return q.Stats().Delivered == 6 })
	got := r.sent()
	if len(got) != 2 {
		t.Fatalf("got %d deliveries, want 2: %+v", len(got), got)
	}
	slices.SortFunc(got, func(a, b sent) int { return strings.Compare(a.labels["namespace"], b.labels["namespace"]) })
	for i, ns := range []string{"a", "b"} {
		want := fmt.Sprintf("[%s/cm0:0 %s/cm1:0 %s/cm2:0]", ns, ns, ns)
		if fmt.Sprint(got[i].events) != want || got[i].labels["namespace"] != ns || len(got[i].labels) != 1 {
			t.Errorf("delivery %d: labels %v, events %v; want namespace %s, %s", i, got[i].labels, got[i].events, ns, want)
		}
		if d := got[i].at.Sub(start); d != 30*time.Second {
			t.Errorf("delivery %d after %s, want 30s", i, d)
		}
	}
	if st := q.Stats(); st.Groups != 2 || st.Enqueued != 6 {
		t.Errorf("stats %+v: want 2 groups of 6 events", st)
	}
	if q.Len() != 0 || q.GroupEvents() != 0 {
		t.Errorf("after delivery: depth %d, in groups %d", q.Len(), q.GroupEvents())
	}
}

// After a group was delivered, its next events wait the interval (counted
// from that delivery); once the interval has passed with nothing new, the
// group is forgotten and a new event waits only the wait.
func TestGroupIntervalHoldsLaterEvents(t *testing.T) {
	t.Parallel()
	q, r, fc := groupQueue(t, nsGroup(), QueueOptions{})
	start := fc.Now()
	q.Enqueue(gdelivery("a", "cm0", 0, event.Add, fc.Now()))
	waitOnClock(t, fc, q, "the first group", time.Minute, func() bool { return len(r.sent()) == 1 })
	sleepOnClock(t, fc, q, 10*time.Second)
	q.Enqueue(gdelivery("a", "cm1", 0, event.Add, fc.Now()))
	sleepOnClock(t, fc, q, time.Minute)
	if len(r.sent()) != 1 {
		t.Fatalf("a later event went before the interval was over: %+v", r.sent())
	}
	waitOnClock(t, fc, q, "the second delivery", 10*time.Minute, func() bool { return len(r.sent()) == 2 })
	if d := r.sent()[1].at.Sub(start); d != 30*time.Second+5*time.Minute {
		t.Errorf("second delivery %s after the start, want 5m30s (the interval after the first)", d)
	}
	waitFor(t, "the queue settled", 10*time.Second, q.settled)
	fc.Step(10 * time.Minute)
	waitFor(t, "the group forgotten", 10*time.Second, func() bool { q.mu.Lock(); defer q.mu.Unlock(); return len(q.grp.groups) == 0 })
	at := fc.Now()
	q.Enqueue(gdelivery("a", "cm2", 0, event.Add, fc.Now()))
	waitOnClock(t, fc, q, "the third delivery", 10*time.Minute, func() bool { return len(r.sent()) == 3 })
	if d := r.sent()[2].at.Sub(at); d != 30*time.Second {
		t.Errorf("a group forgotten after its interval: new event delivered after %s, want the wait, 30s", d)
	}
}

// A group larger than max is split into deliveries of max events, in order.
func TestGroupMaxSplitsInOrder(t *testing.T) {
	t.Parallel()
	g := nsGroup()
	g.Max = 3
	q, r, fc := groupQueue(t, g, QueueOptions{Concurrency: 4})
	var want []string
	for i := range 8 {
		q.Enqueue(gdelivery("a", fmt.Sprint("cm", i), i, event.Add, fc.Now()))
		want = append(want, fmt.Sprintf("a/cm%d:%d", i, i))
	}
	waitOnClock(t, fc, q, "eight events", time.Minute, func() bool { return q.Stats().Delivered == 8 })
	var sizes []int
	for _, s := range r.sent() {
		sizes = append(sizes, len(s.events))
	}
	if fmt.Sprint(sizes) != "[3 3 2]" || fmt.Sprint(r.events()) != fmt.Sprint(want) {
		t.Errorf("deliveries of %v, events %v; want [3 3 2], %v", sizes, r.events(), want)
	}
}

// One object's events in one group keep their order: enter then exit of a
// transition, an add then the delete that came while it waited.
func TestGroupKeepsAnObjectsEventsInOrder(t *testing.T) {
	t.Parallel()
	q, r, fc := groupQueue(t, nsGroup(), QueueOptions{})
	enter := gdelivery("a", "x", 0, event.Update, fc.Now())
	enter.Payload.Transition = "enter"
	exit := gdelivery("a", "x", 1, event.Update, fc.Now())
	exit.Payload.Transition = "exit"
	q.Enqueue(enter)
	q.Enqueue(gdelivery("a", "y", 0, event.Add, fc.Now()))
	q.Enqueue(exit)
	q.Enqueue(gdelivery("a", "y", 1, event.Delete, fc.Now()))
	waitOnClock(t, fc, q, "the group", time.Minute, func() bool { return q.Stats().Delivered == 4 })
	if got := fmt.Sprint(r.sent()[0].events); got != "[a/x:0 a/y:0 a/x:1 a/y:1]" {
		t.Errorf("got %s, want the events as they came", got)
	}
}

// An object whose events fall into two groups (by type) keeps their order:
// its update, in a group due first, waits for its add, in a group held back
// by the interval; another object's update in that group goes on time.
func TestGroupObjectOverTwoGroupsKeepsOrder(t *testing.T) {
	t.Parallel()
	g := &GroupOptions{By: []string{"type"}, Wait: 30 * time.Second, Interval: 5 * time.Minute, Max: 100}
	q, r, fc := groupQueue(t, g, QueueOptions{})
	start := fc.Now()
	q.Enqueue(gdelivery("a", "first", 0, event.Add, fc.Now()))
	waitOnClock(t, fc, q, "the first add group", time.Minute, func() bool { return len(r.sent()) == 1 })
	sleepOnClock(t, fc, q, 10*time.Second)
	q.Enqueue(gdelivery("a", "x", 0, event.Add, fc.Now()))    // the add group: due at 5m30s
	q.Enqueue(gdelivery("a", "x", 1, event.Delete, fc.Now())) // a new delete group: due at 1m10s
	q.Enqueue(gdelivery("a", "z", 0, event.Delete, fc.Now()))
	waitOnClock(t, fc, q, "the delete group", time.Minute, func() bool { return len(r.sent()) == 2 })
	if s := r.sent()[1]; fmt.Sprint(s.events) != "[a/z:0]" || s.at.Sub(start) != 70*time.Second {
		t.Errorf("delete group at %s: %v; want z's delete alone at 1m10s, x's waiting for its add", s.at.Sub(start), s.events)
	}
	waitOnClock(t, fc, q, "everything", 10*time.Minute, func() bool { return q.Stats().Delivered == 4 })
	got := r.sent()
	if fmt.Sprint(got[2].events) != "[a/x:0]" || fmt.Sprint(got[3].events) != "[a/x:1]" || !got[3].at.Equal(got[2].at) {
		t.Errorf("got %+v; want x's add at 5m30s, then at once its delete", got[2:])
	}
}

// A grouped delivery that fails is retried whole: the action goes down (the
// outage breaker), one probe at a time, and when the receiver is back the
// same group arrives once; its members are marked done only then.
func TestGroupFailureRetriedWhole(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var done []string
	outbox := OutboxFunc(func(d *event.Delivery) { mu.Lock(); done = append(done, d.Payload.Name); mu.Unlock() })
	g := nsGroup()
	q, r, fc := groupQueue(t, g, QueueOptions{Outbox: outbox, Retry: Retry{Max: 100, Initial: time.Second, MaxBackoff: time.Minute}})
	r.fail = func(try int, _ *event.Delivery) error {
		if try <= 3 {
			mu.Lock()
			defer mu.Unlock()
			if len(done) != 0 {
				t.Errorf("marked done before delivery: %v", done)
			}
			return errors.New("503")
		}
		return nil
	}
	for i := range 5 {
		q.Enqueue(gdelivery("a", fmt.Sprint("cm", i), 0, event.Add, fc.Now()))
	}
	waitOnClock(t, fc, q, "the group", 5*time.Minute, func() bool { return q.Stats().Delivered == 5 })
	if got := r.sent(); len(got) != 1 || len(got[0].events) != 5 {
		t.Errorf("got %+v, want the group once, whole", got)
	}
	if st := q.Stats(); st.Outages != 1 || st.Retries != 3 || st.Failed != 0 {
		t.Errorf("stats %+v: want one outage, three retries", st)
	}
	waitFor(t, "every member marked done", 10*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(done) == 5 })
}

// A grouped delivery that fails for good (a permanent failure) is given up
// whole: every member is counted failed and finished.
func TestGroupPermanentFailureGivesUpEveryMember(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	done := 0
	outbox := OutboxFunc(func(*event.Delivery) { mu.Lock(); done++; mu.Unlock() })
	var logs logBuffer
	q, r, fc := groupQueue(t, nsGroup(), QueueOptions{Outbox: outbox, Logger: logs.logger()})
	r.fail = func(int, *event.Delivery) error { return &Failure{Err: errors.New("400"), Permanent: true} }
	for i := range 3 {
		q.Enqueue(gdelivery("a", fmt.Sprint("cm", i), 0, event.Add, fc.Now()))
	}
	waitOnClock(t, fc, q, "the group given up", time.Minute, func() bool { return q.Stats().Failed == 3 })
	waitFor(t, "every member finished", 10*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return done == 3 })
	if log := logs.String(); !strings.Contains(log, "grouped delivery failed: permanent failure") || !strings.Contains(log, "uid-a-cm2:0:add") {
		t.Errorf("log lacks the group's failure with its ids:\n%s", log)
	}
}
