package rules

import (
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/dynwatch/dynwatch/event"
)

// cond compiles one condition written as YAML flow, e.g. `{path: a, op: eq, value: 1}`.
func cond(t *testing.T, src string) *condition {
	t.Helper()
	var node yaml.Node
	if err := yaml.Unmarshal([]byte(src), &node); err != nil {
		t.Fatal(err)
	}
	d := &decoder{file: "t", lines: map[string]int{}}
	var cs ConditionSpec
	d.decode(&node, reflectValue(&cs), "")
	if len(d.problems) > 0 {
		t.Fatal(d.problems)
	}
	c, err := compileCondition(cs)
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	return c
}

const obj = `{
  "spec": {"replicas": 7, "five": 5, "str5": "5", "enabled": true, "name": "web-api",
           "cpu": "500m", "mem": "2Gi", "tags": ["a", "b", 3], "nothing": null},
  "metadata": {"creationTimestamp": "2026-11-29T10:00:00Z", "labels": {"app.kubernetes.io/name": "x"}}
}`

func TestConditions(t *testing.T) {
	tests := []struct {
		name string
		cond string
		want bool
	}{
		{"gt number holds", `{path: spec.replicas, op: gt, value: 5}`, true},
		{"gt equal number fails", `{path: spec.five, op: gt, value: 5}`, false},
		{"gte equal number", `{path: spec.five, op: gte, value: 5}`, true},
		{"lt", `{path: spec.five, op: lt, value: 5.5}`, true},
		{"eq number", `{path: spec.five, op: eq, value: 5}`, true},
		{"eq string never equals number", `{path: spec.five, op: eq, value: "5"}`, false},
		{"eq number never equals string", `{path: spec.str5, op: eq, value: 5}`, false},
		{"eq string", `{path: spec.str5, op: eq, value: "5"}`, true},
		{"ne number", `{path: spec.five, op: ne, value: 6}`, true},
		{"ne missing path does not hold", `{path: spec.missing, op: ne, value: 6}`, false},
		{"eq bool", `{path: spec.enabled, op: eq, value: true}`, true},
		{"eq bool vs string", `{path: spec.enabled, op: eq, value: "true"}`, false},
		{"eq null", `{path: spec.nothing, op: eq, value: null}`, true},
		{"exists", `{path: spec.replicas, op: exists}`, true},
		{"exists null value", `{path: spec.nothing, op: exists}`, true},
		{"notExists on missing", `{path: spec.missing, op: notExists}`, true},
		{"notExists on present", `{path: spec.replicas, op: notExists}`, false},
		{"gt on missing does not hold", `{path: spec.missing, op: gt, value: 1}`, false},
		{"quantity gt", `{path: spec.cpu, op: gt, value: 250m}`, true},
		{"quantity lt across units", `{path: spec.mem, op: lt, value: 3000Mi}`, true},
		{"quantity vs number", `{path: spec.cpu, op: lt, value: 1}`, true},
		{"time gt", `{path: metadata.creationTimestamp, op: gt, value: "2026-11-29T09:59:59Z"}`, true},
		{"time lt", `{path: metadata.creationTimestamp, op: lt, value: "2026-01-01T00:00:00Z"}`, false},
		{"string and number cannot be ordered", `{path: spec.name, op: gt, value: 1}`, false},
		{"matches whole string", `{path: spec.name, op: matches, value: "web-.*"}`, true},
		{"matches is anchored at the start", `{path: spec.name, op: matches, value: "api"}`, false},
		{"matches is anchored at the end", `{path: spec.name, op: matches, value: "web"}`, false},
		{"matches alternation stays anchored", `{path: spec.name, op: matches, value: "web|api"}`, false},
		{"in", `{path: spec.replicas, op: in, value: [1, 7]}`, true},
		{"in typed", `{path: spec.replicas, op: in, value: ["7"]}`, false},
		{"notIn", `{path: spec.name, op: notIn, value: [a, b]}`, true},
		{"notIn missing does not hold", `{path: spec.missing, op: notIn, value: [a]}`, false},
		{"contains substring", `{path: spec.name, op: contains, value: "b-a"}`, true},
		{"contains array element", `{path: spec.tags, op: contains, value: b}`, true},
		{"contains array element typed", `{path: spec.tags, op: contains, value: 3}`, true},
		{"contains array element missing", `{path: spec.tags, op: contains, value: c}`, false},
		{"escaped dot in path", `{path: metadata.labels.app\.kubernetes\.io/name, op: eq, value: x}`, true},
		{"gjson query", `{path: "spec.tags.#(==\"b\")", op: exists}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := cond(t, tt.cond).holds([]byte(obj), nil); got != tt.want {
				t.Errorf("%s on the object = %v, want %v", tt.cond, got, tt.want)
			}
		})
	}
}

func TestOldObjectCondition(t *testing.T) {
	c := cond(t, `{path: status.phase, object: old, op: eq, value: Running}`)
	newObj := []byte(`{"status":{"phase":"Failed"}}`)
	oldObj := []byte(`{"status":{"phase":"Running"}}`)
	if !c.holds(newObj, oldObj) {
		t.Error("object: old should read the old object")
	}
	if c.holds(oldObj, newObj) {
		t.Error("object: old read the new object")
	}
	if c.holds(newObj, nil) {
		t.Error("an add has no old object: the condition must not hold")
	}
}

func TestChangedPaths(t *testing.T) {
	old := `{"metadata":{"resourceVersion":"1","labels":{"a":"1"},"managedFields":[{"x":1}]},
	         "spec":{"replicas":1,"template":{"containers":[{"image":"a"},{"image":"b"}]},"gone":{"x":1,"y":[]}}}`
	new := `{"metadata":{"resourceVersion":"2","labels":{"a":"1","b.c":"2"},"managedFields":[{"x":2}]},
	         "spec":{"replicas":3,"template":{"containers":[{"image":"a"},{"image":"c"},{"image":"d"}]}}}`
	got := ChangedPaths([]byte(old), []byte(new))
	want := []string{
		`metadata.labels.b\.c`,
		"spec.gone.x",
		"spec.gone.y",
		"spec.replicas",
		"spec.template.containers.1.image",
		"spec.template.containers.2.image",
	}
	if !slices.Equal(got, want) {
		t.Errorf("ChangedPaths:\n got %s\nwant %s", strings.Join(got, " "), strings.Join(want, " "))
	}
	if got := ChangedPaths([]byte(old), []byte(old)); len(got) != 0 {
		t.Errorf("no change: got %v", got)
	}
}

func TestRuleMatch(t *testing.T) {
	f, err := Parse("t.yaml", []byte(`
apiVersion: dynwatch/v1alpha1
actions: [{name: out, log: {}}]
rules:
  - name: scale
    resources: [{kind: Deployment}]
    namespaces: [prod]
    labelSelector: "team=payments"
    on: [update]
    changed: [spec.replicas]
    fields: {replicas: spec.replicas, missing: spec.nope}
    actions: [out]
`))
	if err != nil {
		t.Fatal(err)
	}
	r := f.Rules[0]
	base := `{"metadata":{"labels":{"team":"payments"}},"spec":{"replicas":%d}}`
	mk := func(n int) []byte { return []byte(strings.Replace(base, "%d", string(rune('0'+n)), 1)) }
	tests := []struct {
		name string
		ev   event.Event
		want bool
	}{
		{"scale fires", event.Event{Type: event.Update, Namespace: "prod", Object: mk(3), OldObject: mk(1)}, true},
		{"no change at the path", event.Event{Type: event.Update, Namespace: "prod", Object: mk(1), OldObject: mk(1)}, false},
		{"other namespace", event.Event{Type: event.Update, Namespace: "dev", Object: mk(3), OldObject: mk(1)}, false},
		{"add is not in on", event.Event{Type: event.Add, Namespace: "prod", Object: mk(3)}, false},
		{"label selector", event.Event{Type: event.Update, Namespace: "prod", Object: []byte(`{"spec":{"replicas":3}}`), OldObject: mk(1)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.Match(&tt.ev); got != tt.want {
				t.Errorf("Match = %v, want %v", got, tt.want)
			}
		})
	}
	ev := tests[0].ev
	pl := r.Payload(f.Prepare(&ev))
	if string(pl.Fields["replicas"]) != "3" || string(pl.Fields["missing"]) != "null" {
		t.Errorf("fields = %s", pl.Fields)
	}
	if !slices.Equal(pl.Changed, []string{"spec.replicas"}) {
		t.Errorf("changed = %v", pl.Changed)
	}
}

func TestRedact(t *testing.T) {
	f, err := Parse("t.yaml", []byte("apiVersion: dynwatch/v1alpha1\nactions: [{name: out, log: {}}]\nrules: [{name: r, resources: [{kind: Secret}], actions: [out]}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	secret := event.Resource{Version: "v1", Resource: "secrets", Kind: "Secret", Namespaced: true}
	obj := []byte(`{"kind":"Secret","data":{"password":"U0VOVElORUw="},"metadata":{"name":"s","annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"stringData\":{\"password\":\"SENTINEL\"}}","keep":"me"}}}`)
	got := string(f.Redactor.Redact(secret, obj))
	for _, leak := range []string{"U0VOVElORUw=", "SENTINEL"} {
		if strings.Contains(got, leak) {
			t.Errorf("redacted object still holds %q: %s", leak, got)
		}
	}
	for _, keep := range []string{`"password":"<redacted>"`, `"keep":"me"`} {
		if !strings.Contains(got, keep) {
			t.Errorf("redacted object lacks %s: %s", keep, got)
		}
	}
	cm := event.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}
	if got := f.Redactor.Redact(cm, obj); &got[0] != &obj[0] {
		t.Error("a ConfigMap was copied; only configured kinds should be touched")
	}
}
