package rules

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dynwatch/dynwatch/event"
)

func deploy(replicas, ready int) []byte {
	return []byte(fmt.Sprintf(`{"metadata":{"name":"api","namespace":"prod","labels":{"team":"a"}},"spec":{"replicas":%d,"mem":"2Gi","containers":[{"name":"a","resources":{"limits":{"cpu":"1"}}},{"name":"b","resources":{}}]},"status":{"readyReplicas":%d}}`, replicas, ready))
}

// fire: enter, exit and edges fire when the conditions start or stop holding,
// on adds, updates and deletes, with the transition in the payload; CEL and
// gjson conditions alike.
func TestTransitions(t *testing.T) {
	rs := compile(t, `
apiVersion: dynwatch/v1alpha1
actions: [{name: out, log: {}}]
rules:
  - {name: edges, resources: [{kind: Deployment}], fire: edges, when: [{cel: "object.status.readyReplicas < object.spec.replicas"}], actions: [out]}
  - {name: enter, resources: [{kind: Deployment}], fire: enter, when: [{path: spec.replicas, op: gt, value: 3}], actions: [out]}
  - {name: exit, resources: [{kind: Deployment}], fire: exit, when: [{path: spec.replicas, op: gt, value: 3}], actions: [out]}
  - {name: always, resources: [{kind: Deployment}], when: [{path: spec.replicas, op: gt, value: 3}], actions: [out]}
`)
	type want struct{ edges, enter, exit, always string }
	tests := []struct {
		name     string
		ev       event.Event
		expected want
	}{
		{"add of a bad one enters", event.Event{Type: event.Add, Object: deploy(5, 2)}, want{"enter", "enter", "-", "fires"}},
		{"add of a good one", event.Event{Type: event.Add, Object: deploy(2, 2)}, want{"-", "-", "-", "-"}},
		{"update into bad", event.Event{Type: event.Update, OldObject: deploy(5, 5), Object: deploy(5, 4)}, want{"enter", "-", "-", "fires"}},
		{"update while bad", event.Event{Type: event.Update, OldObject: deploy(5, 3), Object: deploy(5, 4)}, want{"-", "-", "-", "fires"}},
		{"update out of bad", event.Event{Type: event.Update, OldObject: deploy(5, 4), Object: deploy(5, 5)}, want{"exit", "-", "-", "fires"}},
		{"scale down below 4 exits", event.Event{Type: event.Update, OldObject: deploy(5, 5), Object: deploy(3, 3)}, want{"-", "-", "exit", "-"}},
		{"delete of a bad one exits", event.Event{Type: event.Delete, Object: deploy(5, 1)}, want{"exit", "-", "exit", "fires"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[string]string{}
			for _, r := range rs {
				verdict := r.Decide(&tt.ev, nil)
				fires, tr := verdict.Fires, verdict.Transition
				v := "-"
				if fires {
					v = tr
					if tr == "" {
						v = "fires"
					}
				}
				got[r.Name] = v
				if explained, _ := r.Explain(&tt.ev, nil, nil); explained != verdict {
					t.Errorf("%s: Explain %+v, Decide %+v", r.Name, explained, verdict)
				}
			}
			w := tt.expected
			if got["edges"] != w.edges || got["enter"] != w.enter || got["exit"] != w.exit || got["always"] != w.always {
				t.Errorf("got %v, want %+v", got, w)
			}
		})
	}
	ev := event.Event{Type: event.Update, OldObject: deploy(5, 5), Object: deploy(5, 4)}
	_, steps := rs[0].Explain(&ev, nil, nil)
	if s := fmt.Sprint(steps); !strings.Contains(s, "fire: edges") || !strings.Contains(s, "before: does not hold, after: holds (enter)") {
		t.Errorf("explain shows no old and new verdicts: %s", s)
	}
}

// CEL conditions: two fields of one object, old against new, lists, has(),
// quantities; an expression that fails at run time is false and counted; the
// object is decoded once per event however many CEL rules read it.
func TestCELConditions(t *testing.T) {
	rs := compile(t, `
apiVersion: dynwatch/v1alpha1
actions: [{name: out, log: {}}]
rules:
  - {name: fields, resources: [{kind: Deployment}], when: [{cel: "object.status.readyReplicas < object.spec.replicas"}], actions: [out]}
  - {name: grew, resources: [{kind: Deployment}], when: [{cel: "oldObject != null && object.spec.replicas > oldObject.spec.replicas"}], actions: [out]}
  - {name: limits, resources: [{kind: Deployment}], when: [{cel: "object.spec.containers.all(c, has(c.resources.limits))"}], actions: [out]}
  - {name: memory, resources: [{kind: Deployment}], when: [{cel: "quantity(object.spec.mem).isGreaterThan(quantity('1Gi'))"}], actions: [out]}
  - {name: missing, resources: [{kind: Deployment}], when: [{cel: "object.spec.nope > 1"}], actions: [out]}
  - {name: labels, resources: [{kind: Deployment}], when: [{cel: "object.metadata.labels.team == 'a'"}, {path: spec.replicas, op: gte, value: 5}], actions: [out]}
`)
	ev := &event.Event{Type: event.Update, OldObject: deploy(3, 3), Object: deploy(5, 4)}
	got := map[string]bool{}
	for _, r := range rs {
		got[r.Name] = r.Decide(ev, nil).Fires
	}
	want := map[string]bool{"fields": true, "grew": true, "limits": false, "memory": true, "missing": false, "labels": true}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if n := ev.Decodes(); n != 2 {
		t.Errorf("the event's objects were decoded %d times for five CEL rules; want 2 (object and old object, once each)", n)
	}
	if rs[4].CELErrors() != 1 {
		t.Errorf("the failing expression counted %d errors, want 1", rs[4].CELErrors())
	}
	if p := fmt.Sprint(rs[0].Paths()); p != "[spec.replicas status.readyReplicas]" {
		t.Errorf("paths recorded for a CEL rule: %s", p)
	}
	add := &event.Event{Type: event.Add, Object: deploy(5, 4)}
	if rs[1].Decide(add, nil).Fires {
		t.Error("oldObject is null on an add")
	}
}

// An expression that would cost more than the limit stops, counts as false
// and is counted: a rule over a huge list cannot stall the pipeline.
func TestCELCostLimit(t *testing.T) {
	rs := compile(t, `
apiVersion: dynwatch/v1alpha1
actions: [{name: out, log: {}}]
rules:
  - {name: quadratic, resources: [{kind: ConfigMap}], when: [{cel: "object.items.all(x, object.items.all(y, x == y || x != y))"}], actions: [out]}
`)
	items := make([]string, 3000)
	for i := range items {
		items[i] = fmt.Sprint(i)
	}
	ev := &event.Event{Type: event.Add, Object: []byte(`{"items":[` + strings.Join(items, ",") + `]}`)}
	if rs[0].Decide(ev, nil).Fires || rs[0].CELErrors() != 1 {
		t.Errorf("over the cost limit: fires %v, errors %d", rs[0].Decide(ev, nil).Fires, rs[0].CELErrors())
	}
}
