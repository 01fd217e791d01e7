package action

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/event"
)

// A Retry-After longer than maxBackoff waits maxBackoff: for the probe of an
// action that is down, and for an attempt that was in flight when it went down.
// On a fake clock.
func TestRetryAfterIsClampedToMaxBackoff(t *testing.T) {
	t.Parallel()
	var requests atomic.Int64
	both := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n := requests.Add(1); n <= 2 {
			if n == 2 {
				once.Do(func() { close(both) })
			}
			<-both // both first attempts are in flight before either fails
			w.Header().Set("Retry-After", "3600")
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	w := webhook(t, `{url: "`+srv.URL+`"}`)
	var logs logBuffer
	fc := newFakeClock()
	q := NewQueue("hook", w, QueueOptions{Concurrency: 2, Retry: Retry{Max: 5, Initial: 10 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}, Logger: logs.logger(), Clock: fc})
	runQueue(t, q)
	q.Enqueue(delivery("a", 1))
	q.Enqueue(delivery("b", 1))
	waitOnClock(t, fc, q, "both deliveries after maxBackoff, not after Retry-After: 3600", 10*time.Second, func() bool { return q.Stats().Delivered == 2 })
}

// A drain that nothing can use stops at once: the action is down with its
// next probe past the grace period, or each event backs off past it. A drain
// with an attempt due within the grace period waits for it and delivers. On a
// fake clock.
func TestShutdownDrainStopsWhenNothingIsDueWithinGrace(t *testing.T) {
	t.Parallel()
	const grace = 20 * time.Second
	retryAfter := &Failure{Err: errors.New("503"), RetryAfter: time.Hour}
	tests := []struct {
		name      string
		retry     Retry
		fail      *Failure // every first attempt's failure
		failAgain bool     // later attempts fail too
		want      Stats
		wantLog   string
	}{
		{"down, probe after the grace", Retry{Max: 5, Initial: time.Millisecond, MaxBackoff: time.Hour}, retryAfter, true,
			Stats{Enqueued: 2, Abandoned: 2, Outages: 1, Peak: 2}, "nothing can be attempted"},
		{"events back off past the grace", Retry{Max: 5, Initial: time.Hour, MaxBackoff: time.Hour}, &Failure{Err: errors.New("exit 1"), OneEvent: true}, true,
			Stats{Enqueued: 2, Abandoned: 2, Peak: 2}, "nothing can be attempted"},
		{"a retry due within the grace", Retry{Max: 5, Initial: 200 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}, &Failure{Err: errors.New("exit 1"), OneEvent: true}, false,
			Stats{Enqueued: 2, Delivered: 2, Retries: 2, Peak: 2}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			tried := map[string]int{}
			s := senderFunc(func(_ context.Context, d *event.Delivery) error {
				mu.Lock()
				defer mu.Unlock()
				tried[d.Key]++
				if tried[d.Key] == 1 || tt.failAgain {
					return tt.fail
				}
				return nil
			})
			var logs logBuffer
			fc := newFakeClock()
			q := NewQueue("x", s, QueueOptions{Retry: tt.retry, Logger: logs.logger(), Clock: fc})
			cancel, took := runFor(q, grace)
			q.Enqueue(delivery("a", 1))
			q.Enqueue(delivery("b", 1))
			waitFor(t, "the action to go down or both first attempts", 10*time.Second, func() bool {
				mu.Lock()
				defer mu.Unlock()
				down, _ := q.Down()
				return down || len(tried) == 2
			})
			cancel()
			// The clock never reaches the end of the grace period: the drain
			// ends by itself, or the test fails.
			waitOnClock(t, fc, q, "Run to return", grace/2, func() bool {
				select {
				case d := <-took:
					if d > grace/2 {
						t.Errorf("the drain took %s", d)
					}
					return true
				default:
					return false
				}
			})
			if st := q.Stats(); st != tt.want {
				t.Errorf("stats = %+v, want %+v\n%s", st, tt.want, logs.String())
			}
			if !strings.Contains(logs.String(), tt.wantLog) {
				t.Errorf("logs lack %q:\n%s", tt.wantLog, logs.String())
			}
		})
	}
}
