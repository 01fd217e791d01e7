package action

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dynwatch/dynwatch/event"
)

// timeout, then 200 for good. Every event still arrives, in order per object,
// with exactly three retries, and the retry after the 429 waits at least 1s.
// The queue's backoff runs on a fake clock.
func TestWebhookRetriesEveryFailureKind(t *testing.T) {
	fc := newFakeClock() // the queue's backoff; the request timeout is the webhook's, in real time
	var (
		mu        sync.Mutex
		requests  int
		delivered = map[string][]int{} // object -> seqs that got 200, in arrival order
		lastFail  = map[string]time.Time{}
		afterWait = map[string]time.Duration{}
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var pl event.Payload
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &pl); err != nil {
			t.Errorf("body is not a payload: %s", body)
		}
		id := r.Header.Get("X-Dynwatch-Event-Id")
		if id != pl.ID || r.Header.Get("Content-Type") != "application/json" || r.Method != http.MethodPost {
			t.Errorf("request: id header %q, payload id %q, content type %q, method %s", id, pl.ID, r.Header.Get("Content-Type"), r.Method)
		}
		mu.Lock()
		requests++
		n := requests
		if at, ok := lastFail[id]; ok {
			afterWait[id] = fc.Since(at)
			delete(lastFail, id)
		}
		mu.Unlock()
		switch n {
		case 1:
			w.WriteHeader(http.StatusInternalServerError)
		case 2:
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			mu.Lock()
			lastFail[id] = fc.Now()
			mu.Unlock()
		case 3:
			select { // past the 300ms timeout
			case <-time.After(2 * time.Second):
			case <-r.Context().Done():
			}
		default:
			var seq struct{ Seq int }
			_ = json.Unmarshal(pl.Object, &seq)
			mu.Lock()
			delivered[pl.Name] = append(delivered[pl.Name], seq.Seq)
			mu.Unlock()
		}
	}))
	defer srv.Close()

	// maxBackoff 2s: a Retry-After is honoured up to maxBackoff.
	w := webhook(t, fmt.Sprintf(`{url: %q, timeout: 300ms, retry: {max: 5, initialBackoff: 20ms, maxBackoff: 2s}}`, srv.URL))
	q := NewQueue("hook", w, QueueOptions{Concurrency: 4, Retry: Retry{Max: 5, Initial: 20 * time.Millisecond, MaxBackoff: 2 * time.Second}, Clock: fc})
	runQueue(t, q)
	objects := []string{"a", "b", "c"}
	for seq := range 4 {
		for _, o := range objects {
			q.Enqueue(delivery(o, seq))
		}
	}
	waitOnClock(t, fc, q, "12 deliveries", 20*time.Second, func() bool { return q.Stats().Delivered == 12 })
	mu.Lock()
	defer mu.Unlock()
	for _, o := range objects {
		if got := fmt.Sprint(delivered[o]); got != "[0 1 2 3]" {
			t.Errorf("object %s delivered in order %s, want [0 1 2 3]", o, got)
		}
	}
	st := q.Stats()
	if st.Retries != 3 || st.Failed != 0 || st.Dropped != 0 || requests != 15 {
		t.Errorf("stats %+v with %d requests; want 3 retries, 15 requests", st, requests)
	}
	if len(afterWait) != 1 {
		t.Fatalf("retry after the 429 not seen: %v", afterWait)
	}
	for id, d := range afterWait {
		if d < time.Second {
			t.Errorf("%s retried %s after a 429 with Retry-After: 1", id, d)
		}
	}
}

// A 4xx other than 408 and 429 is given up at once; a 408 or a 5xx that is
// all the receiver answers is an outage: retried past retry.max (even 0),
// the action down, nothing given up. (An event refused with a 5xx while
// others get through is bounded by retry.max: TestWebhookPoisonEventIsBounded.)
func TestWebhookRetryPolicy(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		max     int
		retried bool // else given up at the first attempt
		wantMsg string
	}{
		{"400 is not retried", http.StatusBadRequest, 5, false, "permanent failure, not retried"},
		{"404 is not retried", http.StatusNotFound, 5, false, "permanent failure, not retried"},
		{"302 is not followed nor retried", http.StatusFound, 5, false, "permanent failure, not retried"},
		{"408 is retried", http.StatusRequestTimeout, 2, true, "action failing"},
		{"500 is retried past max while the receiver takes nothing", http.StatusInternalServerError, 3, true, "action failing"},
		{"503 with max 0 is retried while the receiver takes nothing", http.StatusServiceUnavailable, 0, true, "action failing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var attempts atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				attempts.Add(1)
				if tt.status == http.StatusFound {
					w.Header().Set("Location", "http://127.0.0.1:1/elsewhere")
				}
				w.WriteHeader(tt.status)
			}))
			defer srv.Close()
			var logs logBuffer
			w := webhook(t, fmt.Sprintf(`{url: %q}`, srv.URL))
			q := NewQueue("hook", w, QueueOptions{Retry: Retry{Max: tt.max, Initial: time.Millisecond, MaxBackoff: 5 * time.Millisecond}, Logger: logs.logger()})
			runQueue(t, q)
			d := delivery("x", 1)
			q.Enqueue(d)
			want := []string{tt.wantMsg, "action=hook", fmt.Sprint(tt.status)}
			if tt.retried {
				budget := int64(tt.max + 1)
				waitFor(t, "attempts past the retry budget", 10*time.Second, func() bool { return attempts.Load() > budget+2 })
				down, _ := q.Down()
				if st := q.Stats(); !down || st.Failed != 0 || st.Delivered != 0 || st.Outages != 1 {
					t.Errorf("after %d attempts (retry.max %d): down %v, stats %+v; want down, nothing given up", attempts.Load(), tt.max, down, st)
				}
				want = append(want, "level=WARN")
			} else {
				waitFor(t, "the failure", 10*time.Second, func() bool { return q.Stats().Failed == 1 })
				if n := attempts.Load(); n != 1 {
					t.Errorf("attempts = %d, want 1", n)
				}
				if st := q.Stats(); st.Retries != 0 || st.Delivered != 0 {
					t.Errorf("stats = %+v", st)
				}
				want = append(want, "level=ERROR", "id="+d.Payload.ID)
			}
			log := logs.String()
			for _, want := range want {
				if !strings.Contains(log, want) {
					t.Errorf("log lacks %q:\n%s", want, log)
				}
			}
		})
	}
}

// 50 objects, 10 updates each, a receiver that takes 20ms a request: each
// object's updates arrive in order, objects proceed in parallel up to the
// concurrency and no further, and goroutines stay bounded.
func TestSlowReceiverOrderAndParallelism(t *testing.T) {
	const objects, updates, concurrency = 50, 10, 8
	var (
		mu       sync.Mutex
		seen     = map[string][]int{}
		inFlight atomic.Int64
		maxSeen  atomic.Int64
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := maxSeen.Load(); n > m && !maxSeen.CompareAndSwap(m, n); m = maxSeen.Load() {
		}
		var pl event.Payload
		_ = json.NewDecoder(r.Body).Decode(&pl)
		var seq struct{ Seq int }
		_ = json.Unmarshal(pl.Object, &seq)
		time.Sleep(20 * time.Millisecond)
		mu.Lock()
		seen[pl.Name] = append(seen[pl.Name], seq.Seq)
		mu.Unlock()
	}))
	defer srv.Close()
	base := runtime.NumGoroutine()
	w := webhook(t, fmt.Sprintf(`{url: %q}`, srv.URL))
	q := NewQueue("hook", w, QueueOptions{Concurrency: concurrency, Size: objects * updates})
	runQueue(t, q)
	for u := range updates {
		for o := range objects {
			if !q.Enqueue(delivery(fmt.Sprint("obj", o), u)) {
				t.Fatal("enqueue refused below the queue size")
			}
		}
	}
	peak := 0
	waitFor(t, "every delivery", 60*time.Second, func() bool {
		peak = max(peak, runtime.NumGoroutine())
		return q.Stats().Delivered == objects*updates
	})
	mu.Lock()
	defer mu.Unlock()
	for o := range objects {
		if got := fmt.Sprint(seen[fmt.Sprint("obj", o)]); got != "[0 1 2 3 4 5 6 7 8 9]" {
			t.Errorf("obj%d order %s", o, got)
		}
	}
	if m := maxSeen.Load(); m < 2 || m > concurrency {
		t.Errorf("max requests in flight = %d, want between 2 and %d", m, concurrency)
	}
	// Workers, plus client and server goroutines per connection: nothing per event.
	if limit := base + 6*concurrency + 10; peak > limit {
		t.Errorf("goroutines peaked at %d (started at %d), want at most %d", peak, base, limit)
	}
}

// A full queue refuses, counts and logs; it never grows past its size and never blocks.
func TestQueueOverflow(t *testing.T) {
	block := make(chan struct{})
	var logs logBuffer
	q := NewQueue("slow", senderFunc(func(ctx context.Context, _ *event.Delivery) error {
		select {
		case <-block:
		case <-ctx.Done():
		}
		return nil
	}), QueueOptions{Size: 10, Concurrency: 1, Logger: logs.logger()})
	runQueue(t, q)
	start := time.Now()
	accepted := 0
	for i := range 1000 {
		if q.Enqueue(delivery(fmt.Sprint("o", i%7), i)) {
			accepted++
		}
		if q.Len() > 10 {
			t.Fatalf("queue holds %d, above its size 10", q.Len())
		}
	}
	if time.Since(start) > 5*time.Second {
		t.Error("Enqueue blocked")
	}
	st := q.Stats()
	if accepted != 10 || st.Dropped != 990 || st.Enqueued != 10 {
		t.Errorf("accepted %d, stats %+v", accepted, st)
	}
	if n := strings.Count(logs.String(), "queue full: event dropped"); n != 990 {
		t.Errorf("%d drop log lines, want 990", n)
	}
	close(block)
	waitFor(t, "the queue to drain", 5*time.Second, func() bool { return q.Stats().Delivered == 10 })
}

// On shutdown, queued events are delivered for up to the grace period; what is
// left after it is logged by event id. On a fake clock (testing/synctest):
// at 100ms a delivery, a 350ms grace delivers exactly three.
func TestShutdownGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs logBuffer
		var delivered atomic.Int64
		q := NewQueue("slow", senderFunc(func(ctx context.Context, d *event.Delivery) error {
			select {
			case <-time.After(100 * time.Millisecond):
				delivered.Add(1)
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}), QueueOptions{Concurrency: 1, Logger: logs.logger()})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		start := time.Now()
		go func() { done <- q.Run(ctx, 350*time.Millisecond) }()
		for i := range 10 {
			q.Enqueue(delivery("o", i))
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		if took := time.Since(start); took != 350*time.Millisecond {
			t.Errorf("Run returned %s after the stop, want the grace, 350ms", took)
		}
		n := delivered.Load()
		if n != 3 {
			t.Errorf("delivered %d in a 350ms grace at 100ms each, want 3", n)
		}
		st := q.Stats()
		if st.Abandoned != uint64(10-n) {
			t.Errorf("abandoned %d, want %d", st.Abandoned, 10-n)
		}
		for i := n; i < 10; i++ {
			if !strings.Contains(logs.String(), fmt.Sprintf("id=uid-o:%d:update", i)) {
				t.Errorf("event %d not logged as undelivered:\n%s", i, logs.String())
			}
		}
	})
}

func TestBodyTemplate(t *testing.T) {
	got := make(chan string, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- r.Header.Get("Authorization") + " " + string(b)
	}))
	defer srv.Close()
	t.Setenv("DYNWATCH_TEST_TOKEN", "s3cret")
	w := webhook(t, fmt.Sprintf(`{url: %q, headers: {Authorization: "Bearer ${DYNWATCH_TEST_TOKEN}"}, body: '{"name": {{ json .name }}, "seq": {{ .object.seq }}, "x": {{ json .fields.x }}}'}`, srv.URL))
	d := delivery("obj", 7)
	d.Payload.Fields = map[string]json.RawMessage{"x": json.RawMessage("1")}
	d.JSON, _ = json.Marshal(d.Payload)
	if err := w.Send(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	if g := <-got; g != `Bearer s3cret {"name": "obj", "seq": 7, "x": 1}` {
		t.Errorf("request = %s", g)
	}
	// A field missing from this event's data is a delivery error naming the event.
	var logs logBuffer
	q := NewQueue("hook", w, QueueOptions{Logger: logs.logger()})
	runQueue(t, q)
	d2 := delivery("obj", 8) // no fields: .fields.x is missing
	q.Enqueue(d2)
	waitFor(t, "the failure", 5*time.Second, func() bool { return q.Stats().Failed == 1 })
	if log := logs.String(); !strings.Contains(log, "id="+d2.Payload.ID) || !strings.Contains(log, "render body") {
		t.Errorf("log lacks the event id and the template error:\n%s", log)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0}, {"3", 3 * time.Second}, {"-1", 0}, {"soon", 0},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
	}
	for _, tt := range tests {
		if got := parseRetryAfter(tt.in, now); got != tt.want {
			t.Errorf("parseRetryAfter(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}
