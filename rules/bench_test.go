package rules

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/dynwatch/dynwatch/event"
	"github.com/tidwall/gjson"
)

// benchDeployment is a Deployment of about 3.4 KB of JSON: three containers
// with env, probes and resources.
func benchDeployment() []byte {
	var cs []string
	for i := range 3 {
		var env []string
		for j := range 12 {
			env = append(env, fmt.Sprintf(`{"name":"VAR_%d_%d","value":"value-%d-%d"}`, i, j, i, j))
		}
		cs = append(cs, fmt.Sprintf(`{"name":"c%d","image":"registry.example/app:%d","env":[%s],"resources":{"limits":{"cpu":"1","memory":"1Gi"},"requests":{"cpu":"100m","memory":"128Mi"}},"readinessProbe":{"httpGet":{"path":"/ready","port":8080},"periodSeconds":5},"livenessProbe":{"httpGet":{"path":"/live","port":8080}}}`, i, i, strings.Join(env, ",")))
	}
	return []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"api","namespace":"prod","labels":{"app":"api","team":"payments"},"uid":"u1","resourceVersion":"7"},"spec":{"replicas":5,"selector":{"matchLabels":{"app":"api"}},"template":{"metadata":{"labels":{"app":"api"}},"spec":{"containers":[` + strings.Join(cs, ",") + `]}}},"status":{"replicas":5,"readyReplicas":4}}`)
}

// BenchmarkRuleEval compares the per-event cost of a CEL condition with the
// same condition in gjson, and shows that a CEL rule and a gjson rule, or two
// CEL rules, on one resource decode the object once:
//
//	go test ./rules -run '^$' -bench BenchmarkRuleEval -benchmem -count 6 | benchstat -col /rules -
func BenchmarkRuleEval(b *testing.B) {
	rs := compile(b, `
apiVersion: dynwatch/v1alpha1
actions: [{name: out, log: {}}]
rules:
  - {name: gjson, resources: [{kind: Deployment}], when: [{path: status.readyReplicas, op: lt, value: 5}], actions: [out]}
  - {name: cel, resources: [{kind: Deployment}], when: [{cel: "object.status.readyReplicas < 5"}], actions: [out]}
  - {name: cel2, resources: [{kind: Deployment}], when: [{cel: "object.status.readyReplicas < object.spec.replicas"}], actions: [out]}
`)
	obj := benchDeployment()
	for _, tc := range []struct {
		name  string
		rules []*Rule
	}{
		{"rules=gjson", rs[:1]},
		{"rules=cel", rs[1:2]},
		{"rules=cel+gjson", rs[:2]},
		{"rules=cel+cel", rs[1:3]},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(obj)))
			decodes := 0
			for b.Loop() {
				ev := &event.Event{Type: event.Add, Object: obj}
				for _, r := range tc.rules {
					if !r.Decide(ev, nil).Fires {
						b.Fatal("the rule does not fire")
					}
				}
				decodes += ev.Decodes()
			}
			b.ReportMetric(float64(decodes)/float64(b.N), "decodes/event")
		})
	}
}

// BenchmarkRulesPerEvent evaluates 1, 10 and 50 gjson rules on one event, against
// a naive baseline that, as a watcher built on unstructured objects does,
// marshals the decoded object once per rule and reads each path with gjson:
//
//	go test ./rules -run '^$' -bench BenchmarkRulesPerEvent -benchmem -count 6 | benchstat -col /impl -
func BenchmarkRulesPerEvent(b *testing.B) {
	obj := benchDeployment()
	var decoded map[string]any
	if err := json.Unmarshal(obj, &decoded); err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1, 10, 50} {
		var src strings.Builder
		src.WriteString("apiVersion: dynwatch/v1alpha1\nactions: [{name: out, log: {}}]\nrules:\n")
		var paths [][]string
		for i := range n {
			fmt.Fprintf(&src, "  - {name: r%d, resources: [{kind: Deployment}], when: [{path: spec.replicas, op: gt, value: %d}, {path: 'spec.template.spec.containers.#.image', op: contains, value: 'registry.example/app:%d'}, {path: metadata.labels.team, op: eq, value: payments}], actions: [out]}\n", i, i%5, i%3)
			paths = append(paths, []string{"spec.replicas", "spec.template.spec.containers.#.image", "metadata.labels.team"})
		}
		rs := compile(b, src.String())
		b.Run(fmt.Sprintf("rules=%d/impl=dynwatch", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ev := &event.Event{Type: event.Update, Object: obj, OldObject: obj}
				for _, r := range rs {
					r.Decide(ev, nil)
				}
			}
		})
		b.Run(fmt.Sprintf("rules=%d/impl=naive", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, ps := range paths {
					raw, _ := json.Marshal(decoded)
					for _, p := range ps {
						_ = gjson.GetBytes(raw, p)
					}
				}
			}
		})
	}
}

// BenchmarkDecideInitialList decides an initial list's object against a
// rule with the default onStart, which it does not fire: what a start costs
// per object and rule.
//
//	go test ./rules -run '^$' -bench DecideInitialList -benchmem -count 6
func BenchmarkDecideInitialList(b *testing.B) {
	rs := compile(b, `
apiVersion: dynwatch/v1alpha1
actions: [{name: out, log: {}}]
rules:
  - {name: cms, resources: [{kind: ConfigMap}], actions: [out]}
`)
	ev := &event.Event{Type: event.Add, Object: benchDeployment(), Origin: event.InitialList}
	b.ReportAllocs()
	for b.Loop() {
		if rs[0].Decide(ev, nil).Fires {
			b.Fatal("an initial list's object fires a rule with onStart: none")
		}
	}
}
