package action

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/event"
)

// A receiver that is down for several backoff steps and comes back: while it
// is down one probe at a time goes out, the outage (with the queue depth) and
// the recovery (with how long it was down) are logged once each, and once it
// is back the whole backlog arrives within a probe interval (at least every
// 2 s, as documented), at full concurrency and in order per object, although
// the events' own backoff (maxBackoff 30s) would have them wait much longer.
// The outage and the backoff run on a fake clock.
func TestReceiverDownThenBack(t *testing.T) {
	const objects, updates, outage = 40, 3, 4 * time.Second
	var (
		down      atomic.Bool
		mu        sync.Mutex
		seen      = map[string][]int{}
		inFlight  atomic.Int64
		maxDown   atomic.Int64 // most requests in flight at once while down, after the first wave
		maxUp     atomic.Int64 // most requests in flight at once after the receiver came back
		downCalls atomic.Int64
	)
	down.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		if down.Load() {
			if downCalls.Add(1) > 4 {
				for m := maxDown.Load(); n > m && !maxDown.CompareAndSwap(m, n); m = maxDown.Load() {
				}
			}
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		for m := maxUp.Load(); n > m && !maxUp.CompareAndSwap(m, n); m = maxUp.Load() {
		}
		// A receiver that takes a moment per request: deliveries one at a
		// time would show as one in flight.
		time.Sleep(10 * time.Millisecond)
		var pl event.Payload
		if err := json.NewDecoder(r.Body).Decode(&pl); err != nil {
			t.Errorf("request body: %v", err)
		}
		var seq struct{ Seq int }
		if err := json.Unmarshal(pl.Object, &seq); err != nil {
			t.Errorf("payload object: %v", err)
		}
		mu.Lock()
		seen[pl.Name] = append(seen[pl.Name], seq.Seq)
		mu.Unlock()
	}))
	defer srv.Close()

	var logs logBuffer
	w := webhook(t, fmt.Sprintf(`{url: %q}`, srv.URL))
	fc := newFakeClock()
	q := NewQueue("hook", w, QueueOptions{Concurrency: 4, Retry: Retry{Max: 1000, Initial: 50 * time.Millisecond, MaxBackoff: 30 * time.Second}, Logger: logs.logger(), Clock: fc})
	runQueue(t, q)
	start := fc.Now()
	for u := range updates {
		for o := range objects {
			q.Enqueue(delivery(fmt.Sprint("obj", o), u))
		}
		sleepOnClock(t, fc, q, outage/updates/2)
	}
	sleepOnClock(t, fc, q, start.Add(outage).Sub(fc.Now()))
	requestsWhileDown := downCalls.Load()
	down.Store(false)
	back := fc.Now()
	waitOnClock(t, fc, q, "the backlog", 30*time.Second, func() bool { return q.Stats().Delivered == objects*updates })
	drain := fc.Since(back)
	t.Logf("outage %s: %d requests while down; backlog of %d delivered %s after the receiver came back", outage, requestsWhileDown, objects*updates, drain.Round(time.Millisecond))

	// The documented probe interval is at most 2 s; 2 s more for the backlog
	// itself on a loaded machine.
	if drain > 2*time.Second+2*time.Second {
		t.Errorf("the backlog took %s after recovery; a probe goes out at least every 2s", drain)
	}
	if m := maxUp.Load(); m != 4 {
		t.Errorf("at most %d requests in flight at once after recovery; want the full concurrency, 4", m)
	}
	if m := maxDown.Load(); m > 1 {
		t.Errorf("%d requests in flight at once while the receiver was down; want one probe at a time", m)
	}
	mu.Lock()
	for o := range objects {
		if got := fmt.Sprint(seen[fmt.Sprint("obj", o)]); got != "[0 1 2]" {
			t.Errorf("obj%d order %s", o, got)
		}
	}
	mu.Unlock()
	st := q.Stats()
	if st.Failed != 0 || st.Outages != 1 {
		t.Errorf("stats %+v: want no failure and one outage", st)
	}
	log := logs.String()
	for _, want := range []string{"level=WARN msg=\"action failing", "503 Service Unavailable", "level=INFO msg=\"action recovered", "waited=120"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	// The WARN gives the queue depth, the INFO how long the action was down.
	if m := regexp.MustCompile(`action failing[^\n]* queued=(\d+)`).FindStringSubmatch(log); m == nil || m[1] == "0" {
		t.Errorf("the outage WARN gives no queue depth (%q):\n%s", m, log)
	}
	if m := regexp.MustCompile(`action recovered[^\n]* downFor=(\S+)`).FindStringSubmatch(log); m == nil {
		t.Errorf("the recovery INFO gives no down time:\n%s", log)
	} else if d, err := time.ParseDuration(m[1]); err != nil || d < outage-time.Second || d > outage+5*time.Second {
		t.Errorf("the recovery INFO says down for %s (%v); the receiver was down about %s", m[1], err, outage)
	}
	if n := strings.Count(log, "action failing"); n != 1 {
		t.Errorf("the outage was logged %d times", n)
	}
	if strings.Contains(log, srv.URL[len("http://127.0.0.1"):]+"/") {
		t.Errorf("log shows the URL's path")
	}
}

// A command that fails on one object only backs off that object alone: the
// action never counts as down, the other objects are delivered meanwhile, the
// first failure is a WARN with the reason, and exhausted retries an ERROR.
// The backoff runs on a fake clock.
func TestOneEventFailsAlone(t *testing.T) {
	f, err := config.Parse("t.yaml", []byte(`apiVersion: dynwatch/v1alpha1
actions:
  - name: x
    exec: {command: [/bin/sh, -c, 'cat >/dev/null; if [ "$DYNWATCH_NAME" = bad ]; then echo "no such widget" >&2; exit 3; fi']}
rules: [{name: r, resources: [{kind: ConfigMap}], actions: [x]}]
`))
	if err != nil {
		t.Fatal(err)
	}
	var logs logBuffer
	fc := newFakeClock()
	q := NewQueue("x", NewExec(f.Config.Actions[0].Exec), QueueOptions{Concurrency: 2, Retry: Retry{Max: 2, Initial: 300 * time.Millisecond, MaxBackoff: time.Second}, Logger: logs.logger(), Clock: fc})
	runQueue(t, q)
	q.Enqueue(delivery("bad", 0))
	for o := range 10 {
		q.Enqueue(delivery(fmt.Sprint("ok", o), 0))
	}
	waitOnClock(t, fc, q, "the good objects", 10*time.Second, func() bool { return q.Stats().Delivered == 10 })
	if st := q.Stats(); st.Failed != 0 {
		t.Errorf("the bad object gave up before the others were delivered: %+v", st)
	}
	waitOnClock(t, fc, q, "the bad object to give up", 10*time.Second, func() bool { return q.Stats().Failed == 1 })
	if down, _ := q.Down(); down || q.Stats().Outages != 0 {
		t.Errorf("one failing event took the action down: %+v", q.Stats())
	}
	log := logs.String()
	for _, want := range []string{"level=WARN", "no such widget", "exit status 3", "level=ERROR msg=\"delivery failed: retries exhausted\"", "attempts=3"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

// A queue handed off to new settings keeps its backlog in order ahead of what
// the new queue got meanwhile, and an event enqueued into the old queue after
// it has stopped (a handler that still held the old pipeline) reaches the new
// one instead of being dropped. It runs on a fake clock (testing/synctest).
func TestHandOffKeepsOrderAndForwards(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var got []int
		up := make(chan struct{})
		sender := senderFunc(func(ctx context.Context, d *event.Delivery) error {
			select {
			case <-up:
			default:
				return errors.New("receiver down")
			}
			var seq struct{ Seq int }
			_ = json.Unmarshal(d.Payload.Object, &seq)
			mu.Lock()
			got = append(got, seq.Seq)
			mu.Unlock()
			return nil
		})
		retry := Retry{Max: 1000, Initial: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond}
		old := NewQueue("hook", sender, QueueOptions{Retry: retry})
		oldDone := make(chan struct{})
		go func() {
			if err := old.Run(context.Background(), time.Second); err != nil {
				t.Errorf("the old queue's Run: %v", err)
			}
			close(oldDone)
		}()
		for seq := range 3 {
			old.Enqueue(delivery("obj", seq))
		}
		next := NewQueue("hook", sender, QueueOptions{Retry: retry})
		old.HandOff(next)
		next.Enqueue(delivery("obj", 3)) // the new pipeline's first event
		runQueue(t, next)
		select {
		case <-oldDone:
		case <-time.After(10 * time.Second):
			t.Fatal("the handed-off queue's Run did not return within 10s")
		}
		if !old.Enqueue(delivery("obj", 4)) { // late, through the old pipeline
			t.Fatal("an event enqueued into a handed-off queue was refused")
		}
		close(up)
		waitFor(t, "five deliveries", 10*time.Second, func() bool { return next.Stats().Delivered == 5 })
		mu.Lock()
		defer mu.Unlock()
		if fmt.Sprint(got) != "[0 1 2 3 4]" {
			t.Errorf("delivered in order %v, want [0 1 2 3 4]", got)
		}
		if st := old.Stats(); st.Dropped != 0 || st.Abandoned != 0 {
			t.Errorf("the old queue dropped or abandoned events: %+v", st)
		}
	})
}

// A failure of one event that says when to try again (Retry-After) is tried
// again then, not at the action's shorter backoff.
func TestOneEventRetryAfterIsHonoured(t *testing.T) {
	t.Parallel()
	fc := newFakeClock()
	var mu sync.Mutex
	var attempts []time.Time
	sender := senderFunc(func(context.Context, *event.Delivery) error {
		mu.Lock()
		defer mu.Unlock()
		attempts = append(attempts, fc.Now())
		if len(attempts) == 1 {
			return &Failure{Err: errors.New("busy"), OneEvent: true, RetryAfter: 20 * time.Second}
		}
		return nil
	})
	var logs logBuffer
	q := NewQueue("x", sender, QueueOptions{Retry: Retry{Max: 3, Initial: 100 * time.Millisecond, MaxBackoff: time.Minute}, Logger: logs.logger(), Clock: fc})
	runQueue(t, q)
	q.Enqueue(delivery("a", 0))
	waitOnClock(t, fc, q, "the second attempt", time.Minute, func() bool { return q.Stats().Delivered == 1 })
	mu.Lock()
	defer mu.Unlock()
	if len(attempts) != 2 {
		t.Fatalf("%d attempts, want 2", len(attempts))
	}
	if wait := attempts[1].Sub(attempts[0]); wait < 20*time.Second {
		t.Errorf("tried again %s after a Retry-After of 20s", wait)
	}
}
