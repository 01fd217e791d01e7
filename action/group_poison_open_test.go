//go:build opendefects

// Tests of defects still open: they fail today, so they build only with
// -tags opendefects
// (go test -tags opendefects -run TestGroupedPoisonDeliveryIsBounded ./action/).

package action

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// A grouped action whose receiver answers 500 to one grouped delivery for
// ever while it takes every other: that delivery cannot hold the action for
// ever either. A group's deliveries follow one another (they share one
// pending list), so while the poison delivery is the head no other is tried
// and none gets through "since its previous attempt": the queue must still
// find out that the receiver takes the others, and give the poison one up
// after retry.max, as it does for a plain delivery
// (TestWebhookPoisonEventIsBounded). One group for the whole action (no
// `by`), a real receiver on loopback and the real clock.
func TestGroupedPoisonDeliveryIsBounded(t *testing.T) {
	t.Parallel()
	const poison = "poison"
	var (
		mu  sync.Mutex
		got = map[string][]int{}
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), `"name":"`+poison+`"`) {
			http.Error(w, "cannot store this one", http.StatusInternalServerError)
			return
		}
		var g struct {
			Events []json.RawMessage
		}
		if err := json.Unmarshal(body, &g); err != nil {
			t.Errorf("not a grouped delivery: %s", body)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for _, e := range g.Events {
			name, seq := seqOf(t, e)
			got[name] = append(got[name], seq)
		}
	}))
	defer srv.Close()
	var logs logBuffer
	retry := Retry{Max: 2, Initial: 20 * time.Millisecond, MaxBackoff: 50 * time.Millisecond}
	q := NewQueue("hook", webhook(t, fmt.Sprintf(`{url: %q, timeout: 2s}`, srv.URL)), QueueOptions{
		Concurrency: 4, Retry: retry, Logger: logs.logger(),
		Group: &GroupOptions{Wait: 5 * time.Millisecond, Interval: 5 * time.Millisecond, Max: 1},
	})
	runQueue(t, q)
	q.Enqueue(cmDelivery(poison, 0))
	objects := []string{"a", "b", "c"}
	sent := map[string]int{}
	for end := time.Now().Add(5 * time.Second); q.Stats().Failed == 0 && time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		o := objects[(sent["a"]+sent["b"]+sent["c"])%len(objects)]
		q.Enqueue(cmDelivery(o, sent[o]))
		sent[o]++
	}
	others := sent["a"] + sent["b"] + sent["c"]
	deadline := time.Now().Add(5 * time.Second)
	for st := q.Stats(); st.Failed != 1 || st.Delivered != uint64(others); st = q.Stats() {
		if time.Now().After(deadline) {
			down, since := q.Down()
			t.Fatalf("a poison grouped delivery and %d other events: after 10s %d given up, %d of the others delivered, action down=%v since %s; want the poison one given up after retry.max and the others delivered (stats %+v)\n%s",
				others, st.Failed, st.Delivered, down, since.Format(time.StampMilli), st, tailLines(logs.String(), 8))
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, o := range objects {
		checkOrder(t, got, []string{o}, sent[o], false)
	}
	if log := logs.String(); !strings.Contains(log, `level=ERROR msg="grouped delivery failed: retries exhausted"`) {
		t.Errorf("the poison delivery's end is not logged as an ERROR:\n%s", tailLines(log, 8))
	}
}

// tailLines is the last n lines of s.
func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
