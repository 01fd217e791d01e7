package action

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/event"
)

// An outage far longer than the retry budget gives nothing up: with retry
// {max: 3, initialBackoff: 200ms, maxBackoff: 500ms} and a receiver down for
// 15s while 10 events come, every event waits, none is given up or marked
// done (with state, done removes it from disk), and once the receiver is back
// all 10 arrive, each object's in order. The outage runs on a fake clock; the
// queue is run without state (in memory) and with an outbox.
func TestOutageLongerThanRetryBudgetKeepsBacklog(t *testing.T) {
	t.Parallel()
	for _, durable := range []bool{false, true} {
		name := "in memory"
		if durable {
			name = "with an outbox"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var (
				down atomic.Bool
				mu   sync.Mutex
				got  = map[string][]int{}
				done []string
			)
			down.Store(true)
			sender := senderFunc(func(_ context.Context, d *event.Delivery) error {
				if down.Load() {
					return &Failure{Err: errors.New("POST http://127.0.0.1: 503 Service Unavailable")}
				}
				name, seq := seqOf(t, d.JSON)
				mu.Lock()
				got[name] = append(got[name], seq)
				mu.Unlock()
				return nil
			})
			var logs logBuffer
			fc := newFakeClock()
			opts := QueueOptions{Concurrency: 4, Retry: Retry{Max: 3, Initial: 200 * time.Millisecond, MaxBackoff: 500 * time.Millisecond}, Logger: logs.logger(), Clock: fc}
			if durable {
				opts.Outbox = OutboxFunc(func(d *event.Delivery) { mu.Lock(); done = append(done, d.Payload.ID); mu.Unlock() })
			}
			q := NewQueue("hook", sender, opts)
			runQueue(t, q)
			var objects []string
			for o := range 5 {
				objects = append(objects, fmt.Sprint("obj", o))
			}
			for seq := range 2 {
				for _, o := range objects {
					q.Enqueue(delivery(o, seq))
				}
				sleepOnClock(t, fc, q, time.Second)
			}
			sleepOnClock(t, fc, q, 13*time.Second)
			st := q.Stats()
			mu.Lock()
			doneWhileDown := len(done)
			mu.Unlock()
			if st.Failed != 0 || doneWhileDown != 0 {
				t.Errorf("during a 15s outage: %d of 10 events given up, %d marked done; want none (stats %+v)", st.Failed, doneWhileDown, st)
			}
			if isDown, _ := q.Down(); !isDown {
				t.Errorf("the action is not down after 15s of 503s")
			}
			down.Store(false)
			waitOnClock(t, fc, q, "every event delivered or given up", 10*time.Second, func() bool {
				st := q.Stats()
				return st.Delivered+st.Failed == 10
			})
			if st := q.Stats(); st.Delivered != 10 || st.Failed != 0 {
				t.Fatalf("after the receiver came back: %d delivered, %d given up; want all 10 delivered (stats %+v)\n%s", st.Delivered, st.Failed, st, logs.String())
			}
			mu.Lock()
			defer mu.Unlock()
			checkOrder(t, got, objects, 2, false)
			if durable && len(done) != 10 {
				t.Errorf("%d events marked done, want 10", len(done))
			}
			if log := logs.String(); strings.Contains(log, "retries exhausted") || strings.Count(log, "action failing") != 1 {
				t.Errorf("want one outage logged and nothing given up:\n%s", log)
			}
		})
	}
}

// The same against a real receiver on loopback and the real clock: a webhook
// whose receiver answers 503 for about a second, far past a retry budget of
// {max: 1, initialBackoff: 20ms, maxBackoff: 50ms}, while 10 events come:
// none is given up, and all arrive in order per object once it answers 200.
func TestWebhookOutageLongerThanRetryBudget(t *testing.T) {
	t.Parallel()
	var (
		mu       sync.Mutex
		got      = map[string][]int{}
		refused  atomic.Int64
		downTill = time.Now().Add(time.Second)
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if time.Now().Before(downTill) {
			refused.Add(1)
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		name, seq := seqOf(t, body)
		mu.Lock()
		got[name] = append(got[name], seq)
		mu.Unlock()
	}))
	defer srv.Close()
	var logs logBuffer
	retry := Retry{Max: 1, Initial: 20 * time.Millisecond, MaxBackoff: 50 * time.Millisecond}
	q := NewQueue("hook", webhook(t, fmt.Sprintf(`{url: %q, timeout: 2s}`, srv.URL)), QueueOptions{Concurrency: 4, Retry: retry, Logger: logs.logger()})
	runQueue(t, q)
	objects := []string{"a", "b", "c", "d", "e"}
	for seq := range 2 {
		for _, o := range objects {
			q.Enqueue(delivery(o, seq))
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor(t, "every event delivered or given up", 20*time.Second, func() bool {
		st := q.Stats()
		return st.Delivered+st.Failed == 10
	})
	st := q.Stats()
	t.Logf("%d requests refused during the outage; stats %+v", refused.Load(), st)
	if st.Delivered != 10 || st.Failed != 0 {
		t.Fatalf("%d delivered, %d given up; want all 10 delivered after the outage\n%s", st.Delivered, st.Failed, logs.String())
	}
	mu.Lock()
	defer mu.Unlock()
	checkOrder(t, got, objects, 2, false)
}

// A receiver that answers 500 to one event for ever while it takes every
// other: that event cannot hold the action for ever. Its failures count
// against retry.max because other deliveries get through between its
// attempts; the others keep arriving while it retries (it is no probe that
// holds them back), and it is given up, logged as an ERROR with its id and
// counted, while every other event arrives in order. With one worker and
// with four.
func TestWebhookPoisonEventIsBounded(t *testing.T) {
	t.Parallel()
	for _, concurrency := range []int{1, 4} {
		t.Run(fmt.Sprint("concurrency ", concurrency), func(t *testing.T) {
			t.Parallel()
			poisonEventBounded(t, concurrency)
		})
	}
}

func poisonEventBounded(t *testing.T, concurrency int) {
	const poison = "poison"
	var (
		mu    sync.Mutex
		got   = map[string][]int{}
		trace []string // "poison" or "ok", in the order the receiver answered
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		name, seq := seqOf(t, body)
		mu.Lock()
		defer mu.Unlock()
		if name == poison {
			trace = append(trace, poison)
			http.Error(w, "cannot store this one", http.StatusInternalServerError)
			return
		}
		trace = append(trace, "ok")
		got[name] = append(got[name], seq)
	}))
	defer srv.Close()
	var logs logBuffer
	retry := Retry{Max: 2, Initial: 20 * time.Millisecond, MaxBackoff: 50 * time.Millisecond}
	q := NewQueue("hook", webhook(t, fmt.Sprintf(`{url: %q, timeout: 2s}`, srv.URL)), QueueOptions{Concurrency: concurrency, Retry: retry, Logger: logs.logger()})
	runQueue(t, q)
	p := delivery(poison, 0)
	q.Enqueue(p)
	// The other objects' events keep coming, as on a live cluster, until the
	// poison event is given up (or for 10s at most).
	objects := []string{"a", "b", "c"}
	sent := map[string]int{}
	for end := time.Now().Add(10 * time.Second); q.Stats().Failed == 0 && time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		o := objects[(sent["a"]+sent["b"]+sent["c"])%len(objects)]
		q.Enqueue(delivery(o, sent[o]))
		sent[o]++
	}
	others := sent["a"] + sent["b"] + sent["c"]
	waitFor(t, "the poison event given up and the others delivered", 10*time.Second, func() bool {
		st := q.Stats()
		return st.Failed == 1 && st.Delivered == uint64(others)
	})
	mu.Lock()
	defer mu.Unlock()
	first, last := -1, -1
	for i, s := range trace {
		if s == poison {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	between := 0
	for _, s := range trace[first:last] {
		if s == "ok" {
			between++
		}
	}
	t.Logf("the poison event was tried %d times; %d other deliveries between its first and last attempt; stats %+v", strings.Count(strings.Join(trace, " "), poison), between, q.Stats())
	// Each of its failures after the first counts only once another delivery
	// got through since its previous attempt. (With several workers the
	// receiver may answer one before the queue hears of another: its order
	// is not the queue's.)
	if concurrency == 1 && between < retry.Max+1 {
		t.Errorf("%d other deliveries between the poison event's first and last attempts; want at least %d (the others are held behind it)", between, retry.Max+1)
	}
	for _, o := range objects {
		checkOrder(t, got, []string{o}, sent[o], false)
	}
	log := logs.String()
	for _, want := range []string{`level=ERROR msg="delivery failed: retries exhausted"`, "id=" + p.Payload.ID, "500 Internal Server Error", "cannot store this one"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

// An outage gives nothing up however long it lasts, so the logs say again
// that the action is still down: every 10 minutes, with how long it has been
// down, what waits and the receiver's error. With retry.max 0, 25 minutes on
// a fake clock: two reminders, nothing given up, and the event delivered
// once the receiver is back.
func TestLongOutageSaysSoAgain(t *testing.T) {
	t.Parallel()
	var down atomic.Bool
	down.Store(true)
	sender := senderFunc(func(context.Context, *event.Delivery) error {
		if down.Load() {
			return &Failure{Err: errors.New("POST http://127.0.0.1: 503 Service Unavailable")}
		}
		return nil
	})
	var logs logBuffer
	fc := newFakeClock()
	q := NewQueue("hook", sender, QueueOptions{Retry: Retry{Max: 0, Initial: time.Second, MaxBackoff: 5 * time.Minute}, Logger: logs.logger(), Clock: fc})
	runQueue(t, q)
	q.Enqueue(delivery("a", 0))
	sleepOnClock(t, fc, q, 25*time.Minute)
	reminders := regexp.MustCompile(`level=WARN msg="action still failing[^\n]* downFor=(\S+) queued=1 [^\n]*503 Service Unavailable`).FindAllStringSubmatch(logs.String(), -1)
	if len(reminders) != 2 {
		t.Errorf("%d reminders in a 25-minute outage, want 2 (every 10 minutes):\n%s", len(reminders), reminders)
	}
	for i, m := range reminders {
		// At the first probe after each 10 minutes (a probe every 2s).
		if d, err := time.ParseDuration(m[1]); err != nil || d < time.Duration(i+1)*10*time.Minute || d > time.Duration(i+1)*10*time.Minute+time.Minute {
			t.Errorf("reminder %d says down for %s, want just past %dm", i+1, m[1], (i+1)*10)
		}
	}
	if st := q.Stats(); st.Failed != 0 || st.Outages != 1 {
		t.Errorf("stats %+v: want one outage, nothing given up", st)
	}
	down.Store(false)
	waitOnClock(t, fc, q, "the event", 10*time.Second, func() bool { return q.Stats().Delivered == 1 })
}
