package rules

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/health"
	"github.com/dynwatch/dynwatch/payload"
)

// A value the config redacts must not reach a payload through the object's
// health: a controller's condition message often quotes the value it could
// not use (a Stalled condition "password hunter2 rejected"), and health's
// message is that condition's message. The payload's object has it
// redacted; its "health" and a field reading health.message must not carry
// it in clear either.
func TestHealthMessageKeepsRedactedValues(t *testing.T) {
	t.Parallel()
	const secret = "hunter2-s3cret"
	f, err := config.Parse("t.yaml", []byte(`
apiVersion: dynwatch/v1alpha1
actions: [{name: out, log: {}}]
rules:
  - {name: stalled, resources: [{group: example.com, kind: Widget}], when: [{path: health.status, op: eq, value: Failed}], fields: {why: health.message}, actions: [out]}
`))
	if err != nil {
		t.Fatal(err)
	}
	rs, ps := Compile(f)
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	red := payload.NewRedactor([]config.Redaction{{Kind: "Widget", Paths: []string{"status.conditions"}}})
	hc, _ := health.New(nil)
	res := event.Resource{Group: "example.com", Version: "v1", Resource: "widgets", Kind: "Widget", Namespaced: true}
	obj := []byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"n","uid":"u","resourceVersion":"2","generation":1},` +
		`"status":{"observedGeneration":1,"conditions":[{"type":"Stalled","status":"True","reason":"BadPassword","message":"password ` + secret + ` rejected"}]}}`)
	ms := (&Evaluator{Redactor: red, Deriver: hc}).Evaluate(rs, event.New(event.Add, res, obj, nil, time.Now()))
	if len(ms) != 1 {
		t.Fatalf("fired %d rules, want stalled (health Failed)", len(ms))
	}
	b, _ := json.Marshal(ms[0].Payload)
	if strings.Contains(string(b), secret) {
		t.Errorf("the payload carries the redacted value in clear: %s", b)
	}
	if h := ms[0].Payload.Health; h == nil || h.Status != health.Failed {
		t.Errorf("payload health %+v, want Failed (its status is no secret)", h)
	}
}
