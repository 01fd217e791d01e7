package action

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/dynwatch/dynwatch/event"
)

// nsDelivery is cmDelivery of ConfigMap obj in namespace ns.
func nsDelivery(ns, obj string, seq int) *event.Delivery {
	d := cmDelivery(obj, seq)
	d.Payload.Namespace = ns
	d.Key = "configmaps/" + ns + "/" + obj
	d.JSON, _ = json.Marshal(d.Payload)
	return d
}

// checkRefusedAlone runs a queue over s, whose topic or subject template
// sends bad to where, which the receiver refuses, and events of namespace ns
// elsewhere, which it takes: the refused event retries on its own schedule
// and is given up once its retries are exhausted, logged with where, while
// the others go on; the action is never down.
func checkRefusedAlone(t *testing.T, s Sender, bad *event.Delivery, where string) {
	t.Helper()
	var logs logBuffer
	defer func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	}()
	q := NewQueue("bus", s, QueueOptions{Concurrency: 4, Retry: Retry{Max: 2, Initial: time.Second, MaxBackoff: 2 * time.Second}, Logger: logs.logger()})
	runQueue(t, q)
	objects := []string{"a", "b", "c"}
	const n = 6
	q.Enqueue(bad)
	for seq := range n / 2 {
		for _, o := range objects {
			q.Enqueue(cmDelivery(o, seq))
		}
	}
	waitFor(t, "the refused event's first failure", 30*time.Second, func() bool { return strings.Contains(logs.String(), where) })
	for seq := n / 2; seq < n; seq++ {
		for _, o := range objects {
			q.Enqueue(cmDelivery(o, seq))
		}
	}
	good := uint64(n * len(objects))
	waitFor(t, "the other events to be delivered", 30*time.Second, func() bool { return q.Stats().Delivered == good })
	if f := q.Stats().Failed; f != 0 {
		t.Errorf("the other events were all delivered only after the refused one was given up (failed: %d): they waited for it", f)
	}
	waitFor(t, "the refused event to be given up", 30*time.Second, func() bool { return q.Stats().Failed == 1 })
	st := q.Stats()
	if st.Outages != 0 {
		t.Errorf("the action went down %d time(s) for one event's refused %s", st.Outages, where)
	}
	var exhausted string
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "retries exhausted") {
			exhausted = line
		}
	}
	if !strings.Contains(exhausted, where) || !strings.Contains(exhausted, bad.Payload.ID) || !strings.Contains(exhausted, "counted=3") {
		t.Errorf("want an ERROR naming %s and %s after 3 counted failures; got %q", where, bad.Payload.ID, exhausted)
	}
	if st.Delivered != good {
		t.Errorf("%d delivered, want %d", st.Delivered, good)
	}
}

// A templated topic the broker refuses for one event (it does not exist and
// is not created, or the user may not write to it) fails that event alone:
// it is retried on its own and given up, and the events to topics the broker
// takes keep flowing; the action stays up.
func TestKafkaRefusedTopicFailsOneEvent(t *testing.T) {
	t.Parallel()
	t.Run("unknown topic", func(t *testing.T) {
		t.Parallel()
		c := newKfake(t, 0)
		s := buildAction(t, fmt.Sprintf(`kafka: {brokers: [%q], topic: "{{.namespace}}-events", timeout: 10s}`, c.ListenAddrs()[0]))
		checkRefusedAlone(t, s, nsDelivery("gone", "x", 0), "gone-events")
	})
	t.Run("topic not authorized", func(t *testing.T) {
		t.Parallel()
		acls := []kfake.ACL{
			{Resource: kmsg.ACLResourceTypeTopic, Name: "*", Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationDescribe, Allow: true},
			{Resource: kmsg.ACLResourceTypeTopic, Name: "ns-events", Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationWrite, Allow: true},
		}
		c := newKfake(t, 0, kfake.SeedTopics(1, "secret-events"), kfake.EnableSASL(), kfake.EnableACLs(), kfake.User("PLAIN", "dynwatch", "s3cret", acls...))
		s := buildAction(t, fmt.Sprintf(`kafka: {brokers: [%q], topic: "{{.namespace}}-events", timeout: 10s, sasl: {mechanism: PLAIN, username: dynwatch, password: s3cret}}`, c.ListenAddrs()[0]))
		checkRefusedAlone(t, s, nsDelivery("secret", "x", 0), "secret-events")
	})
}

// A templated subject that no stream captures fails that event alone on
// JetStream: it is retried on its own and given up, and the events to
// subjects a stream captures keep flowing; the action stays up.
func TestNATSUncapturedSubjectFailsOneEvent(t *testing.T) {
	t.Parallel()
	ns := startNATS(t)
	js, _ := jetstream.New(ns.connect(t))
	if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "NS", Subjects: []string{"ns.>"}}); err != nil {
		t.Fatal(err)
	}
	s := buildAction(t, fmt.Sprintf(`nats: {url: %q, subject: "{{.namespace}}.events"}`, ns.url()))
	checkRefusedAlone(t, s, nsDelivery("gone", "x", 0), "gone.events")
}

// A plain topic or subject the receiver refuses refuses every event: that is
// the action down (one probe at a time, the backlog kept), not each event's
// failure counted against its retries.
func TestRefusedPlainRouteIsOutage(t *testing.T) {
	t.Parallel()
	c := newKfake(t, 0)
	ns := startNATS(t)
	for name, spec := range map[string]string{
		"kafka": fmt.Sprintf(`kafka: {brokers: [%q], topic: gone-events, timeout: 10s}`, c.ListenAddrs()[0]),
		"nats":  fmt.Sprintf(`nats: {url: %q, subject: gone.events}`, ns.url()),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := buildAction(t, spec)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err := s.Send(ctx, cmDelivery("a", 0))
			var f *Failure
			if !errors.As(err, &f) || f.OneEvent || f.Permanent || !strings.Contains(err.Error(), "gone") {
				t.Errorf("got %#v (%v), want a failure of the receiver naming where it went", f, err)
			}
		})
	}
}
