package health

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/ext"
	"k8s.io/apiserver/pkg/cel/library"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/fieldpath"
)

// Checker computes objects' health: a kind's own CEL expression where the
// config gives one, else the generic rules (Generic). It is safe for
// concurrent use, and built once per loaded config.
type Checker struct {
	kinds map[groupKind]*kindCEL
	// now is the clock of a Pod's scheduling window (tests set it).
	now func() time.Time
}

var _ event.Deriver = (*Checker)(nil)

type groupKind struct{ group, kind string }

// kindCEL is a kind's own health expression, compiled.
type kindCEL struct {
	prg   cel.Program
	paths []string
}

// Problem is a health entry that cannot be used, at its index and field
// (kind, cel), for the config's file:line messages.
type Problem struct {
	Index int
	Field string
	Err   error
}

func (p Problem) Error() string { return fmt.Sprintf("health[%d].%s: %v", p.Index, p.Field, p.Err) }

// celCostLimit bounds one evaluation, as a rule's CEL condition is bounded.
const celCostLimit = 1_000_000

// New compiles the config's health entries. An entry with a problem is left
// out (its kind gets the generic health) and reported; the config has
// already reported a missing kind and a duplicate.
func New(specs []config.HealthSpec) (*Checker, []Problem) {
	c := &Checker{kinds: map[groupKind]*kindCEL{}, now: time.Now}
	var ps []Problem
	for i, s := range specs {
		if s.Kind == "" {
			continue
		}
		k, err := compile(s.CEL)
		if err != nil {
			ps = append(ps, Problem{Index: i, Field: "cel", Err: err})
			continue
		}
		if _, dup := c.kinds[groupKind{s.Group, s.Kind}]; !dup {
			c.kinds[groupKind{s.Group, s.Kind}] = k
		}
	}
	return c, ps
}

// celEnv is the environment of a kind's health: object, the object decoded,
// with the libraries a rule's CEL has.
func celEnv() (*cel.Env, error) {
	return cel.NewEnv(cel.Variable("object", cel.DynType), ext.Strings(), library.Lists(),
		library.Quantity(), library.Regex(), library.URLs())
}

func compile(expr string) (*kindCEL, error) {
	if strings.TrimSpace(expr) == "" {
		return nil, fmt.Errorf("required: a CEL expression over object yielding a status")
	}
	env, err := celEnv()
	if err != nil {
		return nil, err
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, fmt.Errorf("CEL: %s", strings.ReplaceAll(iss.Err().Error(), "\n", " "))
	}
	switch t := ast.OutputType(); {
	case t.IsExactType(types.StringType), t.IsExactType(types.DynType), t.Kind() == types.MapKind:
	default:
		return nil, fmt.Errorf("CEL: the expression must yield a status (one of %s) or a map {status, message}, but it is of type %s", strings.Join(Statuses, ", "), t)
	}
	prg, err := env.Program(ast, cel.CostLimit(celCostLimit), cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, fmt.Errorf("CEL: %v", err)
	}
	k := &kindCEL{prg: prg}
	seen := map[string]bool{}
	objectPaths(ast.NativeRep().Expr(), seen)
	k.paths = slices.Sorted(func(yield func(string) bool) {
		for p := range seen {
			if !yield(p) {
				return
			}
		}
	})
	return k, nil
}

// Health returns obj's health: its kind's expression, or the generic rules.
func (c *Checker) Health(res event.Resource, obj []byte) event.Health {
	group, kind := kindOf(res, obj)
	if c != nil {
		if k := c.kinds[groupKind{group, kind}]; k != nil {
			return k.eval(obj)
		}
	}
	now := time.Now
	if c != nil && c.now != nil {
		now = c.now
	}
	return Generic(group, kind, obj, now())
}

// kindOf names the object's kind: the resource's when it knows it, else the
// object's apiVersion and kind.
func kindOf(res event.Resource, obj []byte) (group, kind string) {
	if res.Kind != "" {
		return res.Group, res.Kind
	}
	o := object(obj)
	if g, _, ok := strings.Cut(o.str("apiVersion", ""), "/"); ok {
		group = g
	}
	return group, o.str("kind", "")
}

// eval runs a kind's expression on obj. An error, or a value that is not
// one of the statuses, is Unknown, with why.
func (k *kindCEL) eval(obj []byte) event.Health {
	var v any
	if err := json.Unmarshal(obj, &v); err != nil {
		return h(Unknown, "health CEL: the object is not JSON: %v", err)
	}
	out, _, err := k.prg.Eval(map[string]any{"object": v})
	if err != nil {
		return h(Unknown, "health CEL: %v", err)
	}
	res, err := fromCEL(out)
	if err != nil {
		return h(Unknown, "health CEL: %v", err)
	}
	return res
}

// fromCEL reads the expression's value: a status, or a map with status and
// an optional message.
func fromCEL(out ref.Val) (event.Health, error) {
	var res event.Health
	switch v := out.Value().(type) {
	case string:
		res.Status = v
	default:
		m, err := out.ConvertToNative(mapType)
		if err != nil {
			return res, fmt.Errorf("yielded %v, not a status nor a map {status, message}", out.Value())
		}
		mm := m.(map[string]any)
		s, ok := mm["status"].(string)
		if !ok {
			return res, fmt.Errorf("yielded a map whose status is %v, not a string", mm["status"])
		}
		res.Status = s
		if msg, ok := mm["message"]; ok {
			res.Message = fmt.Sprint(msg)
		}
	}
	if !IsStatus(res.Status) {
		return res, fmt.Errorf("yielded status %q, not one of %s", res.Status, strings.Join(Statuses, ", "))
	}
	return res, nil
}

// objectPaths collects the paths an expression selects from object
// (object.status.phase → status.phase); an index or a macro ends a path where
// it starts, and object used whole reads every path ("").
func objectPaths(e celast.Expr, out map[string]bool) {
	switch e.Kind() {
	case celast.IdentKind:
		if e.AsIdent() == "object" {
			out[""] = true
		}
	case celast.SelectKind:
		if p, ok := selectChain(e); ok {
			out[p] = true
			return
		}
		objectPaths(e.AsSelect().Operand(), out)
	case celast.CallKind:
		if p, ok := selectChain(e); ok {
			out[p] = true
			return
		}
		call := e.AsCall()
		if call.IsMemberFunction() {
			objectPaths(call.Target(), out)
		}
		for _, a := range call.Args() {
			objectPaths(a, out)
		}
	case celast.ComprehensionKind:
		c := e.AsComprehension()
		for _, x := range []celast.Expr{c.IterRange(), c.AccuInit(), c.LoopCondition(), c.LoopStep(), c.Result()} {
			objectPaths(x, out)
		}
	case celast.ListKind:
		for _, x := range e.AsList().Elements() {
			objectPaths(x, out)
		}
	case celast.MapKind:
		for _, en := range e.AsMap().Entries() {
			objectPaths(en.AsMapEntry().Key(), out)
			objectPaths(en.AsMapEntry().Value(), out)
		}
	}
}

// selectChain reads object.a.b as the path a.b, and an index by a constant
// key or position as a select (object["a"]["b-c"], object.a.list[0]), as
// CEL needs for a key that is no identifier.
func selectChain(e celast.Expr) (string, bool) {
	var keys []string
chain:
	for {
		switch e.Kind() {
		case celast.SelectKind:
			keys = append(keys, e.AsSelect().FieldName())
			e = e.AsSelect().Operand()
		case celast.CallKind:
			k, operand, ok := constIndex(e)
			if !ok {
				break chain
			}
			keys = append(keys, k)
			e = operand
		default:
			break chain
		}
	}
	if e.Kind() != celast.IdentKind || e.AsIdent() != "object" || len(keys) == 0 {
		return "", false
	}
	slices.Reverse(keys)
	return strings.Join(keys, "."), true
}

// constIndex reads operand[key] whose key is a constant: a string that is a
// plain path key (no dot, no gjson syntax), or a position; ok is false for
// any other call.
func constIndex(e celast.Expr) (key string, operand celast.Expr, ok bool) {
	call := e.AsCall()
	if call.FunctionName() != operators.Index || len(call.Args()) != 2 || call.Args()[1].Kind() != celast.LiteralKind {
		return "", nil, false
	}
	switch v := call.Args()[1].AsLiteral().Value().(type) {
	case string:
		if keys, plain := fieldpath.Split(v); !plain || len(keys) != 1 || keys[0] != v {
			return "", nil, false
		}
		key = v
	case int64:
		if v < 0 {
			return "", nil, false
		}
		key = strconv.FormatInt(v, 10)
	default:
		return "", nil, false
	}
	return key, call.Args()[0], true
}

// genericPaths are the paths the generic rules read: the object's kind, its
// metadata's generation, deletion and creation, the few fields of spec the
// built-in kinds read (kinds.go), and status whole. Not spec whole: a redact
// path under it (a pod template's env) would make it a digest in the record,
// which cannot be read back, and an old object rebuilt without its replicas
// would have another health; and a pod template is most of an object.
var genericPaths = []string{"apiVersion", "kind", "metadata.creationTimestamp", "metadata.deletionTimestamp",
	"metadata.generation", "spec.clusterIP", "spec.completions", "spec.parallelism", "spec.progressDeadlineSeconds",
	"spec.replicas", "spec.type", "spec.updateStrategy.rollingUpdate.partition", "spec.updateStrategy.type", "status"}

// Paths returns the object paths health reads, sorted: what restart state
// records of each object for a rule that reads health.*, so that an old
// object rebuilt from the record has the health it had. With c, its kinds'
// expressions' paths too ("" when one reads the object whole).
func Paths(c *Checker) []string {
	ps := slices.Clone(genericPaths)
	if c != nil {
		for _, k := range c.kinds {
			ps = append(ps, k.paths...)
		}
	}
	slices.Sort(ps)
	return slices.Compact(ps)
}

// mapType is what a map result converts to.
var mapType = reflect.TypeFor[map[string]any]()
