package payload

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/template"
	"text/template/parse"

	"github.com/tidwall/gjson"
)

// ParseTemplate compiles a webhook body template, once, and checks that every
// field it reads of the event is one the payload has, so that a misspelt field
// is a config error at load rather than a delivery error on every event. The
// template sees the payload as its JSON names it (.namespace, .object.spec.replicas).
// Errors that depend on an event's data (a key the object lacks, a function
// failing) can only show at delivery.
func ParseTemplate(body string) (*template.Template, error) {
	return parseTemplate(body, "the event", templateFields, sampleJSON)
}

// ParseGroupTemplate is ParseTemplate for the body of an action that groups:
// the template sees the group payload, .group (the by-labels), .count and
// .events (each a payload as ParseTemplate's templates see it, for range).
func ParseGroupTemplate(body string) (*template.Template, error) {
	return parseTemplate(body, "a grouped delivery", groupTemplateFields, groupSampleJSON)
}

func parseTemplate(body, what string, fields []string, sample []byte) (*template.Template, error) {
	t, err := template.New("body").Option("missingkey=error").Funcs(TemplateFuncs()).Parse(body)
	if err != nil {
		return nil, fmt.Errorf("bad template: %w", err)
	}
	if bad := unknownFields(t.Root, fields); len(bad) > 0 {
		return nil, fmt.Errorf("bad template: %s has no field %s (it has: %s)", what, strings.Join(bad, ", "), strings.Join(fields, " "))
	}
	if err := t.Execute(io.Discard, TemplateData(sample)); err != nil && !strings.Contains(err.Error(), "map has no entry") {
		return nil, fmt.Errorf("bad template: %w", err)
	}
	return t, nil
}

// groupTemplateFields are the group payload's top-level fields.
var groupTemplateFields = []string{".group", ".count", ".events"}

var groupSampleJSON = []byte(`{"group":{},"count":1,"events":[` + string(sampleJSON) + `]}`)

// templateFields are the payload's top-level fields, as the template reads them.
var templateFields = []string{".id", ".time", ".type", ".replay", ".rule", ".resource", ".namespace", ".name", ".uid",
	".resourceVersion", ".fields", ".changed", ".transition", ".object", ".oldObject"}

var sampleJSON = []byte(`{"id":"uid:1:add","time":"2026-01-01T00:00:00.000Z","type":"add","replay":false,"rule":"r",` +
	`"resource":{"group":"","version":"v1","resource":"configmaps","kind":"ConfigMap","namespaced":true},` +
	`"namespace":"ns","name":"n","uid":"uid","resourceVersion":"1","fields":{},"changed":[],"transition":"","object":{},"oldObject":null}`)

// TemplateData is what a body template executes on: the payload as its JSON
// spells it, decoded (so .object.spec.replicas reads the object); for a
// group payload, the group with each of its events decoded so.
func TemplateData(payloadJSON []byte) any {
	var v map[string]any
	if json.Unmarshal(payloadJSON, &v) != nil {
		return map[string]any{}
	}
	if events, ok := v["events"].([]any); ok && v["group"] != nil {
		for _, e := range events { // a group payload: each event as one is
			if m, ok := e.(map[string]any); ok {
				fillAbsent(m)
			}
		}
		return v
	}
	fillAbsent(v)
	return v
}

// fillAbsent sets the optional payload fields a payload lacks to nil.
func fillAbsent(v map[string]any) {
	for _, k := range []string{"fields", "changed", "transition", "oldObject"} {
		if _, ok := v[k]; !ok {
			v[k] = nil // absent from this payload, yet a field templates may read
		}
	}
}

// unknownFields walks the template's top scope (not inside range or with,
// where the dot is something else) for fields the payload does not have.
func unknownFields(n parse.Node, fields []string) []string {
	var bad []string
	var walk func(parse.Node)
	walk = func(n parse.Node) {
		switch n := n.(type) {
		case *parse.ListNode:
			if n == nil {
				return
			}
			for _, c := range n.Nodes {
				walk(c)
			}
		case *parse.ActionNode:
			walk(n.Pipe)
		case *parse.PipeNode:
			if n == nil {
				return
			}
			for _, c := range n.Cmds {
				for _, a := range c.Args {
					walk(a)
				}
			}
		case *parse.IfNode:
			walk(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		case *parse.RangeNode:
			walk(n.Pipe)
		case *parse.WithNode:
			walk(n.Pipe)
		case *parse.FieldNode:
			if f := "." + n.Ident[0]; !slices.Contains(fields, f) {
				bad = append(bad, f)
			}
		}
	}
	walk(n)
	return bad
}

// TemplateFuncs is the function set of webhook body templates. It is small and
// safe on purpose: nothing in it reads files, the environment or the network.
func TemplateFuncs() template.FuncMap {
	return template.FuncMap{
		// json encodes a value as JSON.
		"json": func(v any) (string, error) {
			if raw, ok := v.(json.RawMessage); ok {
				return string(raw), nil
			}
			b, err := json.Marshal(v)
			return string(b), err
		},
		// get reads a gjson path from a JSON document such as .Object; it
		// returns the value's JSON-decoded form, or nil when the path is missing.
		"get": func(doc any, path string) any {
			var raw []byte
			switch d := doc.(type) {
			case json.RawMessage:
				raw = d
			case []byte:
				raw = d
			case string:
				raw = []byte(d)
			case map[string]any, []any:
				raw, _ = json.Marshal(d)
			default:
				return nil
			}
			res := gjson.GetBytes(raw, path)
			if !res.Exists() {
				return nil
			}
			return res.Value()
		},
		"lower": strings.ToLower,
		"upper": strings.ToUpper,
		// join joins a list's elements (as the payload's JSON has them) with sep.
		"join": func(sep string, xs any) string {
			switch l := xs.(type) {
			case []string:
				return strings.Join(l, sep)
			case []any:
				parts := make([]string, len(l))
				for i, x := range l {
					parts[i] = fmt.Sprint(x)
				}
				return strings.Join(parts, sep)
			}
			return ""
		},
	}
}
