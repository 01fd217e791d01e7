package action

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// captured is one request a test receiver got.
type captured struct {
	header http.Header
	body   []byte
}

// formatRecorder is a receiver that keeps what it gets and answers with answer
// (200 when nil).
func formatRecorder(t *testing.T, answer func(n int, w http.ResponseWriter) bool) (*httptest.Server, func() []captured) {
	t.Helper()
	var mu sync.Mutex
	var got []captured
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, captured{r.Header.Clone(), b})
		n := len(got)
		mu.Unlock()
		if answer != nil && answer(n, w) {
			return
		}
	}))
	t.Cleanup(srv.Close)
	return srv, func() []captured { mu.Lock(); defer mu.Unlock(); return append([]captured(nil), got...) }
}

// ceRequired are the attributes CloudEvents 1.0 requires of every event.
var ceRequired = []string{"specversion", "id", "source", "type"}

// Structured mode: the body is the event, application/cloudevents+json, with
// the required attributes and dynwatch's, and the payload as data.
func TestWebhookCloudEventsStructured(t *testing.T) {
	t.Parallel()
	srv, got := formatRecorder(t, nil)
	w := buildAction(t, fmt.Sprintf(`webhook: {url: %q, format: cloudevents}`, srv.URL))
	d := cmDelivery("a", 0)
	d.Payload.Transition = "enter"
	d.JSON, _ = json.Marshal(d.Payload)
	if err := w.Send(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	req := got()[0]
	if ct := req.header.Get("Content-Type"); ct != "application/cloudevents+json" {
		t.Errorf("Content-Type %q", ct)
	}
	var ev map[string]json.RawMessage
	if err := json.Unmarshal(req.body, &ev); err != nil {
		t.Fatalf("body is not JSON: %s", req.body)
	}
	for _, a := range ceRequired {
		if len(ev[a]) < 3 { // a non-empty JSON string
			t.Errorf("required attribute %s missing or empty: %s", a, req.body)
		}
	}
	want := map[string]string{
		"specversion": "1.0", "id": d.Payload.ID + ":r", "source": testSource, "type": "io.dynwatch.update",
		"subject": "/api/v1/namespaces/ns/configmaps/a", "time": d.Payload.Time, "datacontenttype": "application/json",
		"dynwatchrule": "r", "dynwatchtransition": "enter",
	}
	for k, v := range want {
		var s string
		if err := json.Unmarshal(ev[k], &s); err != nil || s != v {
			t.Errorf("%s = %s, want %q", k, ev[k], v)
		}
	}
	if string(ev["data"]) != string(d.JSON) {
		t.Errorf("data = %s, want the payload", ev["data"])
	}
}

// Binary mode: ce- headers, Content-Type the data's, the payload as body.
func TestWebhookCloudEventsBinary(t *testing.T) {
	t.Parallel()
	srv, got := formatRecorder(t, nil)
	w := buildAction(t, fmt.Sprintf(`webhook: {url: %q, format: cloudevents, cloudevents: {mode: binary}}`, srv.URL))
	d := cmDelivery("a b", 0) // a space in the subject is percent-encoded
	if err := w.Send(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	req := got()[0]
	want := map[string]string{
		"Content-Type": "application/json", "Ce-Specversion": "1.0", "Ce-Id": "uid-a%20b:0:update:r",
		"Ce-Source": testSource, "Ce-Type": "io.dynwatch.update", "Ce-Subject": "/api/v1/namespaces/ns/configmaps/a%20b",
		"Ce-Time": d.Payload.Time, "Ce-Dynwatchrule": "r",
	}
	for k, v := range want {
		if g := req.header.Get(k); g != v {
			t.Errorf("header %s = %q, want %q", k, g, v)
		}
	}
	if req.header.Get("Ce-Dynwatchtransition") != "" {
		t.Error("a fire: always rule's event has a dynwatchtransition")
	}
	if string(req.body) != string(d.JSON) {
		t.Errorf("body = %s, want the payload", req.body)
	}
}

// Slack: Block Kit with a text fallback, saying rule, event, object, what
// changed and whether a transition opened; Teams: a Workflows message with
// one Adaptive Card saying the same. Both application/json.
func TestWebhookChatMessages(t *testing.T) {
	t.Parallel()
	d := cmDelivery("a", 0)
	d.Payload.Transition = "enter"
	d.JSON, _ = json.Marshal(d.Payload)
	for _, format := range []string{"slack", "teams"} {
		t.Run(format, func(t *testing.T) {
			srv, got := formatRecorder(t, nil)
			w := buildAction(t, fmt.Sprintf(`webhook: {url: %q, format: %s}`, srv.URL, format))
			if err := w.Send(context.Background(), d); err != nil {
				t.Fatal(err)
			}
			req := got()[0]
			if ct := req.header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			text := checkChatSchema(t, format, req.body)
			for _, s := range []string{"r", "update", "ConfigMap ns/a", "data.seq", "opened"} {
				if !containsWord(text, s) {
					t.Errorf("message does not say %q:\n%s", s, text)
				}
			}
		})
	}
}

// checkChatSchema checks body against what its receiver requires and returns
// its human-readable text.
func checkChatSchema(t *testing.T, format string, body []byte) string {
	t.Helper()
	var all []byte
	switch format {
	case "slack":
		var m struct {
			Text   string
			Blocks []struct {
				Type   string
				Text   *struct{ Type, Text string }
				Fields []struct{ Type, Text string }
			}
		}
		if err := json.Unmarshal(body, &m); err != nil || m.Text == "" || len(m.Blocks) == 0 {
			t.Fatalf("not a Block Kit message with text: %s", body)
		}
		for _, b := range m.Blocks {
			if b.Type == "" || (b.Type == "header" && (b.Text == nil || b.Text.Type != "plain_text" || len(b.Text.Text) > 150)) {
				t.Errorf("bad block %+v", b)
			}
			for _, f := range b.Fields {
				if f.Type != "mrkdwn" || len(f.Text) > 2000 {
					t.Errorf("bad field %+v", f)
				}
				all = append(all, f.Text+"\n"...)
			}
		}
		return m.Text + "\n" + string(all)
	default:
		var m struct {
			Type        string
			Attachments []struct {
				ContentType string
				Content     struct {
					Type, Version string
					Body          []map[string]any
				}
			}
		}
		if err := json.Unmarshal(body, &m); err != nil || m.Type != "message" || len(m.Attachments) != 1 {
			t.Fatalf("not a message with one attachment: %s", body)
		}
		a := m.Attachments[0]
		if a.ContentType != "application/vnd.microsoft.card.adaptive" || a.Content.Type != "AdaptiveCard" || a.Content.Version == "" || len(a.Content.Body) == 0 {
			t.Fatalf("not an Adaptive Card: %s", body)
		}
		return string(body)
	}
}

func containsWord(text, s string) bool { return strings.Contains(text, s) }

// A chat receiver's 429 with Retry-After: the queue waits that long before
// the retry, and the message then arrives. On a fake clock.
func TestWebhookChat429RetryAfter(t *testing.T) {
	t.Parallel()
	fc := newFakeClock()
	var mu sync.Mutex
	var at []time.Time
	srv, got := formatRecorder(t, func(n int, w http.ResponseWriter) bool {
		mu.Lock()
		at = append(at, fc.Now())
		mu.Unlock()
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return true
		}
		return false
	})
	w := buildAction(t, fmt.Sprintf(`webhook: {url: %q, format: slack}`, srv.URL))
	q := NewQueue("chat", w, QueueOptions{Concurrency: 1, Retry: Retry{Max: 5, Initial: 10 * time.Millisecond, MaxBackoff: 10 * time.Second}, Logger: (&logBuffer{}).logger(), Clock: fc})
	runQueue(t, q)
	q.Enqueue(cmDelivery("a", 0))
	waitOnClock(t, fc, q, "the message to be delivered", 10*time.Second, func() bool { return q.Stats().Delivered == 1 })
	if n := len(got()); n != 2 {
		t.Fatalf("%d requests, want 2", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if wait := at[1].Sub(at[0]); wait < time.Second {
		t.Errorf("retried after %s, before the 1s of Retry-After", wait)
	}
}
