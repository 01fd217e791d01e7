package action

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// A receiver that throttles (429 with Retry-After past its rate, as chat
// services do) refuses no event: it asks the client to slow down. Each
// event of a backlog is delivered in the end, none given up as "retries
// exhausted", however many 429s the backlog meets.
func TestThrottlingReceiverGivesNothingUp(t *testing.T) {
	t.Parallel()
	var (
		mu   sync.Mutex
		next time.Time // when the receiver takes a request again
		got  = map[string][]int{}
		n429 int
	)
	const every = 20 * time.Millisecond
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		if now := time.Now(); now.Before(next) {
			n429++
			w.Header().Set("Retry-After", "1")
			http.Error(w, "slow down", http.StatusTooManyRequests)
			return
		} else {
			next = now.Add(every)
		}
		name, seq := seqOf(t, body)
		got[name] = append(got[name], seq)
	}))
	defer srv.Close()
	var logs logBuffer
	retry := Retry{Max: 3, Initial: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond}
	q := NewQueue("hook", webhook(t, fmt.Sprintf(`{url: %q, timeout: 2s}`, srv.URL)), QueueOptions{Concurrency: 4, Retry: retry, Logger: logs.logger()})
	runQueue(t, q)
	var objects []string
	for i := range 40 {
		objects = append(objects, fmt.Sprint("o", i))
		q.Enqueue(cmDelivery(objects[i], 0))
	}
	waitFor(t, "every event delivered or given up", 30*time.Second, func() bool {
		st := q.Stats()
		return st.Delivered+st.Failed == uint64(len(objects))
	})
	mu.Lock()
	defer mu.Unlock()
	if st := q.Stats(); st.Failed != 0 {
		t.Errorf("a receiver that throttled (%d answers 429 with Retry-After) had %d of %d events given up (stats %+v)", n429, st.Failed, len(objects), st)
	}
	t.Logf("%d answers 429; stats %+v", n429, q.Stats())
}
