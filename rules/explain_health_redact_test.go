package rules

import (
	"strings"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/health"
	"github.com/dynwatch/dynwatch/payload"
)

// test --explain shows what a condition on health.message found; a message
// that quotes a redacted value (a Stalled condition's) must show as the
// payload shows it, redacted, for the new object and the old one alike.
func TestExplainHealthMessageKeepsRedactedValues(t *testing.T) {
	t.Parallel()
	const secret = "hunter2-s3cret"
	f, err := config.Parse("t.yaml", []byte(`
apiVersion: dynwatch/v1alpha1
redact: [{group: example.com, kind: Widget, paths: [status.conditions]}]
actions: [{name: out, log: {}}]
rules:
  - name: r
    resources: [{group: example.com, kind: Widget}]
    when: [{path: health.message, op: exists}, {path: health.message, op: exists, object: old}]
    actions: [out]
`))
	if err != nil {
		t.Fatal(err)
	}
	rs, ps := Compile(f)
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	red := payload.NewRedactor(f.Config.Redact)
	hc, _ := health.New(nil)
	res := event.Resource{Group: "example.com", Version: "v1", Resource: "widgets", Kind: "Widget", Namespaced: true}
	obj := func(rv, msg string) []byte {
		return []byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"n","uid":"u","resourceVersion":"` + rv + `"},` +
			`"status":{"conditions":[{"type":"Stalled","status":"True","reason":"BadPassword","message":"` + msg + `"}]}}`)
	}
	ev := event.New(event.Update, res, obj("3", "password "+secret+" rejected"), obj("2", "password old-"+secret+" rejected"), time.Now())
	ev.Deriver = hc
	_, steps := rs[0].Explain(ev, nil, red)
	if len(steps) == 0 {
		t.Fatal("no steps")
	}
	for _, s := range steps {
		if strings.Contains(s.Check+s.Found, secret) {
			t.Errorf("step %q shows the redacted value: found %s", s.Check, s.Found)
		}
	}
}
