package action

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dynwatch/dynwatch/event"
)

// A queue with an Outbox refuses none for size, tells the outbox once per
// delivery when it is done with it (delivered or given up), and at shutdown
// logs what is left as kept on disk, not lost. On a fake clock
// (testing/synctest).
func TestQueueWithOutbox(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		done := map[string]int{}
		outbox := OutboxFunc(func(d *event.Delivery) {
			mu.Lock()
			done[d.Payload.ID]++
			mu.Unlock()
		})
		block := make(chan struct{})
		s := senderFunc(func(ctx context.Context, d *event.Delivery) error {
			switch d.Key {
			case "ns/bad":
				return &Failure{Err: errors.New("400"), Permanent: true}
			case "ns/slow":
				select {
				case <-block:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			return nil
		})
		var logs logBuffer
		q := NewQueue("x", s, QueueOptions{Size: 1, Concurrency: 1, Outbox: outbox, Logger: logs.logger()})
		ctx, cancel := context.WithCancel(context.Background())
		ran := make(chan struct{})
		go func() { _ = q.Run(ctx, time.Second); close(ran) }()
		for _, d := range []*event.Delivery{delivery("ok", 0), delivery("bad", 0), delivery("slow", 0), delivery("slow", 1)} {
			if !q.Enqueue(d) {
				t.Fatalf("a queue with an outbox refused %s at size 1", d.Payload.ID)
			}
		}
		synctest.Wait()
		cancel()
		<-ran
		mu.Lock()
		defer mu.Unlock()
		if got := fmt.Sprint(done); got != "map[uid-bad:0:update:1 uid-ok:0:update:1]" {
			t.Errorf("outbox told done of %s, want the delivered and the given-up one, once each", got)
		}
		if st := q.Stats(); st.Abandoned != 2 || st.Dropped != 0 {
			t.Errorf("stats %+v: want the two slow ones left, none refused", st)
		}
		if log := logs.String(); !strings.Contains(log, "kept on disk") || strings.Contains(log, "they are lost") {
			t.Errorf("the shutdown log does not say the rest is kept on disk:\n%s", log)
		}
	})
}
