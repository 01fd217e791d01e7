package rules

import (
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/tidwall/gjson"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/payload"
)

// cond compiles one condition written as YAML flow, e.g. `{path: a, op: eq, value: 1}`.
func cond(t *testing.T, src string) *condition {
	t.Helper()
	var node yaml.Node
	if err := yaml.Unmarshal([]byte(src), &node); err != nil {
		t.Fatal(err)
	}
	var cs config.ConditionSpec
	m := node.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i].Value, m.Content[i+1]
		switch k {
		case "path":
			cs.Path = v.Value
		case "op":
			cs.Op = v.Value
		case "object":
			cs.Object = v.Value
		case "value":
			cs.Value = config.Value{Node: v}
		default:
			t.Fatalf("unknown key %q", k)
		}
	}
	c, err := compileCondition(cs, new(atomic.Uint64))
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
			if got := cond(t, tt.cond).holds(&event.Event{Object: []byte(obj)}); got != tt.want {
				t.Errorf("%s on the object = %v, want %v", tt.cond, got, tt.want)
			}
		})
	}
}

func TestOldObjectCondition(t *testing.T) {
	c := cond(t, `{path: status.phase, object: old, op: eq, value: Running}`)
	newObj := []byte(`{"status":{"phase":"Failed"}}`)
	oldObj := []byte(`{"status":{"phase":"Running"}}`)
	if !c.holds(&event.Event{Object: newObj, OldObject: oldObj}) {
		t.Error("object: old should read the old object")
	}
	if c.holds(&event.Event{Object: oldObj, OldObject: newObj}) {
		t.Error("object: old read the new object")
	}
	if c.holds(&event.Event{Object: newObj}) {
		t.Error("an add has no old object: the condition must not hold")
	}
}

// compile loads a config file's content and compiles its rules.
func compile(t testing.TB, src string) []*Rule {
	t.Helper()
	f, err := config.Parse("t.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	rs, ps := Compile(f)
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	return rs
}

func TestRuleMatch(t *testing.T) {
	rs := compile(t, `
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
`)
	r := rs[0]
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
			if got := r.Decide(&tt.ev, nil).Fires; got != tt.want {
				t.Errorf("Match = %v, want %v", got, tt.want)
			}
		})
	}
	ev := tests[0].ev
	pl := r.Payload(payload.Prepare(payload.NewRedactor(config.DefaultRedact()), &ev), "")
	if string(pl.Fields["replicas"]) != "3" || string(pl.Fields["missing"]) != "null" {
		t.Errorf("fields = %s", pl.Fields)
	}
	if !slices.Equal(pl.Changed, []string{"spec.replicas"}) {
		t.Errorf("changed = %v", pl.Changed)
	}
}

// An operator is one row of the table: registering one (here a test-only
// startsWith with the symbol ^=) makes it compile in `when`, and lists it in
// Operators and tail's Symbols, with no other edit.
func TestOperatorTableRow(t *testing.T) {
	saved := slices.Clone(operators)
	t.Cleanup(func() { operators = saved })
	operators = append(operators, Operator{Name: "startsWith", Symbol: "^=", Arity: OneValue, Compile: func(a Args) (func(gjson.Result) bool, error) {
		if a.One.kind != gjson.String {
			return nil, errors.New("startsWith needs a string")
		}
		prefix := a.One.str
		return func(r gjson.Result) bool { return r.Type == gjson.String && strings.HasPrefix(r.Str, prefix) }, nil
	}})
	if !slices.Contains(Operators(), "startsWith") {
		t.Errorf("Operators() = %v", Operators())
	}
	if !slices.ContainsFunc(Symbols(), func(o Operator) bool { return o.Symbol == "^=" && o.Name == "startsWith" }) {
		t.Error("Symbols() lacks ^=")
	}
	c := cond(t, `{path: spec.name, op: startsWith, value: web-}`)
	if !c.holds(&event.Event{Object: []byte(obj)}) {
		t.Error("startsWith web- does not hold on web-api")
	}
	if c := cond(t, `{path: spec.name, op: startsWith, value: api}`); c.holds(&event.Event{Object: []byte(obj)}) {
		t.Error("startsWith api holds on web-api")
	}
	if _, err := compileCondition(config.ConditionSpec{Path: "a", Op: "startsWith"}, new(atomic.Uint64)); err == nil || !strings.Contains(err.Error(), "required for startsWith") {
		t.Errorf("missing value: %v", err)
	}
}

// A matches value that is valid alone but not once anchored is a problem at
// load, never a panic.
func TestMatchesAnchoringIsChecked(t *testing.T) {
	deep := strings.Repeat("(", 999) + "a" + strings.Repeat(")", 999) // valid alone, one group too deep anchored
	for _, v := range []string{`'\Qfoo'`, `'(a'`, "'" + deep + "'"} {
		var node yaml.Node
		if err := yaml.Unmarshal([]byte(v), &node); err != nil {
			t.Fatal(err)
		}
		_, err := compileCondition(config.ConditionSpec{Path: "a", Op: "matches", Value: config.Value{Node: node.Content[0]}}, new(atomic.Uint64))
		if err == nil || !strings.Contains(err.Error(), "bad regular expression") {
			t.Errorf("%s: %v", v, err)
		}
	}
}

// Paths with # yield lists: nested lists are flattened, an empty result is
// nothing found, and a condition holds on any value (ne and notIn: on every
// value). Durations order as durations, Go's and Prometheus' forms alike.
func TestQueryPathsAndDurations(t *testing.T) {
	const rule = `{"spec":{"groups":[
	  {"name":"a","rules":[{"alert":"Down","for":"5m","labels":{"severity":"critical"}},{"alert":"Slow","for":"1h","labels":{"severity":"warning"}}]},
	  {"name":"b","rules":[{"alert":"Full","for":"2d","labels":{"severity":"critical"}}]}],
	  "empty":[], "endpoints":[{"interval":"30s"},{"interval":"7s"}], "duration":"2160h", "ttl":"1d12h"}}`
	tests := []struct {
		name string
		cond string
		want bool
	}{
		{"contains in nested lists", `{path: spec.groups.#.rules.#.labels.severity, op: contains, value: critical}`, true},
		{"contains a value that is not there", `{path: spec.groups.#.rules.#.labels.severity, op: contains, value: info}`, false},
		{"exists on an empty query result is false", `{path: 'spec.groups.#.rules.#(labels.severity=="info")#.alert', op: exists}`, false},
		{"notExists on an empty query result", `{path: 'spec.groups.#.rules.#(labels.severity=="info")#.alert', op: notExists}`, true},
		{"exists on a non-empty query result", `{path: 'spec.groups.#.rules.#(labels.severity=="critical")#.alert', op: exists}`, true},
		{"a real empty list exists", `{path: spec.empty, op: exists}`, true},
		{"eq holds when any value equals", `{path: spec.endpoints.#.interval, op: eq, value: 7s}`, true},
		{"ne holds when no value equals", `{path: spec.endpoints.#.interval, op: ne, value: 7s}`, false},
		{"ne when none equals", `{path: spec.endpoints.#.interval, op: ne, value: 8s}`, true},
		{"in on a list", `{path: spec.groups.#.name, op: in, value: [b, c]}`, true},
		{"notIn on a list", `{path: spec.groups.#.name, op: notIn, value: [b, c]}`, false},
		{"matches any value", `{path: spec.groups.#.rules.#.alert, op: matches, value: "F.*"}`, true},
		{"duration lt", `{path: spec.endpoints.0.interval, op: lt, value: 1m}`, true},
		{"duration gt across units", `{path: spec.endpoints.0.interval, op: gt, value: 10s}`, true},
		{"duration in hours against days", `{path: spec.duration, op: gte, value: 90d}`, true},
		{"prometheus compound duration", `{path: spec.ttl, op: gt, value: 1d}`, true},
		{"prometheus weeks", `{path: spec.ttl, op: lt, value: 1w}`, true},
		{"any rule waits at least a day", `{path: spec.groups.#.rules.#.for, op: gte, value: 1d}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := cond(t, tt.cond).holds(&event.Event{Object: []byte(rule)}); got != tt.want {
				t.Errorf("%s = %v, want %v", tt.cond, got, tt.want)
			}
		})
	}
}

// Every --where symbol is an alias of its operator's name in a config's
// `op`: `op: ">"` compiles to gt, and holds where gt holds.
func TestOperatorSymbolsAsOp(t *testing.T) {
	for _, o := range Symbols() {
		t.Run(o.Symbol, func(t *testing.T) {
			path, values := "spec.five", []string{"4", "5", "6"}
			if o.Name == "matches" {
				path, values = "spec.name", []string{`"web-.*"`, `"api"`, `"web-api"`}
			}
			for _, v := range values {
				byName := cond(t, "{path: "+path+", op: "+o.Name+", value: "+v+"}")
				bySymbol := cond(t, "{path: "+path+", op: \""+o.Symbol+"\", value: "+v+"}")
				ev := &event.Event{Object: []byte(obj)}
				if byName.holds(ev) != bySymbol.holds(ev) {
					t.Errorf("op %q and op %s differ on %s %s", o.Symbol, o.Name, path, v)
				}
			}
		})
	}
	if LookupOperator("=") != nil || LookupOperator("") != nil {
		t.Error(`"=" or "" names an operator`)
	}
}

// holds is holdsAt's verdict at the event's time.
func (c *condition) holds(ev *event.Event) bool {
	held, _ := c.holdsAt(ev, ev.Time)
	return held
}
