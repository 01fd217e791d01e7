package action

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/dynwatch/dynwatch/event"
)

// The kafka sender keeps a record whose attempt timed out so that a retry
// of the same delivery takes its outcome instead of producing it twice. A
// group formed again with another member (after a hand-off or a late ack)
// starts with the same event: it is another delivery, with another key, and
// must be produced, not take the first group's acknowledgement (which
// would count its new member delivered while no record holds it). A retry
// of the first group itself still produces nothing more.
func TestKafkaReformedGroupIsProduced(t *testing.T) {
	t.Parallel()
	c := newKfake(t, 0)
	brokers := c.ListenAddrs()
	release := make(chan struct{})
	held := true
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if held {
			held = false
			c.SleepControl(func() { <-release })
		}
		return nil, nil, false
	})
	s, closer := buildKafkaAction(t, fmt.Sprintf(`kafka: {brokers: [%q], topic: ns-events, timeout: 1s}`, brokers[0]))
	t.Cleanup(func() { _ = closer.Close() })
	now := newFakeClock().Now()
	e0, e1, e2 := gdelivery("a", "x", 0, event.Add, now), gdelivery("a", "y", 0, event.Add, now), gdelivery("a", "z", 0, event.Add, now)
	group := func(ms ...*event.Delivery) *event.Delivery {
		g, err := event.NewGroupDelivery(map[string]string{"namespace": "a"}, ms)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	first := group(e0, e1)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	if err := s.Send(ctx, first); err == nil {
		t.Fatal("the held record's attempt succeeded")
	}
	cancel()
	close(release)
	waitFor(t, "the first group's record acknowledged", 10*time.Second, func() bool { return highWatermark(c.PartitionInfos("ns-events")) == 1 })
	if err := s.Send(context.Background(), group(e0, e1, e2)); err != nil {
		t.Fatalf("the re-formed group: %v", err)
	}
	if err := s.Send(context.Background(), first); err != nil {
		t.Fatalf("the first group's retry: %v", err)
	}
	n := highWatermark(c.PartitionInfos("ns-events"))
	var counts []int
	for _, r := range consumeAll(t, brokers, "ns-events", int(n)) {
		var g struct{ Count int }
		if err := json.Unmarshal(r.Value, &g); err != nil {
			t.Fatal(err)
		}
		counts = append(counts, g.Count)
	}
	if fmt.Sprint(counts) != "[2 3]" {
		t.Errorf("the topic holds groups of %v events, want [2 3]: the first group once, the re-formed one once", counts)
	}
}

// highWatermark is how many records the partitions hold in all.
func highWatermark(ps []*kfake.PartitionInfo) int64 {
	var n int64
	for _, p := range ps {
		n += p.HighWatermark
	}
	return n
}
