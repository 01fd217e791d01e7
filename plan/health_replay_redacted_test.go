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

// An update replayed from a restart record must see the old object's
// health as it was, also when the config redacts a path under what health
// reads: a Deployment whose containers' env is redacted (a common entry) is
// still a Deployment of 3 replicas. The record keeps what the rule reads as
// durable.go keeps it (restart.Record with the redactor's Secret); a value
// kept as a digest cannot be read back, so health must not need one to get
// the old status right. Here nothing changed of health: Current before
// and after, and fire: edges on it must not fire.
func TestReplayedHealthWithRedactedSpec(t *testing.T) {
	t.Parallel()
	f, err := plan.Parse("t.yaml", []byte(`
apiVersion: dynwatch/v1alpha1
state: {path: /tmp/x.db}
redact:
  - {group: apps, kind: Deployment, paths: [spec.template.spec.containers]}
actions: [{name: out, log: {}}]
rules:
  - {name: healthy, resources: [{kind: Deployment}], fire: edges, onStart: diff, when: [{path: health.status, op: eq, value: Current}], actions: [out]}
`))
	if err != nil {
		t.Fatal(err)
	}
	r := f.Rule("healthy")
	res := event.Resource{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment", Namespaced: true}
	dep := func(rv, label string) []byte {
		return []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","namespace":"n","uid":"u","resourceVersion":"` + rv + `","generation":1,"labels":{"l":"` + label + `"}},` +
			`"spec":{"replicas":3,"template":{"spec":{"containers":[{"name":"c","env":[{"name":"TOKEN","value":"s3cret"}]}]}}},` +
			`"status":{"observedGeneration":1,"replicas":3,"updatedReplicas":3,"readyReplicas":3,"availableReplicas":3,` +
			`"conditions":[{"type":"Available","status":"True"},{"type":"Progressing","status":"True","reason":"NewReplicaSetAvailable"}]}}`)
	}
	key := state.DigestKey("0123456789abcdef0123456789abcdef")
	old := event.New(event.Add, res, dep("1", "a"), nil, time.Now())
	paths := append(append([]string{}, restart.MetaPaths...), r.Paths()...)
	rec := restart.Record(old, nil, paths, f.Redactor.Secret(res, old.Object), key)

	eval := &rules.Evaluator{Redactor: f.Redactor, Deriver: f.Health}
	old.Deriver = f.Health
	if h := old.HealthOf(false); h == nil || h.Status != "Current" {
		t.Fatalf("the old Deployment's own health is %+v, want Current", h)
	}
	ev := restart.Replay(event.New(event.Add, res, dep("2", "b"), nil, time.Now()), rec, event.Replay, key)
	if ev == nil || ev.Type != event.Update {
		t.Fatalf("replay %+v, want an update", ev)
	}
	ev.Deriver = f.Health
	for _, m := range eval.Evaluate([]*rules.Rule{r}, ev) {
		t.Errorf("a replayed update with health Current before and after fired %s; the old object rebuilt from its record reads health %+v (record %s)",
			m.Verdict.Transition, ev.HealthOf(true), state.Doc(rec.Values))
	}
}
