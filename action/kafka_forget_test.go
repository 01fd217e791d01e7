package action

import (
	"fmt"
	"testing"
	"time"
)

// A delivery whose record is still unacknowledged when the queue gives up on
// it (retries exhausted) is forgotten by the producer: the map of pending
// records holds only what the queue may still retry, however long a broker
// stays away. The record itself still goes out when the broker is back, and
// before the object's next one.
func TestKafkaGivenUpDeliveryForgotten(t *testing.T) {
	t.Parallel()
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	k := buildAction(t, fmt.Sprintf(`kafka: {brokers: [%q], topic: ns-events, timeout: 1s}`, addr)).(*Kafka)
	var logs logBuffer
	q := NewQueue("bus", k, QueueOptions{Concurrency: 1, Retry: Retry{Max: 0, Initial: 10 * time.Millisecond, MaxBackoff: 10 * time.Millisecond}, Logger: logs.logger()})
	runQueue(t, q)
	q.Enqueue(cmDelivery("a", 0))
	q.Enqueue(cmDelivery("a", 1))
	waitFor(t, "both deliveries to be given up", 10*time.Second, func() bool { return q.Stats().Failed == 2 })
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
