package rules

import (
	"errors"
	"fmt"
	"github.com/dynwatch/dynwatch/editdist"
	"regexp"
	"slices"
	"strings"

	"github.com/tidwall/gjson"
	"gopkg.in/yaml.v3"

	"github.com/dynwatch/dynwatch/config"
)

// Arity is what an operator takes as its value.
type Arity uint8

// The arities.
const (
	NoValue   Arity = iota // exists, notExists
	OneValue               // a single typed value
	ListValue              // a list of typed values
)

// Args are an operator's compiled value: One for OneValue, List for ListValue.
type Args struct {
	One  operand
	List []operand
}

// Operator is one row of the operator table: its name in the config, its symbol
// on tail's --where and in the config ("" when it has none), what value it takes, and how it
// compiles that value into a test of the value found at the path.
type Operator struct {
	Name   string
	Symbol string
	Arity  Arity
	// OnList is how the operator reads the list of values a # path yields.
	OnList  Quantifier
	Compile compileFunc
	// CompileAt is set instead of Compile on an operator that reads time
	// (olderThan, newerThan): its test is given the evaluation's now, and
	// says when its answer changes with no event.
	CompileAt compileAtFunc
}

// Quantifier is how an operator holds on the list of values a path with #
// yields (nested lists flattened; an empty list counts as missing).
type Quantifier uint8

// The quantifiers.
const (
	AnyElement   Quantifier = iota // holds when it holds for any value (eq, gt, matches, in)
	EveryElement                   // holds when it holds for every value (ne, notIn: none equals)
	WholeList                      // reads the list as a whole (exists, contains)
)

// operators is the table every `when` entry and --where expression compiles
// through; Operators, messages and tail's symbols derive from it. Symbols that
// share a prefix are listed longest first (">=" before ">"), so that a scan in
// table order reads the longer one.
var operators = []Operator{
	{Name: "exists", Arity: NoValue, OnList: WholeList, Compile: exists},
	{Name: "notExists", Arity: NoValue, OnList: WholeList, Compile: negate(exists)},
	{Name: "eq", Symbol: "==", Arity: OneValue, Compile: equal},
	{Name: "ne", Symbol: "!=", Arity: OneValue, OnList: EveryElement, Compile: present(negate(equal))},
	{Name: "gt", Symbol: ">", Arity: OneValue, Compile: order("gt", func(c int) bool { return c > 0 })},
	{Name: "gte", Symbol: ">=", Arity: OneValue, Compile: order("gte", func(c int) bool { return c >= 0 })},
	{Name: "lt", Symbol: "<", Arity: OneValue, Compile: order("lt", func(c int) bool { return c < 0 })},
	{Name: "lte", Symbol: "<=", Arity: OneValue, Compile: order("lte", func(c int) bool { return c <= 0 })},
	{Name: "in", Arity: ListValue, Compile: member},
	{Name: "notIn", Arity: ListValue, OnList: EveryElement, Compile: present(negate(member))},
	{Name: "matches", Symbol: "=~", Arity: OneValue, Compile: matches},
	{Name: "contains", Arity: OneValue, OnList: WholeList, Compile: contains},
	{Name: "olderThan", Arity: OneValue, CompileAt: olderThan},
	{Name: "newerThan", Arity: OneValue, CompileAt: newerThan},
}

// Table returns the operator table's rows, in order.
func Table() []Operator { return slices.Clone(operators) }

// Operators returns the names of every `when` operator, in table order.
func Operators() []string {
	names := make([]string, len(operators))
	for i, o := range operators {
		names[i] = o.Name
	}
	return names
}

// Symbols returns the operators that have a --where symbol, longest symbols
// first, so that a scan for ">=" is not read as ">".
func Symbols() []Operator {
	var out []Operator
	for _, o := range operators {
		if o.Symbol != "" {
			out = append(out, o)
		}
	}
	// A stable sort by length keeps table order among symbols of one length.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && len(out[j].Symbol) > len(out[j-1].Symbol); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// LookupOperator returns the row an operator is written as: its name (gt)
// or its symbol (>), the one alias of each name that tail's --where and the
// config's `op` both take; nil when it names none.
func LookupOperator(op string) *Operator {
	for i := range operators {
		if o := &operators[i]; op != "" && (o.Name == op || o.Symbol == op) {
			return o
		}
	}
	return nil
}

// operatorChoices says what an `op` may be, for messages: the names, then
// the symbols that alias them.
// closestOperator is ", did you mean "gt"?" for an operator's name mistyped
// by at most two letters, else "".
func closestOperator(op string) string {
	best := editdist.Closest(op, Operators())
	if best == "" {
		return ""
	}
	return fmt.Sprintf(", did you mean %q?", best)
}

func operatorChoices() string {
	var syms []string
	for _, o := range operators {
		if o.Symbol != "" {
			syms = append(syms, o.Symbol)
		}
	}
	return strings.Join(Operators(), ", ") + ", or a symbol: " + strings.Join(syms, " ")
}

// read checks and compiles the condition's value for an operator of arity a.
func (a Arity) read(cs config.ConditionSpec) (Args, error) {
	var args Args
	switch a {
	case NoValue:
		if cs.Value.IsSet() {
			return args, fieldErr("value", "%s takes no value", cs.Op)
		}
	case OneValue:
		if !cs.Value.IsSet() {
			return args, fieldErr("value", "required for %s", cs.Op)
		}
		o, err := newOperand(cs.Value.Node)
		if err != nil {
			return args, fieldErr("value", "%v", err)
		}
		args.One = o
	case ListValue:
		if !cs.Value.IsSet() {
			return args, fieldErr("value", "required for %s: a list of values", cs.Op)
		}
		n := cs.Value.Node
		if n.Kind != yaml.SequenceNode {
			return args, fieldErr("value", "%s needs a list of values", cs.Op)
		}
		for _, e := range n.Content {
			eo, err := newOperand(e)
			if err != nil {
				return args, fieldErr("value", "%v", err)
			}
			args.List = append(args.List, eo)
		}
	}
	return args, nil
}

// compileFunc is what an operator's row compiles its value with.
type compileFunc = func(Args) (func(gjson.Result) bool, error)

func exists(Args) (func(gjson.Result) bool, error) {
	return func(r gjson.Result) bool { return r.Exists() }, nil
}

func equal(a Args) (func(gjson.Result) bool, error) {
	o := a.One
	return func(r gjson.Result) bool { return r.Exists() && o.equal(r) }, nil
}

// negate is the operator that holds where c's does not.
func negate(c compileFunc) compileFunc {
	return func(a Args) (func(gjson.Result) bool, error) {
		test, err := c(a)
		if err != nil {
			return nil, err
		}
		return func(r gjson.Result) bool { return !test(r) }, nil
	}
}

// present is c's operator holding only where the path has a value: a missing
// path satisfies none but notExists.
func present(c compileFunc) compileFunc {
	return func(a Args) (func(gjson.Result) bool, error) {
		test, err := c(a)
		if err != nil {
			return nil, err
		}
		return func(r gjson.Result) bool { return r.Exists() && test(r) }, nil
	}
}

func order(name string, want func(int) bool) compileFunc {
	return func(a Args) (func(gjson.Result) bool, error) {
		o := a.One
		if o.kind != gjson.Number && o.qty == nil && !o.hasTm && !o.hasDur {
			return nil, fmt.Errorf("%s needs a number, a quantity (500m, 1Gi), a duration (90s, 1h30m, 1d) or an RFC 3339 time, got %q", name, o.source)
		}
		return func(r gjson.Result) bool {
			cmp, ok := o.compare(r)
			return ok && want(cmp)
		}, nil
	}
}

func member(a Args) (func(gjson.Result) bool, error) {
	set := a.List
	return func(r gjson.Result) bool {
		if !r.Exists() {
			return false
		}
		for i := range set {
			if set[i].equal(r) {
				return true
			}
		}
		return false
	}, nil
}

// matches is anchored: the expression must match the whole string. The
// anchored form is what is compiled, with its error handled: an expression can
// be valid alone and not once wrapped (\Q swallows the closing group).
func matches(a Args) (func(gjson.Result) bool, error) {
	o := a.One
	if o.kind != gjson.String {
		return nil, fmt.Errorf("matches needs a regular expression string, got %s", o.source)
	}
	if _, err := regexp.Compile(o.str); err != nil {
		return nil, fmt.Errorf("bad regular expression: %v", err)
	}
	re, err := regexp.Compile(`^(?:` + o.str + `)$`)
	if err != nil {
		return nil, fmt.Errorf("bad regular expression: %q cannot be matched against the whole value: %v", o.str, unwrapRE(err))
	}
	return func(r gjson.Result) bool {
		switch r.Type {
		case gjson.String:
			return re.MatchString(r.Str)
		case gjson.Number, gjson.True, gjson.False:
			return re.MatchString(r.Raw)
		}
		return false
	}, nil
}

func unwrapRE(err error) error {
	if u := errors.Unwrap(err); u != nil {
		return u
	}
	return err
}

// contains is substring for a string and membership for a list, nested lists
// (what a path with two # yields) flattened first.
func contains(a Args) (func(gjson.Result) bool, error) {
	o := a.One
	return func(r gjson.Result) bool {
		switch {
		case r.Type == gjson.String:
			return o.kind == gjson.String && strings.Contains(r.Str, o.str)
		case r.IsArray():
			return slices.ContainsFunc(flatten(r, nil), o.equal)
		}
		return false
	}, nil
}

// flatten appends the values of a list, and of the lists in it, to out.
func flatten(r gjson.Result, out []gjson.Result) []gjson.Result {
	r.ForEach(func(_, e gjson.Result) bool {
		if e.IsArray() {
			out = flatten(e, out)
		} else {
			out = append(out, e)
		}
		return true
	})
	return out
}

// overList adapts an operator's test to the list of values a path with #
// yields: an empty list (or lists of empty lists) is nothing found, and the
// operator holds on the values as its OnList says.
func overList(op *Operator, test func(gjson.Result) bool) func(gjson.Result) bool {
	return func(r gjson.Result) bool {
		if !r.IsArray() {
			return test(r)
		}
		elems := flatten(r, nil)
		switch {
		case len(elems) == 0:
			return test(gjson.Result{})
		case op.OnList == WholeList:
			return test(r)
		case op.OnList == EveryElement:
			return !slices.ContainsFunc(elems, func(e gjson.Result) bool { return !test(e) })
		}
		return slices.ContainsFunc(elems, test)
	}
}
