package action

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/dynwatch/dynwatch/event"
)

// bigDelivery is cmDelivery(obj, 0) with an object of about size bytes: a
// ConfigMap near its 1 MiB limit, whose update carries it twice.
func bigDelivery(obj string, size int) *event.Delivery {
	d := cmDelivery(obj, 0)
	d.Payload.Object = json.RawMessage(fmt.Sprintf(`{"seq":0,"data":%q}`, strings.Repeat("x", size)))
	d.JSON, _ = json.Marshal(d.Payload)
	return d
}

// checkTooLargeFailsAlone runs s behind a queue that would retry for ever,
// enqueues an event too large for the receiver and then one of another
// object: the large one fails for good at once, the other is delivered, and
// the action never goes down (the receiver is fine; that message never fits).
func checkTooLargeFailsAlone(t *testing.T, s Sender, big *event.Delivery) {
	t.Helper()
	var logs logBuffer
	q := NewQueue("sink", s, QueueOptions{Concurrency: 1, Retry: Retry{Max: 1000, Initial: 50 * time.Millisecond, MaxBackoff: time.Second}, Logger: logs.logger()})
	runQueue(t, q)
	q.Enqueue(big)
	q.Enqueue(cmDelivery("small", 0))
	waitFor(t, "the large event to fail and the small one to arrive", 10*time.Second, func() bool {
		st := q.Stats()
		return st.Failed == 1 && st.Delivered == 1
	})
	if st := q.Stats(); st.Outages != 0 || st.Retries != 0 {
		t.Errorf("an event too large made the action down %d times, %d retries", st.Outages, st.Retries)
	}
	if !strings.Contains(logs.String(), "permanent failure") {
		t.Errorf("the large event is not logged as a permanent failure:\n%s", logs.String())
	}
}

// A record over the producer's (and the broker's default) 1 MB limit.
func TestKafkaRecordTooLargeFailsAlone(t *testing.T) {
	t.Parallel()
	c := newKfake(t, 0)
	s := buildAction(t, fmt.Sprintf(`kafka: {brokers: [%q], topic: ns-events, timeout: 2s}`, c.ListenAddrs()[0]))
	checkTooLargeFailsAlone(t, s, bigDelivery("big", 1100000))
}

// A message over the server's max_payload (1 MB by default), and one over a
// stream's max_msg_size.
func TestNATSMessageTooLargeFailsAlone(t *testing.T) {
	t.Parallel()
	ns := startNATS(t)
	ns.stream(t)
	t.Run("max_payload", func(t *testing.T) {
		s := buildAction(t, fmt.Sprintf(`nats: {url: %q, subject: dw.events, timeout: 2s}`, ns.url()))
		checkTooLargeFailsAlone(t, s, bigDelivery("big", 1100000))
	})
	t.Run("max_msg_size", func(t *testing.T) {
		js, _ := jetstream.New(ns.connect(t))
		if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "SMALL", Subjects: []string{"small.>"}, MaxMsgSize: 4096}); err != nil {
			t.Fatal(err)
		}
		s := buildAction(t, fmt.Sprintf(`nats: {url: %q, subject: small.events, timeout: 2s}`, ns.url()))
		checkTooLargeFailsAlone(t, s, bigDelivery("big", 8192))
	})
}
