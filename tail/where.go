package tail

import (
	"encoding/json"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/rules"
)

// WhereSyntax explains --where, for tail's help.
const WhereSyntax = `--where 'PATH OP VALUE' with OP one of == != > >= < <= =~ (an RE2 regexp matching the whole value),
or 'PATH' (the path exists) or '!PATH' (it does not). VALUE is read as JSON when it parses
(5, true, "5", null), else as a string. PATH is a gjson path, e.g. spec.replicas or
metadata.labels.app\.kubernetes\.io/name, or kubectl's spelling of one (.spec.replicas, {.spec.replicas},
.spec.containers[0].image). The config's spelled operators work too (spec.replicas gt 3,
metadata.name matches web-.*, spec.paused notExists). Examples: --where 'spec.replicas > 3'
--where 'status.phase == Running' --where '!spec.paused'. --where-cel takes a CEL expression over
object and oldObject instead: --where-cel 'object.status.readyReplicas < object.spec.replicas'`

// ParseWhere reads one --where expression into a condition. Its path may be
// written as kubectl writes one (.spec.size, {.spec.size}): see kubePath.
func ParseWhere(expr string) (config.ConditionSpec, error) {
	cs, err := parseWhere(expr)
	if err != nil || cs.Path == "" {
		return cs, err
	}
	if cs.Path, err = kubePath(cs.Path); err != nil {
		return config.ConditionSpec{}, err
	}
	return cs, nil
}

func parseWhere(expr string) (config.ConditionSpec, error) {
	expr = strings.TrimSpace(expr)
	if cs, ok, err := parseSpelled(expr); ok || err != nil {
		return cs, err
	}
	o, at := findOperator(expr)
	if o == nil {
		if err := singleEquals(expr); err != nil {
			return config.ConditionSpec{}, err
		}
		if hasSpace(expr) || expr == "" || expr == "!" {
			return config.ConditionSpec{}, fmt.Errorf("cannot read %q: no operator (want PATH OP VALUE with OP one of %s)", expr, operatorList())
		}
		if p, ok := strings.CutPrefix(expr, "!"); ok {
			return config.ConditionSpec{Path: p, Op: "notExists"}, nil
		}
		return config.ConditionSpec{Path: expr, Op: "exists"}, nil
	}
	path := strings.TrimSpace(expr[:at])
	raw := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(expr[at:]), o.Symbol))
	switch {
	case path == "" || raw == "":
		return config.ConditionSpec{}, fmt.Errorf("cannot read %q: want PATH %s VALUE", expr, o.Symbol)
	case hasSpace(path):
		// "spec.size => 3": what follows the path is not an operator.
		head, _, _ := cutSpace(path)
		bad, _, _ := strings.Cut(strings.TrimSpace(expr[len(head):]), " ")
		return config.ConditionSpec{}, fmt.Errorf("cannot read %q: after the path %q comes %q, which is not an operator (want one of %s)",
			expr, head, bad, operatorList())
	}
	return config.ConditionSpec{Path: path, Op: o.Name, Value: config.Value{Node: valueNode(raw, o.Name == "matches")}}, nil
}

// parseSpelled reads PATH OP VALUE with spaces around OP, a name or a symbol
// as the config's `op` takes it: PATH gt 3, PATH > 3, PATH matches RE, PATH
// exists. ok is false when expr is not of that form.
func parseSpelled(expr string) (cs config.ConditionSpec, ok bool, err error) {
	path, rest, found := cutSpace(expr)
	if !found {
		return cs, false, nil
	}
	name, raw, _ := strings.Cut(strings.TrimSpace(rest), " ")
	raw = strings.TrimSpace(raw)
	op := rules.LookupOperator(name) // a name (gt) or its symbol (>)
	switch {
	case op == nil:
		return cs, false, nil
	case op.Arity == rules.NoValue && raw != "":
		return cs, true, fmt.Errorf("cannot read %q: %s takes no value", expr, name)
	case op.Arity == rules.NoValue:
		return config.ConditionSpec{Path: path, Op: op.Name}, true, nil
	case raw == "":
		return cs, true, fmt.Errorf("cannot read %q: want PATH %s VALUE", expr, name)
	case op.Arity == rules.ListValue:
		var n yaml.Node
		if yaml.Unmarshal([]byte(raw), &n) != nil || len(n.Content) != 1 {
			return cs, true, fmt.Errorf("cannot read %q: %s needs a list such as [a, b]", expr, name)
		}
		return config.ConditionSpec{Path: path, Op: op.Name, Value: config.Value{Node: n.Content[0]}}, true, nil
	}
	return config.ConditionSpec{Path: path, Op: op.Name, Value: config.Value{Node: valueNode(raw, op.Name == "matches")}}, true, nil
}

// operatorList names every operator --where takes: symbols and spelled names.
func operatorList() string {
	var out []string
	for _, o := range rules.Symbols() {
		out = append(out, o.Symbol)
	}
	return strings.Join(out, " ") + ", or spelled: " + strings.Join(rules.Operators(), ", ")
}

// hasSpace reports white space outside brackets and quotes.
func hasSpace(s string) bool {
	_, _, found := cutSpace(s)
	return found
}

// cutSpace cuts s at its first white space outside brackets and quotes.
func cutSpace(s string) (before, after string, found bool) {
	i := topLevel(s, func(i int) bool { return s[i] == ' ' || s[i] == '\t' })
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+1:], true
}

// findOperator finds the first operator symbol that stands outside brackets,
// parentheses and quotes, so that a gjson query in the path
// (spec.endpoints.#(interval=="7s")) is read as part of the path.
func findOperator(expr string) (*rules.Operator, int) {
	symbols := rules.Symbols()
	var found *rules.Operator
	at := topLevel(expr, func(i int) bool {
		for j := range symbols {
			if i > 0 && strings.HasPrefix(expr[i:], symbols[j].Symbol) {
				found = &symbols[j]
				return true
			}
		}
		return false
	})
	return found, at
}

// topLevel returns the first index of s, outside brackets, parentheses and
// quotes (and not escaped), at which match holds; -1 if none.
func topLevel(s string, match func(i int) bool) int {
	depth, quoted := 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			i++
		case quoted:
			quoted = c != '"'
		case c == '"' && depth > 0:
			quoted = true
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			depth--
		case depth == 0 && match(i):
			return i
		}
	}
	return -1
}

// valueNode reads VALUE as JSON when it parses, else as a string; a regexp is
// always a string.
func valueNode(raw string, regexp bool) *yaml.Node {
	var v any
	if !regexp && json.Unmarshal([]byte(raw), &v) == nil {
		if _, isMap := v.(map[string]any); !isMap {
			if _, isList := v.([]any); !isList {
				var n yaml.Node
				if yaml.Unmarshal([]byte(raw), &n) == nil && len(n.Content) == 1 {
					return n.Content[0]
				}
			}
		}
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: raw}
}
