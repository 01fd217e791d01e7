package offline

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/action"
	"github.com/dynwatch/dynwatch/plan"
)

// --render writes, per action of a firing rule, what its sender would send,
// the config's ${VAR} values masked; a grouping action's as a group of one.
func TestRenderActions(t *testing.T) {
	t.Setenv("RENDER_TOKEN", "render-secret-0123456789")
	f, err := plan.Parse("c.yaml", []byte(`apiVersion: dynwatch/v1alpha1
actions:
  - {name: teams, webhook: {url: "https://example.com/hook/x", format: teams, headers: {X-Key: "k-${RENDER_TOKEN}"}}}
  - {name: ce, nats: {url: "nats://127.0.0.1:1", subject: "dw.{{.namespace}}", format: cloudevents}}
  - {name: grouped, log: {}, group: {by: [namespace]}}
rules:
  - {name: cms, resources: [{kind: ConfigMap}], when: [{path: data.mode, op: "==", value: "off"}], actions: [teams, ce, grouped]}
`))
	if err != nil {
		t.Fatal(err)
	}
	obj := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"s","namespace":"demo","uid":"u","resourceVersion":"7"},"data":{"mode":"off"}}`)
	rule := f.Rule("cms")
	test := Test{Rule: rule, Redactor: f.Redactor, New: [][]byte{obj}, Render: true, Env: action.Env{Secrets: f.Secrets()},
		Now: func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }}
	for _, name := range rule.Actions {
		test.Actions = append(test.Actions, f.Action(name))
		test.Senders = append(test.Senders, f.CompiledAction(name))
	}
	var out bytes.Buffer
	if !test.Run(&out) {
		t.Fatalf("the rule does not fire:\n%s", out.String())
	}
	s := out.String()
	for _, want := range []string{
		"--- action teams (webhook): POST https://example.com/…\nContent-Type: application/json\nUser-Agent: dynwatch\nX-Dynwatch-Delivery-Id: u:7:add:cms\nX-Dynwatch-Event-Id: u:7:add\nX-Key: k-<redacted>\n\n{\"type\":\"message\"",
		"--- action ce (nats): subject dw.demo\n",
		"ce-source: dynwatch\n",
		"Nats-Msg-Id: u:7:add:cms:ce\n",
		"--- action grouped (log) (grouped: this event as a group of one): stdout\n\n{\"group\":{\"namespace\":\"demo\"},\"count\":1,\"events\":[{\"id\":\"u:7:add\"",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "render-secret-0123456789") {
		t.Errorf("the secret is shown:\n%s", s)
	}
}

// What test prints of an object (its payload, a rendered body, its name) goes
// to a terminal: an annotation holding ESC or CSI (U+009B) sequences reaches
// it as visible text, not as escapes the terminal obeys, and the lines of an
// indented payload or a multi-line body stay lines.
func TestTestOutputIsTerminalSafe(t *testing.T) {
	f, err := plan.Parse("c.yaml", []byte(`apiVersion: dynwatch/v1alpha1
actions:
  - {name: hook, webhook: {url: "https://example.com/hook", body: "note: {{ index .object.metadata.annotations \"note\" }}\nend"}}
rules:
  - {name: cms, resources: [{kind: ConfigMap}], actions: [hook]}
`))
	if err != nil {
		t.Fatal(err)
	}
	obj := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"s\u001b[2J","namespace":"demo","uid":"u","resourceVersion":"7","annotations":{"note":"a\u001b]0;owned\u0007b\u009b31mc"}},"data":{"mode":"off"}}`)
	rule := f.Rule("cms")
	test := Test{Rule: rule, Redactor: f.Redactor, New: [][]byte{obj}, Render: true, Env: action.Env{Secrets: f.Secrets()},
		Now: func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }}
	test.Actions = append(test.Actions, f.Action("hook"))
	test.Senders = append(test.Senders, f.CompiledAction("hook"))
	var out bytes.Buffer
	if !test.Run(&out) {
		t.Fatalf("the rule does not fire:\n%s", out.String())
	}
	s := out.String()
	if i := strings.IndexFunc(s, func(r rune) bool { return r < 0x20 && r != '\n' || r >= 0x7f && r < 0xa0 }); i >= 0 {
		t.Errorf("the output holds the control character %q at %d:\n%q", s[i:i+1], i, s)
	}
	for _, want := range []string{"note: a ]0;owned b\\u009b31mc\nend\n", "\n  \"type\": \"add\",\n"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
}
