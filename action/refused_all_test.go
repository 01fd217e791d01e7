package action

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A templated topic or subject the receiver refuses is one event's failure
// while the receiver takes others (retry.max bounds it). When it takes none
// (a Kafka cluster rebuilt before its topics are, the ACLs of the user
// dropped, a JetStream stream deleted and made again by its operator),
// every event's route is refused: that is the receiver down, and an outage
// of any length gives nothing up: a refusal counts against retry.max only
// once another delivery got through since the event's first refusal.
func TestRefusedEveryRouteKeepsBacklog(t *testing.T) {
	t.Parallel()
	t.Run("kafka", func(t *testing.T) {
		t.Parallel()
		c := newKfake(t, 0)
		s := buildAction(t, fmt.Sprintf(`kafka: {brokers: [%q], topic: "{{.namespace}}-events", timeout: 10s}`, c.ListenAddrs()[0]))
		checkEveryRouteRefused(t, s, func() {
			cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			req := kmsg.NewPtrCreateTopicsRequest()
			for _, name := range []string{"one-events", "two-events"} {
				rt := kmsg.NewCreateTopicsRequestTopic()
				rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, 1
				req.Topics = append(req.Topics, rt)
			}
			if _, err := req.RequestWith(context.Background(), cl); err != nil {
				t.Fatal(err)
			}
		})
	})
	t.Run("nats", func(t *testing.T) {
		t.Parallel()
		ns := startNATS(t)
		s := buildAction(t, fmt.Sprintf(`nats: {url: %q, subject: "{{.namespace}}.events"}`, ns.url()))
		checkEveryRouteRefused(t, s, func() {
			js, _ := jetstream.New(ns.connect(t))
			if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "ALL", Subjects: []string{"one.>", "two.>"}}); err != nil {
				t.Fatal(err)
			}
		})
	})
}

// checkEveryRouteRefused runs a queue over s whose every event goes where
// the receiver refuses it, for longer than retry.max refusals of each, then
// makes the routes (fix) and wants every event delivered, none given up.
func checkEveryRouteRefused(t *testing.T, s Sender, fix func()) {
	t.Helper()
	var logs logBuffer
	defer func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	}()
	const max = 2
	q := NewQueue("bus", s, QueueOptions{Concurrency: 4, Retry: Retry{Max: max, Initial: 100 * time.Millisecond, MaxBackoff: 300 * time.Millisecond}, Logger: logs.logger()})
	runQueue(t, q)
	var n uint64
	for _, ns := range []string{"one", "two"} {
		for _, o := range []string{"a", "b"} {
			q.Enqueue(nsDelivery(ns, o, 0))
			n++
		}
	}
	waitFor(t, "every event refused more than retry.max times (or given up)", 30*time.Second, func() bool {
		st := q.Stats()
		return st.Failed > 0 || st.Retries >= n*(max+2)
	})
	fix()
	waitFor(t, "the backlog delivered, or given up", 30*time.Second, func() bool {
		st := q.Stats()
		return st.Delivered+st.Failed == n
	})
	if st := q.Stats(); st.Failed != 0 {
		t.Errorf("%d of %d events given up while the receiver refused every route, %d delivered once it took them", st.Failed, n, st.Delivered)
	}
}
