package rules

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Operators lists every `when` operator, in the order messages give them.
var Operators = []string{"exists", "notExists", "eq", "ne", "gt", "gte", "lt", "lte", "in", "notIn", "matches", "contains"}

// condition is one compiled `when` entry.
type condition struct {
	spec ConditionSpec
	old  bool
	// test decides the condition on the value found at the path.
	test func(r gjson.Result) bool
}

// holds evaluates the condition on an event's objects. An event without an old
// object (add, delete) has nothing at any old path.
func (c *condition) holds(obj, old []byte) bool {
	doc := obj
	if c.old {
		doc = old
	}
	var r gjson.Result
	if doc != nil {
		r = gjson.GetBytes(doc, c.spec.Path)
	}
	return c.test(r)
}

// condError names the condition field that an error is about.
type condError struct {
	field string
	err   error
}

func (e *condError) Error() string { return e.field + ": " + e.err.Error() }

func fieldErr(field, format string, args ...any) error {
	return &condError{field: field, err: fmt.Errorf(format, args...)}
}

// operand is a condition value with every typed reading of it prepared at load.
type operand struct {
	kind   gjson.Type // Null, False/True (as True with b), Number, String
	num    float64
	str    string
	b      bool
	qty    *resource.Quantity
	tm     time.Time
	hasTm  bool
	source string // as written, for messages
}

func newOperand(n *yaml.Node) (operand, error) {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind != yaml.ScalarNode {
		return operand{}, errors.New("want a single value (a number, string, boolean or null)")
	}
	o := operand{source: n.Value}
	switch n.ShortTag() {
	case "!!null":
		o.kind = gjson.Null
	case "!!bool":
		o.kind = gjson.True
		o.b = n.Value == "true" || n.Value == "True" || n.Value == "TRUE"
	case "!!int", "!!float":
		f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
		if err != nil {
			var i int64
			if derr := n.Decode(&i); derr != nil {
				if derr := n.Decode(&f); derr != nil {
					return operand{}, fmt.Errorf("cannot read number %q", n.Value)
				}
			} else {
				f = float64(i)
			}
		}
		o.kind, o.num = gjson.Number, f
		if q, err := resource.ParseQuantity(strconv.FormatFloat(f, 'f', -1, 64)); err == nil {
			o.qty = &q
		}
	default:
		o.kind, o.str = gjson.String, n.Value
		if q, err := resource.ParseQuantity(n.Value); err == nil {
			o.qty = &q
		}
		if t, err := time.Parse(time.RFC3339Nano, n.Value); err == nil {
			o.tm, o.hasTm = t, true
		}
	}
	return o, nil
}

// equal is typed equality: a number never equals a string, whatever it spells.
func (o *operand) equal(r gjson.Result) bool {
	switch o.kind {
	case gjson.Null:
		return r.Type == gjson.Null && r.Exists()
	case gjson.True:
		return (r.Type == gjson.True || r.Type == gjson.False) && r.Bool() == o.b
	case gjson.Number:
		return r.Type == gjson.Number && r.Num == o.num
	default:
		return r.Type == gjson.String && r.Str == o.str
	}
}

// compare orders the value found against the operand: numbers numerically, and
// Kubernetes quantities and RFC 3339 times when both sides read as such. ok is
// false when the two cannot be ordered.
func (o *operand) compare(r gjson.Result) (cmp int, ok bool) {
	switch {
	case o.kind == gjson.Number && r.Type == gjson.Number:
		return cmpFloat(r.Num, o.num), true
	case o.kind == gjson.String && o.hasTm && r.Type == gjson.String:
		if t, err := time.Parse(time.RFC3339Nano, r.Str); err == nil {
			return t.Compare(o.tm), true
		}
	}
	if o.qty != nil && (r.Type == gjson.String || r.Type == gjson.Number) {
		text := r.Str
		if r.Type == gjson.Number {
			text = r.Raw
		}
		if q, err := resource.ParseQuantity(text); err == nil {
			return q.Cmp(*o.qty), true
		}
	}
	return 0, false
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	case math.IsNaN(a) || math.IsNaN(b):
		return 0
	}
	return 0
}

func compileCondition(cs ConditionSpec) (*condition, error) {
	c := &condition{spec: cs}
	if cs.Path == "" {
		return nil, fieldErr("path", "required")
	}
	if err := checkPath(cs.Path); err != nil {
		return nil, fieldErr("path", "%v", err)
	}
	switch cs.Object {
	case "", "new":
	case "old":
		c.old = true
	default:
		return nil, fieldErr("object", "unknown object %q (want new or old)", cs.Object)
	}
	needValue := cs.Op != "exists" && cs.Op != "notExists"
	if cs.Op == "" {
		return nil, fieldErr("op", "required (want one of %s)", strings.Join(Operators, ", "))
	}
	if !needValue && cs.Value.IsSet() {
		return nil, fieldErr("value", "%s takes no value", cs.Op)
	}
	var o operand
	if needValue && cs.Op != "in" && cs.Op != "notIn" {
		if !cs.Value.IsSet() {
			if !isOperator(cs.Op) {
				return nil, fieldErr("op", "unknown operator %q (want one of %s)", cs.Op, strings.Join(Operators, ", "))
			}
			return nil, fieldErr("value", "required for %s", cs.Op)
		}
		var err error
		if o, err = newOperand(cs.Value.Node); err != nil {
			return nil, fieldErr("value", "%v", err)
		}
	}
	switch cs.Op {
	case "exists":
		c.test = func(r gjson.Result) bool { return r.Exists() }
	case "notExists":
		c.test = func(r gjson.Result) bool { return !r.Exists() }
	case "eq":
		c.test = func(r gjson.Result) bool { return r.Exists() && o.equal(r) }
	case "ne":
		c.test = func(r gjson.Result) bool { return r.Exists() && !o.equal(r) }
	case "gt", "gte", "lt", "lte":
		if o.kind != gjson.Number && o.qty == nil && !o.hasTm {
			return nil, fieldErr("value", "%s needs a number, a quantity (500m, 1Gi) or an RFC 3339 time, got %q", cs.Op, o.source)
		}
		want := map[string]func(int) bool{
			"gt":  func(c int) bool { return c > 0 },
			"gte": func(c int) bool { return c >= 0 },
			"lt":  func(c int) bool { return c < 0 },
			"lte": func(c int) bool { return c <= 0 },
		}[cs.Op]
		c.test = func(r gjson.Result) bool {
			cmp, ok := o.compare(r)
			return ok && want(cmp)
		}
	case "in", "notIn":
		if !cs.Value.IsSet() {
			return nil, fieldErr("value", "required for %s: a list of values", cs.Op)
		}
		n := cs.Value.Node
		if n.Kind != yaml.SequenceNode {
			return nil, fieldErr("value", "%s needs a list of values", cs.Op)
		}
		set := make([]operand, 0, len(n.Content))
		for _, e := range n.Content {
			eo, err := newOperand(e)
			if err != nil {
				return nil, fieldErr("value", "%v", err)
			}
			set = append(set, eo)
		}
		in := cs.Op == "in"
		c.test = func(r gjson.Result) bool {
			if !r.Exists() {
				return false
			}
			for i := range set {
				if set[i].equal(r) {
					return in
				}
			}
			return !in
		}
	case "matches":
		if o.kind != gjson.String {
			return nil, fieldErr("value", "matches needs a regular expression string, got %s", o.source)
		}
		if _, err := regexp.Compile(o.str); err != nil {
			return nil, fieldErr("value", "bad regular expression: %v", err)
		}
		// matches is anchored: the expression must match the whole string.
		re := regexp.MustCompile(`^(?:` + o.str + `)$`)
		c.test = func(r gjson.Result) bool {
			switch r.Type {
			case gjson.String:
				return re.MatchString(r.Str)
			case gjson.Number, gjson.True, gjson.False:
				return re.MatchString(r.Raw)
			}
			return false
		}
	case "contains":
		c.test = func(r gjson.Result) bool {
			switch {
			case r.Type == gjson.String:
				return o.kind == gjson.String && strings.Contains(r.Str, o.str)
			case r.IsArray():
				found := false
				r.ForEach(func(_, e gjson.Result) bool {
					found = o.equal(e)
					return !found
				})
				return found
			}
			return false
		}
	default:
		return nil, fieldErr("op", "unknown operator %q (want one of %s)", cs.Op, strings.Join(Operators, ", "))
	}
	return c, nil
}

func isOperator(op string) bool {
	for _, o := range Operators {
		if o == op {
			return true
		}
	}
	return false
}

// checkPath reports a gjson path that cannot be what the user meant: empty
// components, a dangling escape or modifier, unbalanced brackets.
func checkPath(p string) error {
	if p == "" {
		return errors.New("empty path")
	}
	depth, inQuote := 0, false
	prev := byte('.')
	for i := 0; i < len(p); i++ {
		ch := p[i]
		if inQuote {
			switch ch {
			case '\\':
				i++
			case '"':
				inQuote = false
			}
			continue
		}
		switch ch {
		case '\\':
			if i == len(p)-1 {
				return fmt.Errorf("path %q ends with an escape character", p)
			}
			i++
			prev = 'a'
			continue
		case '"':
			if depth > 0 {
				inQuote = true
			}
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
			if depth < 0 {
				return fmt.Errorf("path %q has an unbalanced %q", p, ch)
			}
		case '.', '|':
			if depth == 0 && (prev == '.' || prev == '|') {
				return fmt.Errorf("path %q has an empty component (escape a literal dot as \\.)", p)
			}
		}
		prev = ch
	}
	if depth != 0 || inQuote {
		return fmt.Errorf("path %q has an unclosed bracket or quote", p)
	}
	if prev == '.' || prev == '|' {
		return fmt.Errorf("path %q ends with %q", p, string(prev))
	}
	return nil
}

// checkPlainPath is checkPath for paths that dynwatch walks itself (redaction):
// keys separated by dots, with \. for a literal dot; no queries or wildcards.
func checkPlainPath(p string) error {
	if err := checkPath(p); err != nil {
		return err
	}
	for _, k := range splitPlainPath(p) {
		if strings.ContainsAny(k, "*?#|@()[]{}!") {
			return fmt.Errorf("path %q: only plain keys separated by dots are allowed here", p)
		}
	}
	return nil
}

// splitPlainPath splits a dotted path, honouring \. as a literal dot.
func splitPlainPath(p string) []string {
	var keys []string
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		switch {
		case p[i] == '\\' && i+1 < len(p):
			i++
			b.WriteByte(p[i])
		case p[i] == '.':
			keys = append(keys, b.String())
			b.Reset()
		default:
			b.WriteByte(p[i])
		}
	}
	return append(keys, b.String())
}
