package action

import (
	"fmt"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/event"
)

func TestRateLimitTokensSurviveHandOff(t *testing.T) {
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

func TestRateLimitTinyRateWakesInTheFuture(t *testing.T) {
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

func TestDrainDeliversOpenGroupsDespiteRateLimit(t *testing.T) {
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
