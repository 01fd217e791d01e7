package rules

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/payload"
)

type observed struct {
	rule  string
	fired bool
}

type recordingObserver struct{ seen []observed }

func (o *recordingObserver) Evaluated(rule string, _ time.Duration, fired bool) {
	o.seen = append(o.seen, observed{rule, fired})
}

const evaluatorRules = `
apiVersion: dynwatch/v1alpha1
redact: [{kind: Deployment, paths: [metadata.labels.team]}]
actions: [{name: out, log: {}}]
rules:
  - {name: big, resources: [{kind: Deployment}], when: [{path: spec.replicas, op: gt, value: 3}], fields: {n: spec.replicas}, actions: [out]}
  - {name: small, resources: [{kind: Deployment}], when: [{path: spec.replicas, op: lt, value: 3}], actions: [out]}
  - {name: enter, resources: [{kind: Deployment}], fire: enter, when: [{path: spec.replicas, op: gt, value: 3}], actions: [out]}
`

// Evaluate returns the rules that fire, in order, each with the verdict
// Decide gives and its payload, the event prepared (redacted) once for them
// all; the observer is told of every decision, fired or not.
func TestEvaluatorMatchesWhatDecideFires(t *testing.T) {
	t.Parallel()
	f, err := config.Parse("t.yaml", []byte(evaluatorRules))
	if err != nil {
		t.Fatal(err)
	}
	rs, ps := Compile(f)
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	res := event.Resource{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment", Namespaced: true}
	ev := event.New(event.Add, res, deploy(5, 2), nil, time.Now())
	obs := &recordingObserver{}
	e := &Evaluator{Redactor: payload.NewRedactor(f.Config.Redact), Observer: obs}
	ms := e.Evaluate(rs, ev)
	if len(ms) != 2 || ms[0].Rule.Name != "big" || ms[1].Rule.Name != "enter" {
		t.Fatalf("matches %+v, want big and enter", ms)
	}
	for _, m := range ms {
		if d := m.Rule.Decide(ev, nil); d != m.Verdict {
			t.Errorf("%s: verdict %+v, Decide %+v", m.Rule.Name, m.Verdict, d)
		}
		if m.Payload.Rule != m.Rule.Name || m.Payload.Transition != m.Verdict.Transition {
			t.Errorf("%s: payload of rule %q, transition %q; verdict %+v", m.Rule.Name, m.Payload.Rule, m.Payload.Transition, m.Verdict)
		}
		if strings.Contains(string(m.Payload.Object), `"team":"a"`) {
			t.Errorf("%s: the payload's object is not redacted: %s", m.Rule.Name, m.Payload.Object)
		}
	}
	if ms[1].Payload.Transition != "enter" || string(ms[0].Payload.Fields["n"]) != "5" {
		t.Errorf("payloads: transition %q, field n %s", ms[1].Payload.Transition, ms[0].Payload.Fields["n"])
	}
	if &ms[0].Payload.Object[0] != &ms[1].Payload.Object[0] {
		t.Error("the event was prepared once per match, not once")
	}
	want := []observed{{"big", true}, {"small", false}, {"enter", true}}
	if len(obs.seen) != len(want) {
		t.Fatalf("observed %+v, want %+v", obs.seen, want)
	}
	for i := range want {
		if obs.seen[i] != want[i] {
			t.Errorf("observed %+v, want %+v", obs.seen, want)
		}
	}
}

// With Explained, each decision is Explain's, handed over with its steps
// whether the rule fires or not, and the matches are the same.
func TestEvaluatorExplainsOnce(t *testing.T) {
	t.Parallel()
	rs := compile(t, evaluatorRules)
	ev := &event.Event{Type: event.Update, OldObject: deploy(2, 2), Object: deploy(5, 2)}
	got := map[string]Verdict{}
	e := &Evaluator{Explained: func(r *Rule, v Verdict, steps []Step) {
		if _, twice := got[r.Name]; twice {
			t.Errorf("%s explained twice", r.Name)
		}
		if len(steps) == 0 {
			t.Errorf("%s: no steps", r.Name)
		}
		got[r.Name] = v
	}}
	ms := e.Evaluate(rs, ev)
	plain := (&Evaluator{}).Evaluate(rs, ev)
	if len(ms) != len(plain) || len(got) != len(rs) {
		t.Fatalf("explained %d rules and matched %d; without Explained %d matched", len(got), len(ms), len(plain))
	}
	for i, m := range ms {
		if m.Verdict != plain[i].Verdict || m.Rule != plain[i].Rule {
			t.Errorf("match %d: %+v explained, %+v not", i, m.Verdict, plain[i].Verdict)
		}
	}
	for _, r := range rs {
		if d := r.Decide(ev, nil); got[r.Name] != d {
			t.Errorf("%s: explained %+v, Decide %+v", r.Name, got[r.Name], d)
		}
	}
}

// State asks whether an object satisfies each rule now, whatever the event
// type: an object listed by audit is no add, yet the rules that hold on it
// match, with no transition.
func TestEvaluatorStateAsksHolds(t *testing.T) {
	t.Parallel()
	rs := compile(t, evaluatorRules)
	ev := &event.Event{Type: "audit", Object: deploy(5, 2)}
	if ms := (&Evaluator{}).Evaluate(rs, ev); len(ms) != 0 {
		t.Errorf("an event of no change fired %d rules", len(ms))
	}
	ms := (&Evaluator{State: true}).Evaluate(rs, ev)
	if len(ms) != 2 || ms[0].Rule.Name != "big" || ms[1].Rule.Name != "enter" {
		t.Fatalf("matches %+v, want big and enter", ms)
	}
	for _, m := range ms {
		if m.Verdict.Transition != "" || m.Payload.Transition != "" {
			t.Errorf("%s: a state has no transition: %+v", m.Rule.Name, m.Verdict)
		}
	}
}

// An Evaluator without a redactor still blanks a Secret's values: the
// built-in default applies, so a caller that forgets the config's leaks none.
func TestEvaluatorWithoutRedactorRedactsSecrets(t *testing.T) {
	t.Parallel()
	f, err := config.Parse("t.yaml", []byte(`apiVersion: dynwatch/v1alpha1
actions: [{name: out, log: {}}]
rules:
  - name: s
    resources: [{group: "", resource: secrets}]
    actions: [out]
`))
	if err != nil {
		t.Fatal(err)
	}
	rs, ps := Compile(f)
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	obj := []byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"n","uid":"u","resourceVersion":"1"},"data":{"password":"aHVudGVyMg=="}}`)
	ev := event.New(event.Add, event.Resource{Version: "v1", Resource: "secrets", Kind: "Secret", Namespaced: true}, obj, nil, time.Now())
	ms := (&Evaluator{}).Evaluate(rs, ev)
	if len(ms) != 1 {
		t.Fatalf("%d matches, want 1", len(ms))
	}
	b, err := json.Marshal(ms[0].Payload)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "aHVudGVyMg==") {
		t.Errorf("payload holds the Secret's value: %s", b)
	}
}
