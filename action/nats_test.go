package action

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// natsServer is an embedded NATS server with JetStream on file storage, which
// can be stopped and started again on the same port and store.
type natsServer struct {
	t    testing.TB
	opts *server.Options
	srv  *server.Server
}

func startNATS(t testing.TB) *natsServer {
	t.Helper()
	ns := &natsServer{t: t, opts: &server.Options{
		Host: "127.0.0.1", Port: freePort(t), JetStream: true, StoreDir: t.TempDir(),
		NoLog: true, NoSigs: true,
	}}
	ns.start()
	t.Cleanup(ns.stop)
	return ns
}

func (ns *natsServer) start() {
	ns.t.Helper()
	srv, err := server.NewServer(ns.opts)
	if err != nil {
		ns.t.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		ns.t.Fatal("nats server not ready")
	}
	ns.srv = srv
}

func (ns *natsServer) stop() {
	if ns.srv != nil {
		ns.srv.Shutdown()
		ns.srv.WaitForShutdown()
		ns.srv = nil
	}
}

func (ns *natsServer) url() string { return fmt.Sprintf("nats://127.0.0.1:%d", ns.opts.Port) }

// connect connects a client to the server, closed when the test ends.
func (ns *natsServer) connect(t testing.TB) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(ns.url())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// stream connects a client and creates stream DW on subjects dw.>.
func (ns *natsServer) stream(t testing.TB) (jetstream.Stream, *nats.Conn) {
	t.Helper()
	nc := ns.connect(t)
	js, _ := jetstream.New(nc)
	st, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "DW", Subjects: []string{"dw.>"}, Storage: jetstream.FileStorage})
	if err != nil {
		t.Fatal(err)
	}
	return st, nc
}

// streamMsgs returns the messages of stream DW in order; it connects anew,
// since the server may have restarted.
func streamMsgs(t testing.TB, ns *natsServer) []*jetstream.RawStreamMsg {
	t.Helper()
	nc, err := nats.Connect(ns.url())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	st, err := js.Stream(ctx, "DW")
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []*jetstream.RawStreamMsg
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("message %d: %v", seq, err)
		}
		out = append(out, m)
	}
	return out
}

// A JetStream publish is acknowledged by the stream: the message has the
// payload, Nats-Msg-Id the delivery key and the action, the ce- headers with format:
// cloudevents, and a subject from the template; the same delivery sent again
// is acknowledged as a duplicate and stored once.
func TestNATSJetStreamDelivery(t *testing.T) {
	t.Parallel()
	ns := startNATS(t)
	ns.stream(t)
	s := buildAction(t, fmt.Sprintf(`nats: {url: %q, subject: "dw.{{.resource.resource}}.{{.type}}", format: cloudevents}`, ns.url()))
	d := cmDelivery("a", 0)
	for range 2 {
		if err := s.Send(context.Background(), d); err != nil {
			t.Fatal(err)
		}
	}
	msgs := streamMsgs(t, ns)
	if len(msgs) != 1 {
		t.Fatalf("stream holds %d messages, want 1", len(msgs))
	}
	m := msgs[0]
	if m.Subject != "dw.configmaps.update" || string(m.Data) != string(d.JSON) {
		t.Errorf("message %s %s", m.Subject, m.Data)
	}
	key := d.Payload.ID + ":r"
	want := map[string]string{
		"Nats-Msg-Id": key + ":sink", "Dynwatch-Delivery-Id": key, "Content-Type": "application/json",
		"ce-specversion": "1.0", "ce-id": key, "ce-source": testSource, "ce-type": "io.dynwatch.update",
		"ce-subject": "/api/v1/namespaces/ns/configmaps/a", "ce-time": d.Payload.Time, "ce-dynwatchrule": "r",
	}
	for k, v := range want {
		if got := m.Header.Get(k); got != v {
			t.Errorf("header %s = %q, want %q", k, got, v)
		}
	}
}

// The server stops while events arrive and starts again on the same store:
// the action is down meanwhile, and then every event is in the stream, once,
// in order per object.
func TestNATSServerRestart(t *testing.T) {
	t.Parallel()
	ns := startNATS(t)
	ns.stream(t)
	s := buildAction(t, fmt.Sprintf(`nats: {url: %q, subject: "dw.{{.name}}", timeout: 1s}`, ns.url()))
	q := NewQueue("stream", s, QueueOptions{Concurrency: 4, Retry: Retry{Max: 1000, Initial: 50 * time.Millisecond, MaxBackoff: time.Second}, Logger: (&logBuffer{}).logger()})
	runQueue(t, q)
	objects := []string{"a", "b", "c", "d"}
	const n = 10
	enqueue := func(from, to int) {
		for seq := from; seq < to; seq++ {
			for _, o := range objects {
				q.Enqueue(cmDelivery(o, seq))
			}
		}
	}
	enqueue(0, 3)
	waitFor(t, "the first events to be delivered", 10*time.Second, func() bool { return q.Stats().Delivered >= 4 })
	ns.stop()
	enqueue(3, n)
	waitFor(t, "the action to be down", 10*time.Second, func() bool { down, _ := q.Down(); return down })
	ns.start()
	waitFor(t, "every event to be delivered", 30*time.Second, func() bool { return q.Stats().Delivered == n*uint64(len(objects)) })
	got := map[string][]int{}
	ids := map[string]bool{}
	for _, m := range streamMsgs(t, ns) {
		name, seq := seqOf(t, m.Data)
		got[name] = append(got[name], seq)
		if id := m.Header.Get("Nats-Msg-Id"); ids[id] {
			t.Errorf("message %s twice in the stream", id)
		} else {
			ids[id] = true
		}
	}
	checkOrder(t, got, objects, n, false)
}

// A publish that nothing acknowledges (a plain subscriber on the subject, no
// stream) times out and is retried; once a stream takes the subject the event
// is stored, once.
func TestNATSPublishNeverAcked(t *testing.T) {
	t.Parallel()
	ns := startNATS(t)
	nc := ns.connect(t)
	var swallowed atomic.Int64
	sub, err := nc.Subscribe("dw.>", func(*nats.Msg) { swallowed.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	_ = nc.Flush()
	s := buildAction(t, fmt.Sprintf(`nats: {url: %q, subject: dw.events, timeout: 300ms}`, ns.url()))
	start := time.Now()
	err = s.Send(context.Background(), cmDelivery("a", 0))
	if err == nil || time.Since(start) < 300*time.Millisecond {
		t.Fatalf("Send = %v after %s, want a timeout after 300ms", err, time.Since(start))
	}
	q := NewQueue("stream", s, QueueOptions{Concurrency: 1, Retry: Retry{Max: 1000, Initial: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}, Logger: (&logBuffer{}).logger()})
	runQueue(t, q)
	q.Enqueue(cmDelivery("a", 0))
	waitFor(t, "retries of the unacknowledged publish", 10*time.Second, func() bool { return swallowed.Load() >= 3 && q.Stats().Retries >= 1 })
	_ = sub.Unsubscribe()
	ns.stream(t)
	waitFor(t, "the event to be delivered", 10*time.Second, func() bool { return q.Stats().Delivered == 1 })
	if msgs := streamMsgs(t, ns); len(msgs) != 1 {
		t.Errorf("stream holds %d messages, want 1", len(msgs))
	}
}

// Core NATS: a subscriber gets the payload; a server that is down fails the
// attempt instead of buffering it.
func TestNATSCore(t *testing.T) {
	t.Parallel()
	ns := startNATS(t)
	nc := ns.connect(t)
	sub, err := nc.SubscribeSync("dw.core")
	if err != nil {
		t.Fatal(err)
	}
	_ = nc.Flush()
	s := buildAction(t, fmt.Sprintf(`nats: {url: %q, subject: dw.core, jetstream: false}`, ns.url()))
	d := cmDelivery("a", 0)
	if err := s.Send(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	m, err := sub.NextMsg(5 * time.Second)
	if err != nil || string(m.Data) != string(d.JSON) || m.Header.Get("Nats-Msg-Id") != "" {
		t.Fatalf("message %v, %v", m, err)
	}
	ns.stop()
	waitFor(t, "an attempt to fail while the server is down", 10*time.Second, func() bool {
		err := s.Send(context.Background(), d)
		return err != nil && strings.Contains(err.Error(), "nats")
	})
}

// No server at start is no error at start: the action is down, and once the
// server runs (with its stream) the backlog arrives in order.
func TestNATSServerAbsentAtStart(t *testing.T) {
	t.Parallel()
	ns := &natsServer{t: t, opts: &server.Options{
		Host: "127.0.0.1", Port: freePort(t), JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
	}}
	t.Cleanup(ns.stop)
	s := buildAction(t, fmt.Sprintf(`nats: {url: %q, subject: "dw.{{.name}}", timeout: 1s}`, ns.url()))
	var logs logBuffer
	q := NewQueue("stream", s, QueueOptions{Concurrency: 4, Retry: Retry{Max: 1000, Initial: 50 * time.Millisecond, MaxBackoff: time.Second}, Logger: logs.logger()})
	runQueue(t, q)
	objects := []string{"a", "b"}
	const n = 5
	for seq := range n {
		for _, o := range objects {
			q.Enqueue(cmDelivery(o, seq))
		}
	}
	waitFor(t, "the action to be down", 10*time.Second, func() bool { down, _ := q.Down(); return down })
	ns.start()
	ns.stream(t)
	waitFor(t, "the backlog to be delivered", 30*time.Second, func() bool { return q.Stats().Delivered == n*uint64(len(objects)) })
	got := map[string][]int{}
	for _, m := range streamMsgs(t, ns) {
		name, seq := seqOf(t, m.Data)
		got[name] = append(got[name], seq)
	}
	checkOrder(t, got, objects, n, false)
	if w := strings.Count(logs.String(), "level=WARN"); w != 1 {
		t.Errorf("%d WARN lines, want one for the outage:\n%s", w, logs.String())
	}
}
