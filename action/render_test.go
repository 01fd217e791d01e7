package action

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/dynwatch/dynwatch/config"
)

// renderAndSend compiles the action of kindYAML, renders d with Render and
// sends d with the action's own sender; it returns what Render made.
func renderAndSend(t *testing.T, kindYAML string, env Env) *Rendered {
	t.Helper()
	a, f := compileFirst(t, oneAction("sink", kindYAML))
	env.Secrets, env.Logger = f.Secrets(), quiet
	d := delivery("web", 1)
	r, err := a.Render(env, d)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	s, closer, err := a.Build(env)
	if err != nil {
		t.Fatal(err)
	}
	if closer != nil {
		defer closer.Close()
	}
	if err := s.Send(context.Background(), d); err != nil {
		t.Fatalf("send: %v", err)
	}
	return r
}

// wantHeaders checks that what was sent carries every header Render shows,
// with its value, or a masked one's real value (secret) behind it.
func wantHeaders(t *testing.T, r *Rendered, sent func(name string) string, secret string) {
	t.Helper()
	if len(r.Header) == 0 {
		t.Fatal("no headers rendered")
	}
	for _, f := range r.Header {
		got, want := sent(f.Name), f.Value
		if secret != "" {
			want = strings.ReplaceAll(want, config.SecretMask, secret) // a ${VAR}, masked where it stands
		}
		if f.Value == config.SecretMask && secret != "" && strings.Contains(got, secret) {
			continue // a credential header, masked whole
		}
		if got != want {
			t.Errorf("header %s: sent %q, rendered %q", f.Name, got, f.Value)
		}
	}
}

// A webhook's rendering is the request its sender sends, in every format:
// the body byte for byte and every header, credentials masked.
func TestRenderWebhook(t *testing.T) {
	const token = "render-token-0123456789"
	t.Setenv("RENDER_TOKEN", token)
	var mu sync.Mutex
	var body []byte
	var header http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		body, _ = io.ReadAll(r.Body)
		header = r.Header.Clone()
	}))
	defer srv.Close()
	headers := `headers: {Authorization: "Bearer ${RENDER_TOKEN}", X-Team: "team-${RENDER_TOKEN}"}`
	for _, format := range []string{
		"",
		`body: '{"text": "{{.rule}} on {{.name}}"}'`,
		"format: slack",
		"format: teams",
		"format: cloudevents",
		"format: cloudevents, cloudevents: {mode: binary}",
	} {
		t.Run(format, func(t *testing.T) {
			spec := fmt.Sprintf("webhook: {url: %q, %s, %s}", srv.URL+"/hook", headers, format)
			r := renderAndSend(t, strings.Replace(spec, ", }", "}", 1), Env{Source: testSource})
			mu.Lock()
			defer mu.Unlock()
			if !bytes.Equal(r.Body, body) {
				t.Errorf("rendered body:\n%s\nsent:\n%s", r.Body, body)
			}
			wantHeaders(t, r, header.Get, token)
			if r.To != "POST "+srv.URL+"/…" {
				t.Errorf("to %q", r.To)
			}
			for _, f := range r.Header {
				if strings.Contains(f.Value, token) {
					t.Errorf("header %s shows the secret: %q", f.Name, f.Value)
				}
			}
			if i := slices.IndexFunc(r.Header, func(f Field) bool { return f.Name == "X-Team" }); i < 0 || r.Header[i].Value != "team-"+config.SecretMask {
				t.Errorf("X-Team not masked: %v", r.Header)
			}
		})
	}
}

// A Kafka action's rendering is the record its producer sends: topic, key,
// value and headers (a binary CloudEvent's ce_ attributes among them).
func TestRenderKafka(t *testing.T) {
	c := newKfake(t, 0)
	r := renderAndSend(t, fmt.Sprintf(`kafka: {brokers: [%q], topic: "{{.namespace}}-events", key: "{{.name}}", format: cloudevents, timeout: 5s}`, c.ListenAddrs()[0]), Env{Source: testSource})
	rec := consumeAll(t, c.ListenAddrs(), "ns-events", 1)[0]
	if r.To != "topic ns-events" || r.Key != "web" || r.Key != string(rec.Key) || !bytes.Equal(r.Body, rec.Value) {
		t.Errorf("rendered to %q key %q body %s; sent key %q value %s", r.To, r.Key, r.Body, rec.Key, rec.Value)
	}
	wantHeaders(t, r, func(name string) string {
		for _, h := range rec.Headers {
			if h.Key == name {
				return string(h.Value)
			}
		}
		return ""
	}, "")
	if len(r.Header) != len(rec.Headers) || !slices.ContainsFunc(r.Header, func(f Field) bool { return f.Name == "ce_source" && f.Value == testSource }) {
		t.Errorf("rendered headers %v, sent %d", r.Header, len(rec.Headers))
	}
}

// A NATS action's rendering is the message it publishes: subject, data and
// headers, the JetStream Nats-Msg-Id included.
func TestRenderNATS(t *testing.T) {
	ns := startNATS(t)
	ns.stream(t)
	r := renderAndSend(t, fmt.Sprintf(`nats: {url: %q, subject: "dw.{{.namespace}}", format: cloudevents, timeout: 5s}`, ns.url()), Env{Source: testSource})
	msgs := streamMsgs(t, ns)
	if len(msgs) != 1 {
		t.Fatalf("%d messages in the stream", len(msgs))
	}
	m := msgs[0]
	if r.To != "subject "+m.Subject || !bytes.Equal(r.Body, m.Data) {
		t.Errorf("rendered to %q body %s; sent to %s: %s", r.To, r.Body, m.Subject, m.Data)
	}
	wantHeaders(t, r, m.Header.Get, "")
	if !slices.Contains(r.Header, Field{"Nats-Msg-Id", "uid-web:1:update:r:sink"}) || len(r.Header) != len(m.Header) {
		t.Errorf("rendered headers %v, sent %v", r.Header, m.Header)
	}
}

// A log's rendering is the line it writes; a command's, what it reads on
// stdin and its DYNWATCH_* variables.
func TestRenderLogAndExec(t *testing.T) {
	var out bytes.Buffer
	r := renderAndSend(t, "log: {}", Env{Stdout: &out})
	if r.To != "stdout" || !bytes.Equal(r.Body, out.Bytes()) {
		t.Errorf("log: rendered to %q %q, wrote %q", r.To, r.Body, out.Bytes())
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "stdin")
	r = renderAndSend(t, fmt.Sprintf(`exec: {command: [sh, -c, 'cat > "$0"; env | grep ^DYNWATCH_ | sort > "$0.env"', %q]}`, in), Env{})
	stdin, _ := os.ReadFile(in)
	env, _ := os.ReadFile(in + ".env")
	var rendered []string
	for _, f := range r.Header {
		rendered = append(rendered, f.Name+"="+f.Value)
	}
	slices.Sort(rendered)
	if !bytes.Equal(r.Body, stdin) || strings.Join(rendered, "\n")+"\n" != string(env) {
		t.Errorf("exec: rendered %q and %v; the command read %q and had\n%s", r.Body, rendered, stdin, env)
	}
	if !strings.HasPrefix(r.To, "sh -c ") {
		t.Errorf("exec: to %q", r.To)
	}
}

// A header named as config's checks name a credential (an auth key, a
// session, an api_key) is masked whole, whatever its value: --render shows
// it as the insecure-URL warning treats it.
func TestRenderMasksCredentialNames(t *testing.T) {
	a, f := compileFirst(t, oneAction("sink", `webhook: {url: "https://example.com", headers: {X-Auth-Key: literal-key-1, Api_Key: literal-key-2, X-Session: literal-key-3, X-Passwd: literal-key-4, X-Team: ops}}`))
	r, err := a.Render(Env{Secrets: f.Secrets()}, delivery("web", 1))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range r.Header {
		if strings.HasPrefix(h.Value, "literal-key-") {
			t.Errorf("header %s shows its credential: %q", h.Name, h.Value)
		}
	}
	if !slices.Contains(r.Header, Field{"X-Team", "ops"}) {
		t.Errorf("X-Team is not shown as it is: %v", r.Header)
	}
}
