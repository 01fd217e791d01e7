package rules

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/cel-go/cel"
	celcommon "github.com/google/cel-go/common"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
	"k8s.io/apiserver/pkg/cel/library"

	"github.com/dynwatch/dynwatch/event"
)

// celCostLimit bounds one evaluation (cel-go's cost units: about one per
// operation and per list element visited), so that a rule over a huge list
// cannot stall the pipeline. It is the budget Kubernetes gives one
// validation rule of a CRD.
const celCostLimit = 1_000_000

// celRecheck is how often a timed rule whose CEL calls now() is evaluated
// again with no event: when such an expression's answer changes cannot be
// known, so it is asked again.
const celRecheck = 30 * time.Second

// celNow is the hidden variable that now() reads: the evaluation's now,
// bound per evaluation (a CEL function is bound once, with the program). A
// name starting with @ cannot be written in an expression (CEL's own hidden
// names are so spelt).
const celNow = "@now"

// celEnv is the CEL environment of `when: [{cel: …}]`: object and oldObject
// as dynamic values, health (the object's, {status, message}), now() the
// evaluation's time as a timestamp, with the Kubernetes CEL libraries (lists,
// quantities, regexes, URLs) and the string extensions that CRD validation
// rules have.
var celEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable("object", cel.DynType),
		cel.Variable("oldObject", cel.DynType),
		cel.Variable(celNow, cel.TimestampType),
		cel.Macros(cel.GlobalMacro("now", 0, func(eh cel.MacroExprFactory, _ celast.Expr, _ []celast.Expr) (celast.Expr, *celcommon.Error) {
			return eh.NewIdent(celNow), nil
		})),
		cel.Variable("health", cel.DynType),
		ext.Strings(),
		library.Lists(),
		library.Quantity(),
		library.Regex(),
		library.URLs(),
	)
})

// celCond is a compiled CEL condition.
type celCond struct {
	prg cel.Program
	// paths are the object paths the expression reads: what restart state
	// records of each object for it.
	paths []string
	// errors counts evaluations that failed (no such key, cost limit, a
	// non-bool result); they count as false.
	errors *atomic.Uint64
	// readsTime: the expression calls now().
	readsTime bool
}

func compileCEL(expr string, errs *atomic.Uint64) (*celCond, error) {
	env, err := celEnv()
	if err != nil {
		return nil, err
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, fmt.Errorf("CEL: %s", strings.ReplaceAll(iss.Err().Error(), "\n", " "))
	}
	if t := ast.OutputType(); !t.IsExactType(types.BoolType) && !t.IsExactType(types.DynType) {
		return nil, fmt.Errorf("CEL: the expression must be true or false, but it is of type %s", t)
	}
	prg, err := env.Program(ast, cel.CostLimit(celCostLimit), cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, fmt.Errorf("CEL: %v", err)
	}
	c := &celCond{prg: prg, errors: errs}
	paths := map[string]bool{}
	c.readsTime = celPaths(ast.NativeRep().Expr(), paths)
	for p := range paths {
		c.paths = append(c.paths, p)
	}
	slices.Sort(c.paths)
	return c, nil
}

// holds evaluates the expression on the event's decoded objects at now; an
// error (no such key, the cost limit, a result that is not a bool) is false,
// and counted. An expression that calls now() is to be asked again
// celRecheck later.
func (c *celCond) holds(ev *event.Event, now time.Time) (bool, time.Time) {
	obj, old := ev.Decoded()
	vars := map[string]any{"object": obj, "oldObject": old, "health": func() any { return healthOf(ev) }}
	var recheck time.Time
	if c.readsTime { // else now is not boxed: most expressions do not read it
		vars[celNow], recheck = now, now.Add(celRecheck)
	}
	out, _, err := c.prg.Eval(vars)
	if err == nil {
		if b, ok := out.Value().(bool); ok {
			return b, recheck
		}
		err = errors.New("not a bool")
	}
	c.errors.Add(1)
	return false, recheck
}

// healthOf is the object's health as CEL reads it, computed only when an
// expression reads it: a map, or null without a Deriver.
func healthOf(ev *event.Event) any {
	h := ev.HealthOf(false)
	if h == nil {
		return nil
	}
	return map[string]any{"status": h.Status, "message": h.Message}
}

// celPaths collects the paths that the expression selects from object and
// oldObject (object.spec.replicas → spec.replicas; an index or a macro ends the
// path where it starts), and reports whether it calls now().
func celPaths(e celast.Expr, out map[string]bool) (readsTime bool) {
	walk := func(xs ...celast.Expr) {
		for _, x := range xs {
			readsTime = celPaths(x, out) || readsTime
		}
	}
	switch e.Kind() {
	case celast.IdentKind:
		if e.AsIdent() == event.HealthRoot {
			out[event.HealthRoot+".status"] = true // what health reads: Rule.Paths
		}
		return e.AsIdent() == celNow
	case celast.SelectKind:
		if p, ok := selectChain(e); ok {
			out[p] = true
			return false
		}
		walk(e.AsSelect().Operand())
	case celast.CallKind:
		call := e.AsCall()
		if call.IsMemberFunction() {
			walk(call.Target())
		}
		walk(call.Args()...)
	case celast.ComprehensionKind:
		c := e.AsComprehension()
		walk(c.IterRange(), c.AccuInit(), c.LoopCondition(), c.LoopStep(), c.Result())
	case celast.ListKind:
		walk(e.AsList().Elements()...)
	case celast.MapKind:
		for _, en := range e.AsMap().Entries() {
			walk(en.AsMapEntry().Key(), en.AsMapEntry().Value())
		}
	}
	return readsTime
}

// selectChain reads object.a.b.c (or oldObject.…) as the path a.b.c.
func selectChain(e celast.Expr) (string, bool) {
	var keys []string
	for e.Kind() == celast.SelectKind {
		s := e.AsSelect()
		keys = append(keys, s.FieldName())
		e = s.Operand()
	}
	if e.Kind() != celast.IdentKind || (e.AsIdent() != "object" && e.AsIdent() != "oldObject") || len(keys) == 0 {
		return "", false
	}
	slices.Reverse(keys)
	return strings.Join(keys, "."), true
}
