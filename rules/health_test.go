package rules

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/health"
)

const healthRules = `
apiVersion: dynwatch/v1alpha1
actions: [{name: out, log: {}}]
rules:
  - {name: failing, resources: [{kind: Deployment}], when: [{path: health.status, op: eq, value: InProgress}], actions: [out]}
  - {name: cel, resources: [{kind: Deployment}], when: [{cel: 'health.status == "InProgress" && health.message.startsWith("Replicas")'}], actions: [out]}
  - {name: field, resources: [{kind: Deployment}], fields: {h: health.status, n: spec.replicas}, actions: [out]}
  - {name: plain, resources: [{kind: Deployment}], fields: {n: spec.replicas}, actions: [out]}
  - {name: turned, resources: [{kind: Deployment}], fire: enter, when: [{path: health.status, op: eq, value: Current}], actions: [out]}
`

var deploymentRes = event.Resource{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment", Namespaced: true}

// A rule reads the object's health through the Evaluator's Deriver, as a
// path condition, in CEL and as a field; its payload carries "health", and
// a rule that does not read it has none.
func TestEvaluatorHealth(t *testing.T) {
	t.Parallel()
	f, err := config.Parse("t.yaml", []byte(healthRules))
	if err != nil {
		t.Fatal(err)
	}
	rs, ps := Compile(f)
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	hc, _ := health.New(nil)
	rolling := []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a","namespace":"n","uid":"u","resourceVersion":"2"},"spec":{"replicas":3},"status":{"replicas":1}}`)
	ready := []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a","namespace":"n","uid":"u","resourceVersion":"3"},"spec":{"replicas":1},"status":{"replicas":1,"updatedReplicas":1,"readyReplicas":1,"availableReplicas":1,"conditions":[{"type":"Available","status":"True"}]}}`)

	fired := func(ms []Match) (names []string) {
		for _, m := range ms {
			names = append(names, m.Rule.Name)
		}
		return names
	}
	// Without a Deriver nothing reads health: health.* is missing.
	ms := (&Evaluator{}).Evaluate(rs, event.New(event.Add, deploymentRes, rolling, nil, time.Now()))
	if got := fired(ms); !slices.Equal(got, []string{"field", "plain"}) {
		t.Fatalf("without a Deriver fired %v, want field and plain", got)
	}
	if string(ms[0].Payload.Fields["h"]) != "null" || ms[0].Payload.Health != nil {
		t.Errorf("without a Deriver: field h %s, health %+v, want null and none", ms[0].Payload.Fields["h"], ms[0].Payload.Health)
	}

	e := &Evaluator{Deriver: hc}
	ms = e.Evaluate(rs, event.New(event.Add, deploymentRes, rolling, nil, time.Now()))
	if got := fired(ms); !slices.Equal(got, []string{"failing", "cel", "field", "plain"}) {
		t.Fatalf("fired %v, want failing, cel, field, plain", got)
	}
	want := event.Health{Status: health.InProgress, Message: "Replicas: 1/3"}
	for _, m := range ms {
		switch {
		case m.Rule.Name == "plain":
			if m.Payload.Health != nil {
				t.Errorf("plain reads no health, but its payload has %+v", m.Payload.Health)
			}
		case m.Payload.Health == nil || *m.Payload.Health != want:
			t.Errorf("%s: payload health %+v, want %+v", m.Rule.Name, m.Payload.Health, want)
		}
	}
	if h := ms[2].Payload.Fields["h"]; string(h) != `"InProgress"` {
		t.Errorf("field h = %s, want \"InProgress\"", h)
	}
	b, _ := json.Marshal(ms[0].Payload)
	if !containsJSON(b, `"health":{"status":"InProgress","message":"Replicas: 1/3"}`) {
		t.Errorf("payload %s lacks its health", b)
	}

	// fire: enter on health: the old object's health is InProgress, the
	// new one's Current.
	ms = e.Evaluate(rs, event.New(event.Update, deploymentRes, ready, rolling, time.Now()))
	if got := fired(ms); !slices.Contains(got, "turned") {
		t.Errorf("update to Current fired %v, want turned among them", got)
	}
}

func containsJSON(b []byte, s string) bool { return strings.Contains(string(b), s) }

// A rule reading health.* records what health reads, not "health.status",
// which is no path of the object.
func TestRulePathsHealth(t *testing.T) {
	t.Parallel()
	f, err := config.Parse("t.yaml", []byte(healthRules))
	if err != nil {
		t.Fatal(err)
	}
	rs, _ := Compile(f)
	for _, r := range rs {
		ps := r.Paths()
		if slices.Contains(ps, "health.status") {
			t.Errorf("%s: Paths %v names health.status", r.Name, ps)
		}
		if got := slices.Contains(ps, "status"); got != (r.Name != "plain") {
			t.Errorf("%s: Paths %v: has status %v, want %v", r.Name, ps, got, r.Name != "plain")
		}
	}
}
