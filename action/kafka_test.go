package action

import (
	"context"
	"crypto/tls"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// newKfake starts an in-process Kafka cluster with topic "ns-events" of
// four partitions, on port (0: any).
func newKfake(t testing.TB, port int, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	opts = append([]kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(4, "ns-events"), kfake.Ports(port)}, opts...)
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// consumeAll reads n records of topic from the start.
func consumeAll(t testing.TB, brokers []string, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("got %d records of %d: %v", len(out), n, err)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	return out
}

// refuseProduce answers every partition of req with code.
func refuseProduce(req *kmsg.ProduceRequest, code *kerr.Error) *kmsg.ProduceResponse {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition, sp.ErrorCode = rp.Partition, code.Code
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

func header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// Records carry the payload, the object's identity as key (so one object's
// records share a partition), the delivery key header and, with format:
// cloudevents, the binary-mode ce_ headers; the topic comes from a template.
func TestKafkaRecords(t *testing.T) {
	t.Parallel()
	c := newKfake(t, 0)
	brokers := c.ListenAddrs()
	s := buildAction(t, fmt.Sprintf(`kafka: {brokers: [%q], topic: "{{.namespace}}-events", format: cloudevents}`, brokers[0]))
	objects := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	sent := map[string][]byte{}
	for seq := range 3 {
		for _, o := range objects {
			d := cmDelivery(o, seq)
			if err := s.Send(context.Background(), d); err != nil {
				t.Fatalf("send: %v", err)
			}
			sent[d.Payload.ID] = d.JSON
		}
	}
	recs := consumeAll(t, brokers, "ns-events", 3*len(objects))
	partOf := map[string]int32{}
	parts := map[int32]bool{}
	for _, r := range recs {
		name, seq := seqOf(t, r.Value)
		id := fmt.Sprintf("uid-%s:%d:update", name, seq)
		if string(r.Value) != string(sent[id]) {
			t.Errorf("record value %s, want %s", r.Value, sent[id])
		}
		if want := "/configmaps/ns/" + name; string(r.Key) != want {
			t.Errorf("key %q, want %q", r.Key, want)
		}
		if p, ok := partOf[name]; ok && p != r.Partition {
			t.Errorf("object %s in partitions %d and %d", name, p, r.Partition)
		}
		partOf[name], parts[r.Partition] = r.Partition, true
		want := map[string]string{
			"dynwatch-delivery-id": id + ":r",
			"content-type":         "application/json",
			"ce_specversion":       "1.0",
			"ce_id":                id + ":r",
			"ce_source":            testSource,
			"ce_type":              "io.dynwatch.update",
			"ce_subject":           "/api/v1/namespaces/ns/configmaps/" + name,
			"ce_time":              "2026-12-01T10:00:00.000Z",
			"ce_dynwatchrule":      "r",
		}
		for k, v := range want {
			if got := header(r, k); got != v {
				t.Errorf("header %s = %q, want %q", k, got, v)
			}
		}
	}
	if len(parts) < 2 {
		t.Errorf("eight objects' records all in partition(s) %v: keys do not spread", parts)
	}
}

// A key template replaces the object's identity.
func TestKafkaKeyTemplate(t *testing.T) {
	t.Parallel()
	c := newKfake(t, 0)
	s := buildAction(t, fmt.Sprintf(`kafka: {brokers: [%q], topic: ns-events, key: "{{.name}}", acks: leader}`, c.ListenAddrs()[0]))
	if err := s.Send(context.Background(), cmDelivery("x", 0)); err != nil {
		t.Fatal(err)
	}
	r := consumeAll(t, c.ListenAddrs(), "ns-events", 1)[0]
	if string(r.Key) != "x" || header(r, "ce_id") != "" {
		t.Errorf("key %q, ce_id header %q; want x and none (format json)", r.Key, header(r, "ce_id"))
	}
}

// No broker at start is no error at start: the action is down (one WARN),
// its backlog waits, and once a broker listens every event arrives, in
// order per object.
func TestKafkaBrokerAbsentAtStart(t *testing.T) {
	t.Parallel()
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	s := buildAction(t, fmt.Sprintf(`kafka: {brokers: [%q], topic: ns-events, timeout: 1s}`, addr))
	var logs logBuffer
	q := NewQueue("bus", s, QueueOptions{Concurrency: 4, Retry: Retry{Max: 1000, Initial: 50 * time.Millisecond, MaxBackoff: time.Second}, Logger: logs.logger()})
	runQueue(t, q)
	objects := []string{"a", "b", "c"}
	const n = 5
	for seq := range n {
		for _, o := range objects {
			q.Enqueue(cmDelivery(o, seq))
		}
	}
	waitFor(t, "the action to be down", 10*time.Second, func() bool { down, _ := q.Down(); return down })
	newKfake(t, port)
	waitFor(t, "the backlog to be delivered", 30*time.Second, func() bool { return q.Stats().Delivered == n*uint64(len(objects)) })
	got := map[string][]int{}
	for _, r := range consumeAll(t, []string{addr}, "ns-events", n*len(objects)) {
		name, seq := seqOf(t, r.Value)
		got[name] = append(got[name], seq)
	}
	checkOrder(t, got, objects, n, false)
	if w := strings.Count(logs.String(), "level=WARN"); w != 1 {
		t.Errorf("%d WARN lines, want one for the outage:\n%s", w, logs.String())
	}
}

// A broker that fails produce requests for longer than the timeout makes the
// attempts fail (retried by the queue); once it answers, every event arrives
// exactly once and in order per object.
func TestKafkaBrokerErrorsRetryInOrder(t *testing.T) {
	t.Parallel()
	c := newKfake(t, 0)
	var failing atomic.Bool
	var refused atomic.Int64
	failing.Store(true)
	c.ControlKey(int16(kmsg.Produce), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if !failing.Load() {
			return nil, nil, false
		}
		refused.Add(1)
		return refuseProduce(kreq.(*kmsg.ProduceRequest), kerr.NotLeaderForPartition), nil, true
	})
	s := buildAction(t, fmt.Sprintf(`kafka: {brokers: [%q], topic: ns-events, timeout: 1s}`, c.ListenAddrs()[0]))
	var logs logBuffer
	q := NewQueue("bus", s, QueueOptions{Concurrency: 4, Retry: Retry{Max: 1000, Initial: 50 * time.Millisecond, MaxBackoff: time.Second}, Logger: logs.logger()})
	defer func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	}()
	runQueue(t, q)
	objects := []string{"a", "b", "c", "d"}
	const n = 6
	for seq := range n {
		for _, o := range objects {
			q.Enqueue(cmDelivery(o, seq))
		}
	}
	waitFor(t, "attempts to fail and be retried", 10*time.Second, func() bool { return q.Stats().Retries >= 2 && refused.Load() >= 1 })
	failing.Store(false)
	waitFor(t, "every event to be delivered", 30*time.Second, func() bool { return q.Stats().Delivered == n*uint64(len(objects)) })
	got := map[string][]int{}
	for _, r := range consumeAll(t, c.ListenAddrs(), "ns-events", n*len(objects)) {
		name, seq := seqOf(t, r.Value)
		got[name] = append(got[name], seq)
	}
	checkOrder(t, got, objects, n, false)
}

// SASL PLAIN and SCRAM log in to a cluster that requires them; a wrong
// password is an attempt that fails (the action is down), not a start that does.
func TestKafkaSASL(t *testing.T) {
	t.Parallel()
	for _, mech := range []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"} {
		t.Run(mech, func(t *testing.T) {
			t.Parallel()
			c := newKfake(t, 0, kfake.EnableSASL(), kfake.Superuser(mech, "dynwatch", "s3cret"))
			ok := buildAction(t, fmt.Sprintf(`kafka: {brokers: [%q], topic: ns-events, sasl: {mechanism: %s, username: dynwatch, password: s3cret}}`, c.ListenAddrs()[0], mech))
			if err := ok.Send(context.Background(), cmDelivery("a", 0)); err != nil {
				t.Fatalf("send with the right password: %v", err)
			}
			bad := buildAction(t, fmt.Sprintf(`kafka: {brokers: [%q], topic: ns-events, timeout: 1s, sasl: {mechanism: %s, username: dynwatch, password: wrong}}`, c.ListenAddrs()[0], mech))
			if err := bad.Send(context.Background(), cmDelivery("a", 1)); err == nil {
				t.Fatal("send with a wrong password succeeded")
			}
		})
	}
}

// TLS: the broker's certificate is verified against caFile.
func TestKafkaTLS(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.NotFoundHandler()) // for its certificate, valid for 127.0.0.1
	srv.Close()
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	c := newKfake(t, 0, kfake.TLS(&tls.Config{Certificates: srv.TLS.Certificates}))
	ok := buildAction(t, fmt.Sprintf(`kafka: {brokers: [%q], topic: ns-events, tls: {caFile: %q}}`, c.ListenAddrs()[0], caFile))
	if err := ok.Send(context.Background(), cmDelivery("a", 0)); err != nil {
		t.Fatalf("send over TLS: %v", err)
	}
	unverified := buildAction(t, fmt.Sprintf(`kafka: {brokers: [%q], topic: ns-events, timeout: 1s, tls: {}}`, c.ListenAddrs()[0]))
	if err := unverified.Send(context.Background(), cmDelivery("a", 1)); err == nil {
		t.Fatal("send to a broker whose certificate no root signs succeeded")
	}
}
