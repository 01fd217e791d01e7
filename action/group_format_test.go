package action

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/payload"
)

// groupOf returns the grouped delivery of n ConfigMap events in namespace ns
// of rule r: the first adds adds, the rest updates.
func groupOf(t testing.TB, n, adds int) *event.Delivery {
	t.Helper()
	ms := make([]*event.Delivery, n)
	for i := range ms {
		d := cmDelivery(fmt.Sprintf("cm-%02d", i), i)
		if i < adds {
			d.Payload.Type, d.Payload.Changed = event.Add, nil
			d.Payload.ID = fmt.Sprintf("uid-cm-%02d:%d:add", i, i)
			d.JSON, _ = json.Marshal(d.Payload)
		}
		d.Seq = uint64(i + 1)
		ms[i] = d
	}
	g, err := event.NewGroupDelivery(map[string]string{"namespace": "ns"}, ms)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// A grouped delivery goes out as the group payload, bytes as they are, with
// X-Dynwatch-Delivery-Id the group's key, which names its members.
func TestWebhookGroupJSON(t *testing.T) {
	t.Parallel()
	srv, got := formatRecorder(t, nil)
	w := buildAction(t, fmt.Sprintf(`webhook: {url: %q}`, srv.URL))
	g := groupOf(t, 3, 1)
	if err := w.Send(context.Background(), g); err != nil {
		t.Fatal(err)
	}
	req := got()[0]
	if !bytes.Equal(req.body, g.JSON) {
		t.Errorf("body %s, want the group payload", req.body)
	}
	var back event.GroupPayload
	if err := json.Unmarshal(req.body, &back); err != nil || back.Count != 3 || len(back.Events) != 3 || back.Group["namespace"] != "ns" {
		t.Errorf("body %s (%v)", req.body, err)
	}
	if id, want := req.header.Get("X-Dynwatch-Delivery-Id"), wantGroupKey(g.Members...); id != want {
		t.Errorf("X-Dynwatch-Delivery-Id %q, want %q", id, want)
	}
	if ct := req.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
}

// The body template of a grouped action reads the group: .group, .count and
// .events (each event as an ungrouped template sees one, absent optional
// fields read as empty); a field of one event at the top is a load error.
func TestWebhookGroupTemplate(t *testing.T) {
	t.Parallel()
	srv, got := formatRecorder(t, nil)
	body := `{{.count}} in {{.group.namespace}}:{{range .events}} {{.type}} {{.name}}{{if .changed}} ({{join "," .changed}}){{end}}{{end}}`
	w := buildAction(t, fmt.Sprintf("webhook: {url: %q, body: %q}\n    group: {by: [namespace]}", srv.URL, body))
	if err := w.Send(context.Background(), groupOf(t, 3, 1)); err != nil {
		t.Fatal(err)
	}
	want := "3 in ns: add cm-00 update cm-01 (data.seq) update cm-02 (data.seq)"
	if b := string(got()[0].body); b != want {
		t.Errorf("body %q, want %q", b, want)
	}
	if _, err := payload.ParseGroupTemplate(`{{.name}}`); err == nil || !strings.Contains(err.Error(), "a grouped delivery has no field .name (it has: .group .count .events)") {
		t.Errorf("a single event's field in a group template: %v", err)
	}
	if _, err := payload.ParseTemplate(`{{.count}}`); err == nil {
		t.Error("the group's .count in an ungrouped template: want an error")
	}
}

// Slack and Teams sum a group up in one message: how many of what, the
// first five objects, "and N more"; within Block Kit's limits however large.
func TestWebhookGroupChat(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"slack", "teams"} {
		t.Run(format, func(t *testing.T) {
			srv, got := formatRecorder(t, nil)
			w := buildAction(t, fmt.Sprintf(`webhook: {url: %q, format: %s}`, srv.URL, format))
			g := groupOf(t, 12, 10)
			if err := w.Send(context.Background(), g); err != nil {
				t.Fatal(err)
			}
			text := checkChatSchema(t, format, got()[0].body)
			for _, s := range []string{
				"r: 12 events: 10 add, 2 update of configmaps in namespace ns",
				"add ConfigMap ns/cm-00", "add ConfigMap ns/cm-04", "and 7 more", "namespace=ns",
			} {
				if !strings.Contains(text, s) {
					t.Errorf("message does not say %q:\n%s", s, text)
				}
			}
			if !strings.Contains(string(got()[0].body), "dynwatch · "+wantGroupKey(g.Members...)) {
				t.Errorf("message does not end with the group's id: %s", got()[0].body)
			}
			if strings.Contains(text, "cm-05") {
				t.Errorf("message lists a sixth object:\n%s", text)
			}
			// A large group with long names stays within the limits
			// checkChatSchema checks (header 150, field 2000).
			big := groupOf(t, 500, 0)
			for _, p := range big.Group.Events {
				p.Name = strings.Repeat("n", 250)
			}
			if err := w.Send(context.Background(), big); err != nil {
				t.Fatal(err)
			}
			if b := got()[1].body; len(b) > 28000 {
				t.Errorf("message of %d bytes", len(b))
			} else {
				checkChatSchema(t, format, b)
			}
		})
	}
}

// CloudEvents of a group: type io.dynwatch.group, id the first event's key
// plus ":group", no subject, the group payload as data; structured and binary.
func TestWebhookGroupCloudEvents(t *testing.T) {
	t.Parallel()
	g := groupOf(t, 2, 2)
	for _, mode := range []string{"structured", "binary"} {
		t.Run(mode, func(t *testing.T) {
			srv, got := formatRecorder(t, nil)
			w := buildAction(t, fmt.Sprintf(`webhook: {url: %q, format: cloudevents, cloudevents: {mode: %s}}`, srv.URL, mode))
			if err := w.Send(context.Background(), g); err != nil {
				t.Fatal(err)
			}
			req := got()[0]
			attrs := map[string]string{}
			var data []byte
			if mode == "structured" {
				var ev map[string]json.RawMessage
				if err := json.Unmarshal(req.body, &ev); err != nil {
					t.Fatal(err)
				}
				for k, v := range ev {
					var s string
					if json.Unmarshal(v, &s) == nil {
						attrs[k] = s
					}
				}
				data = ev["data"]
			} else {
				for k := range req.header {
					if strings.HasPrefix(k, "Ce-") {
						attrs[strings.ToLower(k[3:])] = req.header.Get(k)
					}
				}
				data = req.body
			}
			want := map[string]string{
				"specversion": "1.0", "id": wantGroupKey(g.Members...), "source": testSource,
				"type": "io.dynwatch.group", "time": "2026-12-01T10:00:00.000Z", "dynwatchrule": "r",
			}
			for k, v := range want {
				if attrs[k] != v {
					t.Errorf("%s = %q, want %q", k, attrs[k], v)
				}
			}
			if _, ok := attrs["subject"]; ok {
				t.Errorf("a group has a subject: %q", attrs["subject"])
			}
			if !bytes.Equal(data, g.JSON) {
				t.Errorf("data %s, want the group payload", data)
			}
		})
	}
}

// Kafka: the record's value is the group payload, its ce_ headers the
// group's; topic and key templates read the first event.
func TestKafkaGroupRecord(t *testing.T) {
	t.Parallel()
	c := newKfake(t, 0)
	s := buildAction(t, fmt.Sprintf(`kafka: {brokers: [%q], topic: "{{.namespace}}-events", key: "{{.name}}", format: cloudevents}`, c.ListenAddrs()[0]))
	g := groupOf(t, 3, 0)
	if err := s.Send(context.Background(), g); err != nil {
		t.Fatal(err)
	}
	r := consumeAll(t, c.ListenAddrs(), "ns-events", 1)[0]
	if !bytes.Equal(r.Value, g.JSON) || string(r.Key) != "cm-00" {
		t.Errorf("record key %q value %s", r.Key, r.Value)
	}
	key := wantGroupKey(g.Members...)
	for k, v := range map[string]string{"ce_type": "io.dynwatch.group", "ce_id": key, "dynwatch-delivery-id": key, "ce_subject": ""} {
		if got := header(r, k); got != v {
			t.Errorf("header %s = %q, want %q", k, got, v)
		}
	}
	// key: object (the default) of a group is its labels: one group's
	// deliveries share a partition.
	s = buildAction(t, fmt.Sprintf(`kafka: {brokers: [%q], topic: ns-events}`, c.ListenAddrs()[0]))
	if err := s.Send(context.Background(), g); err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for _, r := range consumeAll(t, c.ListenAddrs(), "ns-events", 2) {
		keys[string(r.Key)] = true
	}
	if !keys["group:namespace=ns"] || !keys["cm-00"] {
		t.Errorf("record keys %v, want cm-00 (the template) and group:namespace=ns (the default)", keys)
	}
}

// NATS: the message is the group payload, ce-id the group's key and
// Nats-Msg-Id that key and the action (so JetStream drops a retried group,
// not a later event of its first object nor a group formed again with more
// events), the subject from the first event.
func TestNATSGroupMessage(t *testing.T) {
	t.Parallel()
	ns := startNATS(t)
	ns.stream(t)
	s := buildAction(t, fmt.Sprintf(`nats: {url: %q, subject: "dw.{{.resource.resource}}.{{.type}}", format: cloudevents}`, ns.url()))
	g := groupOf(t, 2, 1)
	for range 2 {
		if err := s.Send(context.Background(), g); err != nil {
			t.Fatal(err)
		}
	}
	msgs := streamMsgs(t, ns)
	if len(msgs) != 1 {
		t.Fatalf("stream holds %d messages, want 1", len(msgs))
	}
	m := msgs[0]
	if m.Subject != "dw.configmaps.add" || !bytes.Equal(m.Data, g.JSON) {
		t.Errorf("message %s %s", m.Subject, m.Data)
	}
	key := wantGroupKey(g.Members...)
	for k, v := range map[string]string{"Nats-Msg-Id": key + ":sink", "ce-type": "io.dynwatch.group", "ce-id": key, "Dynwatch-Delivery-Id": key} {
		if got := m.Header.Get(k); got != v {
			t.Errorf("header %s = %q, want %q", k, got, v)
		}
	}
}

// The log action writes a group as one line: the group payload.
func TestLogGroupLine(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	g := groupOf(t, 4, 2)
	if err := NewLog(&buf).Send(context.Background(), g); err != nil {
		t.Fatal(err)
	}
	if buf.String() != string(g.JSON)+"\n" {
		t.Errorf("log %q", buf.String())
	}
}
