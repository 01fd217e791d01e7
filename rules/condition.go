package rules

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"
	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/fieldpath"
)

// condition is one compiled `when` entry: a gjson path, operator and value,
// or a CEL expression.
type condition struct {
	spec config.ConditionSpec
	old  bool
	// test decides the condition on the value found at the path.
	test func(r gjson.Result) bool
	// testAt is test for an operator that reads time (test is then nil),
	// and age its duration.
	testAt timeTest
	age    time.Duration
	// cel, when set, is the condition instead of path and test.
	cel *celCond
}

// holdsAt evaluates the condition on an event's objects at now, and says
// when its answer changes next with no event (zero: not before an event;
// see timeTest). An event without an old object (add, delete) has nothing
// at any old path.
func (c *condition) holdsAt(ev *event.Event, now time.Time) (bool, time.Time) {
	switch {
	case c.cel != nil:
		return c.cel.holds(ev, now)
	case c.testAt != nil:
		return c.testAt(ev.Get(c.old, c.spec.Path), now)
	}
	return c.test(ev.Get(c.old, c.spec.Path)), time.Time{}
}

// name is the condition as the config writes it, for messages.
func (c *condition) name() string {
	if c.cel != nil {
		return "cel: " + c.spec.CEL
	}
	return c.spec.Path + " " + c.spec.Op
}

// readsTime reports whether the condition's answer can change with time
// alone: an operator that reads time, or CEL that calls now().
func (c *condition) readsTime() bool {
	return c.testAt != nil || (c.cel != nil && c.cel.readsTime)
}

// paths are the object paths the condition reads.
func (c *condition) paths() []string {
	if c.cel != nil {
		return c.cel.paths
	}
	return []string{c.spec.Path}
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
	dur    time.Duration
	hasDur bool
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
		if d, ok := parseDuration(n.Value); ok {
			o.dur, o.hasDur = d, true
		}
	}
	return o, nil
}

// promDurationRE is a duration as Prometheus and many CRDs write it: whole
// numbers with units, largest first (1d12h, 1w, 30s).
var promDurationRE = regexp.MustCompile(`^(?:[0-9]+y)?(?:[0-9]+w)?(?:[0-9]+d)?(?:[0-9]+h)?(?:[0-9]+m)?(?:[0-9]+s)?(?:[0-9]+ms)?$`)

var promUnits = map[string]time.Duration{"y": 365 * 24 * time.Hour, "w": 7 * 24 * time.Hour, "d": 24 * time.Hour, "h": time.Hour, "m": time.Minute, "s": time.Second, "ms": time.Millisecond}

var promPartRE = regexp.MustCompile(`([0-9]+)(ms|y|w|d|h|m|s)`)

// parseDuration reads a Go duration (1h30m, 1.5s) or a Prometheus one (1d, 2w).
func parseDuration(s string) (time.Duration, bool) {
	if d, err := time.ParseDuration(s); err == nil {
		return d, true
	}
	if s == "" || !promDurationRE.MatchString(s) {
		return 0, false
	}
	var d time.Duration
	for _, m := range promPartRE.FindAllStringSubmatch(s, -1) {
		n, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil {
			return 0, false
		}
		d += time.Duration(n) * promUnits[m[2]]
	}
	return d, true
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
// RFC 3339 times, durations and Kubernetes quantities when both sides read as
// such. ok is
// false when the two cannot be ordered.
func (o *operand) compare(r gjson.Result) (order int, ok bool) {
	switch {
	case o.kind == gjson.Number && r.Type == gjson.Number:
		return cmpFloat(r.Num, o.num), true
	case o.kind == gjson.String && o.hasTm && r.Type == gjson.String:
		if t, err := time.Parse(time.RFC3339Nano, r.Str); err == nil {
			return t.Compare(o.tm), true
		}
	case o.hasDur && r.Type == gjson.String:
		// Before quantities: "5m" reads as both, and means minutes here.
		if d, ok := parseDuration(r.Str); ok {
			return cmp.Compare(d, o.dur), true
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

// compileCondition compiles one `when` entry through the operator table.
func compileCondition(cs config.ConditionSpec, celErrors *atomic.Uint64) (*condition, error) {
	c := &condition{spec: cs}
	if cs.CEL != "" {
		if cs.Path != "" || cs.Op != "" || cs.Value.IsSet() || cs.Object != "" {
			return nil, fieldErr("cel", "a cel condition takes no path, op, value or object: it reads object and oldObject itself")
		}
		cc, err := compileCEL(cs.CEL, celErrors)
		if err != nil {
			return nil, fieldErr("cel", "%v", err)
		}
		c.cel = cc
		return c, nil
	}
	if cs.Path == "" {
		return nil, fieldErr("path", "required (or give cel)")
	}
	if err := fieldpath.Check(cs.Path); err != nil {
		return nil, fieldErr("path", "%v", err)
	}
	switch cs.Object {
	case "", "new":
	case "old":
		c.old = true
	default:
		return nil, fieldErr("object", "unknown object %q (want new or old)", cs.Object)
	}
	if cs.Op == "" {
		return nil, fieldErr("op", "required (want one of %s)", operatorChoices())
	}
	op := LookupOperator(cs.Op)
	if op == nil {
		return nil, fieldErr("op", "unknown operator %q%s (want one of %s)", cs.Op, closestOperator(cs.Op), operatorChoices())
	}
	args, err := op.Arity.read(cs)
	if err != nil {
		return nil, err
	}
	if op.CompileAt != nil {
		return compileAt(c, op, args)
	}
	if c.test, err = op.Compile(args); err != nil {
		return nil, fieldErr("value", "%v", err)
	}
	if fieldpath.IsQuery(cs.Path) {
		c.test = overList(op, c.test)
	}
	return c, nil
}

// compileAt compiles the value of an operator that reads time into c.
func compileAt(c *condition, op *Operator, args Args) (*condition, error) {
	test, err := op.CompileAt(args)
	if err != nil {
		return nil, fieldErr("value", "%v", err)
	}
	if fieldpath.IsQuery(c.spec.Path) {
		test = overListAt(test)
	}
	c.testAt, c.age = test, args.One.dur
	return c, nil
}

// explain names condition i as the config writes it, and what it found.
func (c *condition) explain(i int, rec *recorder) (check, found string) {
	if c.cel != nil {
		found = "the objects (CEL)"
		if c.cel.readsTime {
			found += ", now() " + rec.now.UTC().Format(time.RFC3339)
		}
		return fmt.Sprintf("when[%d] cel %s", i, c.spec.CEL), found
	}
	doc, which := rec.obj, ""
	if c.old {
		doc, which = rec.old, " (old object)"
	}
	found = "nothing (the path is missing)"
	if doc == nil {
		found = "nothing (no old object: only updates have one)"
	} else if v := gjson.GetBytes(doc, c.spec.Path); v.Exists() {
		found = v.Raw
		if c.testAt != nil {
			found = c.explainAge(found, v, rec.now)
		}
	} else if root, rest, derived := event.DerivedRoot(c.spec.Path); derived {
		v := rec.ev.Get(c.old, c.spec.Path)
		if root == event.HealthRoot {
			v = rec.red.HealthField(rec.ev, c.old, rest)
		}
		if v.Exists() {
			found = v.Raw
		}
	}
	check = fmt.Sprintf("when[%d] %s%s %s", i, c.spec.Path, which, c.spec.Op)
	if c.spec.Value.IsSet() {
		v, _ := yamlText(c.spec.Value)
		check += " " + v
	}
	return check, found
}
