//go:build opendefects

// A test of a defect still open: it fails today, so it builds only with
// -tags opendefects
// (go test -tags opendefects -run TestReplayedHealthWithRedactedStatus ./plan/).

package plan_test

import (
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/plan"
	"github.com/dynwatch/dynwatch/restart"
	"github.com/dynwatch/dynwatch/rules"
	"github.com/dynwatch/dynwatch/state"
)

// As TestReplayedHealthWithRedactedSpec, with the redact path under status
// (a custom resource whose conditions quote what its controller rejected):
// the record keeps status, which health reads whole, as a digest; the old
// object rebuilt from it has status "<redacted>", a string, whose health
// is Unknown. A replayed update then fires enter on a rule whose health held
// before and after.
func TestReplayedHealthWithRedactedStatus(t *testing.T) {
	t.Parallel()
	f, err := plan.Parse("t.yaml", []byte(`
apiVersion: dynwatch/v1alpha1
state: {path: /tmp/x.db}
redact:
  - {group: example.com, kind: Widget, paths: [status.conditions]}
actions: [{name: out, log: {}}]
rules:
  - {name: ready, resources: [{group: example.com, kind: Widget}], fire: edges, onStart: diff, when: [{path: health.status, op: eq, value: Current}], actions: [out]}
`))
	if err != nil {
		t.Fatal(err)
	}
	r := f.Rule("ready")
	res := event.Resource{Group: "example.com", Version: "v1", Resource: "widgets", Kind: "Widget", Namespaced: true}
	widget := func(rv, label string) []byte {
		return []byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"n","uid":"u","resourceVersion":"` + rv + `","generation":1,"labels":{"l":"` + label + `"}},` +
			`"status":{"observedGeneration":1,"conditions":[{"type":"Ready","status":"True","message":"token t0ken accepted"}]}}`)
	}
	key := state.DigestKey("0123456789abcdef0123456789abcdef")
	old := event.New(event.Add, res, widget("1", "a"), nil, time.Now())
	paths := append(append([]string{}, restart.MetaPaths...), r.Paths()...)
	rec := restart.Record(old, nil, paths, f.Redactor.Secret(res, old.Object), key)
	ev := restart.Replay(event.New(event.Add, res, widget("2", "b"), nil, time.Now()), rec, event.Replay, key)
	if ev == nil || ev.Type != event.Update {
		t.Fatalf("replay %+v, want an update", ev)
	}
	eval := &rules.Evaluator{Redactor: f.Redactor, Deriver: f.Health}
	for _, m := range eval.Evaluate([]*rules.Rule{r}, ev) {
		t.Errorf("a replayed update with health Current before and after fired %s; the old object's health read %+v", m.Verdict.Transition, ev.HealthOf(true))
	}
}
