package action

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/event"
)

// A delivery whose record is still unacknowledged when the queue gives up on
// it (retries exhausted) is forgotten by the producer: the map of pending
// records holds only what the queue may still retry. The record itself still
// goes out when the broker is back, and before the object's next one.
//
// An outage gives nothing up, so the scene is an event the receiver fails
// while it takes others: object a's records wait on a broker that cannot be
// reached, while the same action delivers object z's events elsewhere (a
// stand-in for the partitions whose brokers answer), which makes a's
// failures count against retry.max.
func TestKafkaGivenUpDeliveryForgotten(t *testing.T) {
	t.Parallel()
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	k := buildAction(t, fmt.Sprintf(`kafka: {brokers: [%q], topic: ns-events, timeout: 1s}`, addr)).(*Kafka)
	var logs logBuffer
	q := NewQueue("bus", othersAccepted{k}, QueueOptions{Concurrency: 1, Retry: Retry{Max: 0, Initial: 10 * time.Millisecond, MaxBackoff: 10 * time.Millisecond}, Logger: logs.logger()})
	runQueue(t, q)
	q.Enqueue(cmDelivery("a", 0))
	q.Enqueue(cmDelivery("a", 1))
	for seq := range 6 {
		q.Enqueue(cmDelivery("z", seq))
	}
	waitFor(t, "both deliveries to be given up", 20*time.Second, func() bool { return q.Stats().Failed == 2 })
	k.mu.Lock()
	left := len(k.pending)
	k.mu.Unlock()
	if left != 0 {
		t.Errorf("%d records still kept after the queue gave up on their deliveries", left)
	}
	newKfake(t, port)
	var seqs []int
	for _, r := range consumeAll(t, []string{addr}, "ns-events", 2) {
		_, seq := seqOf(t, r.Value)
		seqs = append(seqs, seq)
	}
	if len(seqs) != 2 || seqs[0] != 0 || seqs[1] != 1 {
		t.Errorf("records of object a arrived as %v, want [0 1]", seqs)
	}
}

// othersAccepted sends object z's deliveries nowhere, successfully, and the
// others through k.
type othersAccepted struct{ k *Kafka }

func (o othersAccepted) Send(ctx context.Context, d *event.Delivery) error {
	if d.Payload.Name == "z" {
		return nil
	}
	return o.k.Send(ctx, d)
}

func (o othersAccepted) Finished(d *event.Delivery) { o.k.Finished(d) }
